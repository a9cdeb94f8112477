package netns

import (
	"net"
	"net/netip"
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
