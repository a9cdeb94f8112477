package netns

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSystemHostAddrs: every address on this machine's interfaces is the
// host's, loopback included; an address routed elsewhere (or nowhere) is
// not.
func TestSystemHostAddrs(t *testing.T) {
	h := SystemHostAddrs()
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ia := range ifaddrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		a, _ := netip.AddrFromSlice(n.IP)
		if !h.IsHost(a.Unmap()) {
			t.Errorf("%s, an address of this host, is not IsHost", a)
		}
	}
	for _, a := range []string{testNet3, "2001:db8::7", "198.51.100.9"} {
		if h.IsHost(netip.MustParseAddr(a)) {
			t.Errorf("%s is IsHost", a)
		}
	}
}

func BenchmarkSystemHostAddrs(b *testing.B) {
	h := SystemHostAddrs()
	a := netip.MustParseAddr(testNet3)
	for b.Loop() {
		h.IsHost(a)
	}
}

// ownAddrs are this machine's addresses that are neither loopback nor
// link-local.
func ownAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, ia := range ifaddrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsMulticast() {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// TestProxyRefusesHostAddrs: with "*:PORT" and every other preset, the
// proxy refuses this machine's own addresses, as IP literals and as what a
// name resolves to, and a server listening there sees nothing; by default
// it asks the kernel (SystemHostAddrs).
func TestProxyRefusesHostAddrs(t *testing.T) {
	own := ownAddrs(t)
	if len(own) == 0 {
		t.Skip("this machine has no non-loopback, non-link-local address")
	}
	for _, a := range own {
		t.Run(a.String(), func(t *testing.T) {
			srv := startServer(t, netip.AddrPortFrom(a, 0).String(), echo)
			port := strconv.Itoa(srv.port)
			p := startProxy(t, Config{
				Engine:   testEngine(t, "*:"+port, "preset:private_network:"+port, "preset:link_local:"+port, "preset:cloud_metadata:"+port),
				Resolver: pin("own.test", a.String()),
			})
			lit := a.String()
			if a.Is6() {
				lit = "[" + lit + "]"
			}
			for _, head := range []string{
				connectHead(lit + ":" + port),
				connectHead("own.test:" + port),
				"GET http://" + lit + ":" + port + "/ HTTP/1.1\r\n\r\n",
				"GET http://own.test:" + port + "/ HTTP/1.1\r\n\r\n",
			} {
				r, _, _ := exchange(t, p.addr, head)
				checkRefusal(t, r, 403)
				if reason := r.header["x-corral-reason"]; !strings.Contains(reason, "an address of this host") {
					t.Errorf("%q: reason %q", head, reason)
				}
			}
			if n := srv.accepts.Load(); n != 0 {
				t.Errorf("the server on %s saw %d connections", a, n)
			}
		})
	}
}

// countingHost is a HostAddrs that says yes and counts the questions.
type countingHost struct{ calls atomic.Int64 }

func (c *countingHost) IsHost(netip.Addr) bool { c.calls.Add(1); return true }

// TestHostAddrsAskedEachTime: the proxy asks at every request, so an
// address that became the host's during a long run counts at once;
// nothing is cached. (The address is refused, so nothing is dialled.)
func TestHostAddrsAskedEachTime(t *testing.T) {
	authority := "api.test:8080"
	h := &countingHost{}
	p := startProxy(t, Config{Engine: testEngine(t, authority), Resolver: pin("api.test", testNet3), HostAddrs: h})
	for i := 1; i <= 3; i++ {
		r, _, _ := exchange(t, p.addr, connectHead(authority))
		checkRefusal(t, r, 403)
		if n := h.calls.Load(); n != int64(i) {
			t.Fatalf("after %d requests HostAddrs was asked %d times", i, n)
		}
	}
}
