//go:build linux

package netns

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostAddrsPrivateNetns makes a network namespace of its own (so the
// host's network is left alone) with a veth pair (or lo), an IPv4 and an IPv6 address
// and a locally routed range, and checks that SystemHostAddrs sees what
// the kernel would deliver locally, also after addresses change.
func TestHostAddrsPrivateNetns(t *testing.T) {
	skip := func(reason string) {
		if os.Getenv("CORRAL_REQUIRE_KERNEL") == "1" {
			t.Fatal("required (CORRAL_REQUIRE_KERNEL=1): " + reason)
		}
		t.Skip(reason)
	}
	if os.Geteuid() != 0 {
		skip("making a network namespace needs root")
	}
	ipCmd, err := exec.LookPath("ip")
	if err != nil {
		skip("no ip command (iproute2)")
	}
	errs := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with the goroutine, and
		// its network namespace with it.
		runtime.LockOSThread()
		errs <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			}
			ip := func(args string) error {
				out, err := exec.Command(ipCmd, strings.Fields(args)...).CombinedOutput()
				if err != nil {
					return fmt.Errorf("ip %s: %v: %s", args, err, out)
				}
				return nil
			}
			if err := ip("link set lo up"); err != nil {
				return err
			}
			// A veth pair where the kernel has them (containers often lack
			// the module), else lo itself: an interface either way.
			dev := "v0"
			if ip("link add v0 type veth peer name v1") != nil {
				dev = "lo"
			}
			for _, c := range []string{"link set " + dev + " up", "addr add 10.77.0.1/24 dev " + dev,
				"-6 addr add fd77::1/64 dev " + dev + " nodad", "route add local 10.88.0.0/16 dev lo"} {
				if err := ip(c); err != nil {
					return err
				}
			}
			h := SystemHostAddrs()
			// An IPv6 address's local route is installed by the kernel's
			// address work queue after "ip addr add" returns (even with
			// nodad), so an address that should count is given a moment to
			// appear; one that should not is checked once, after those.
			want := func(a string, host bool) error {
				deadline := time.Now().Add(3 * time.Second)
				for {
					got := h.IsHost(netip.MustParseAddr(a))
					if got == host {
						return nil
					}
					if !host || time.Now().After(deadline) {
						return fmt.Errorf("IsHost(%s) = %v, want %v", a, got, host)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			for _, c := range []struct {
				a    string
				host bool
			}{{"10.77.0.1", true}, {"fd77::1", true}, {"10.88.3.4", true}, {"127.0.0.1", true},
				{"10.77.0.2", false}, {"fd77::2", false}, {"10.99.0.1", false}} {
				if err := want(c.a, c.host); err != nil {
					return err
				}
			}
			// Addresses that come and go during a run count at once (another
			// subnet: deleting a primary address deletes its secondaries).
			if err := ip("addr add 10.66.0.9/24 dev " + dev); err != nil {
				return err
			}
			if err := ip("addr del 10.77.0.1/24 dev " + dev); err != nil {
				return err
			}
			if err := want("10.66.0.9", true); err != nil {
				return err
			}
			return want("10.77.0.1", false)
		}()
	}()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
