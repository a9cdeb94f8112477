//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPrivCredentials reads the command's credentials from
// /proc/self/status: every capability set empty, no_new_privs, a seccomp
// filter, and uid 0 mapped to the caller only. A grandchild (the probe run
// by a script) is checked, so the state is inherited.
func TestPrivCredentials(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a readable /proc/self/status (the landlock tier grants no /proc/self; tier_test.go checks its capabilities)")
	users(t, func(t *testing.T, u user) {
		attack(t, "privilege", "hold capabilities or regain privileges")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `
./probe status
echo "uid_map: $(cat /proc/self/uid_map)"
`)
		for _, want := range []string{
			`(?m)^CapInh:\s+0000000000000000$`, `(?m)^CapPrm:\s+0000000000000000$`,
			`(?m)^CapEff:\s+0000000000000000$`, `(?m)^CapBnd:\s+0000000000000000$`,
			`(?m)^CapAmb:\s+0000000000000000$`, `(?m)^NoNewPrivs:\s+1$`, `(?m)^Seccomp:\s+2$`,
		} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("/proc/self/status does not match %s:\n%s", want, r)
			}
		}
		hostUID := os.Getuid() // root, or the user the suite runs as
		if u.unpriv {
			hostUID = nobody
		}
		if m := regexp.MustCompile(`uid_map:\s+(\d+)\s+(\d+)\s+(\d+)`).FindStringSubmatch(r.stdout); m == nil ||
			m[1] != "0" || m[2] != fmt.Sprint(hostUID) || m[3] != "1" {
			t.Errorf("uid_map: want only 0 -> %d (one id):\n%s", hostUID, r)
		}
	})
}

// syscallAttacks are probe invocations that must fail with the errno.
var syscallAttacks = []struct {
	name  string
	args  []string
	errno string
}{
	{"unshare user namespace", []string{"unshare", "user"}, "EPERM"},
	{"unshare mount namespace", []string{"unshare", "mount"}, "EPERM"},
	{"unshare net namespace", []string{"unshare", "net"}, "EPERM"},
	{"unshare pid namespace", []string{"unshare", "pid"}, "EPERM"},
	{"unshare cgroup namespace", []string{"unshare", "cgroup"}, "EPERM"},
	{"unshare time namespace", []string{"unshare", "time"}, "EPERM"},
	{"clone user namespace", []string{"clone", "user"}, "EPERM"},
	{"clone net namespace", []string{"clone", "net"}, "EPERM"},
	{"clone3 (flags unreadable by seccomp)", []string{"clone3"}, "ENOSYS"},
	{"setns", []string{"setns"}, "EPERM"},
	{"mount tmpfs", []string{"mount", "mnt"}, "EPERM"}, // on the work dir's mnt/
	{"fsopen", []string{"fsopen"}, "EPERM"},
	{"open_tree_attr by number (unknown to older libseccomp)", []string{"open-tree-attr"}, "EPERM"},
	{"ptrace PID 1", []string{"ptrace", "1"}, "EPERM"},
	{"ptrace parent", []string{"ptrace", "parent"}, "EPERM"},
	{"process_vm_readv PID 1", []string{"process-vm-readv", "1"}, "EPERM"},
	{"bpf", []string{"bpf"}, "EPERM"},
	{"io_uring_setup", []string{"io_uring"}, "EPERM"},
	{"keyctl", []string{"keyctl"}, "EPERM"},
	{"add_key", []string{"add_key"}, "EPERM"},
	{"perf_event_open", []string{"perf"}, "EPERM"},
	{"userfaultfd", []string{"userfaultfd"}, "EPERM"},
	{"socket AF_PACKET raw", []string{"socket", "17", "3", "0"}, "EPERM"},
	{"socket AF_PACKET dgram", []string{"socket", "17", "2", "0"}, "EPERM"},
	{"socket AF_PACKET high garbage bits", []string{"socket", "0xdead000000000011", "2", "0"}, "EPERM"},
	{"socket AF_VSOCK", []string{"socket", "40", "1", "0"}, "EPERM"},
	{"socket AF_KEY", []string{"socket", "15", "3", "2"}, "EPERM"},
	{"socket MPTCP v4", []string{"socket", "2", "1", "262"}, "EPERM"},
	{"socket MPTCP v6", []string{"socket", "10", "1", "262"}, "EPERM"},
	{"socket MPTCP high garbage bits", []string{"socket", "2", "1", "0x100000106"}, "EPERM"},
	{"socket raw inet", []string{"socket", "2", "3", "1"}, "EPERM"},
	{"socket raw inet with SOCK_CLOEXEC", []string{"socket", "2", "0x80003", "1"}, "EPERM"},
	{"ioctl TIOCSTI", []string{"ioctl", "0", "0x5412"}, "EPERM"},
	{"ioctl TIOCSTI high garbage bits", []string{"ioctl", "0", "0x100005412"}, "EPERM"},
	{"ioctl TIOCSTI all high bits", []string{"ioctl", "0", "0xffffffff00005412"}, "EPERM"},
	{"ioctl TIOCLINUX", []string{"ioctl", "0", "0x541c"}, "EPERM"},
	{"ioctl TIOCLINUX high garbage bits", []string{"ioctl", "0", "0x10000541c"}, "EPERM"},
}

// TestPrivSyscalls makes each dangerous syscall from inside the default
// sandbox and wants the specific refusal (EPERM from seccomp, ENOSYS for
// clone3), not a failure the kernel would give anyway.
func TestPrivSyscalls(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		f := newFS(t, u)
		if err := os.Mkdir(filepath.Join(f.work, "mnt"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range syscallAttacks {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if c.name == "ptrace PID 1" {
					// tier_test.go ptraces a host process instead.
					namespacesOnly(t, "a PID 1 of the sandbox's own")
				}
				attack(t, "privilege", c.name)
				r := u.exec(t, f.work, nil, append([]string{f.probe}, c.args...)...)
				lines := probeLines(r.stdout)
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "ERR "+c.errno+" ") {
					t.Errorf("want the probe to fail with %s:\n%s", c.errno, r)
				}
			})
		}
	})
}

// TestPrivNestedUserNamespace uses util-linux unshare to make a nested
// user namespace with root mapped, the classic way back to capabilities.
func TestPrivNestedUserNamespace(t *testing.T) {
	t.Parallel()
	if !exists("/usr/bin/unshare") {
		t.Skip("/usr/bin/unshare is not installed")
	}
	users(t, func(t *testing.T, u user) {
		attack(t, "privilege", "nested user namespace with unshare(1)")
		f := newFS(t, u)
		marker := token("NESTED")
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
unshare --user --map-root-user echo %[1]s
unshare --user --mount --net echo %[1]s
`, marker))
		if strings.Count(r.stdout, marker) > 0 {
			t.Errorf("unshare made a nested namespace:\n%s", r)
		}
	})
}
