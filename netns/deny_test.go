package netns

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDenials(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	port := strconv.Itoa(origin.port)
	other := strconv.Itoa(origin.port%65535 + 1)
	p := startProxy(t, Config{
		Engine:   testEngine(t, "api.test:"+port),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	for _, tc := range []struct {
		name, head string
		host, port string // as the reason names them
	}{
		{"denied host", connectHead("other.test:" + port), "other.test", port},
		{"denied port", connectHead("api.test:" + other), "api.test", other},
		{"loopback dotted", connectHead("127.0.0.1:" + port), "127.0.0.1", port},
		{"loopback short", connectHead("127.1:" + port), "127.0.0.1", port},
		{"loopback decimal", connectHead("2130706433:" + port), "127.0.0.1", port},
		{"loopback hex", connectHead("0x7f000001:" + port), "127.0.0.1", port},
		{"loopback octal", connectHead("0177.0.0.1:" + port), "127.0.0.1", port},
		{"loopback trailing dot", connectHead("127.0.0.1.:" + port), "127.0.0.1", port},
		{"loopback v6", connectHead("[::1]:" + port), "[::1]", port},
		{"loopback v4-mapped", connectHead("[::ffff:127.0.0.1]:" + port), "127.0.0.1", port},
		{"unspecified", connectHead("0.0.0.0:" + port), "0.0.0.0", port},
		{"unspecified v6", connectHead("[::]:" + port), "[::]", port},
		{"metadata", connectHead("169.254.169.254:80"), "169.254.169.254", "80"},
		{"metadata decimal", connectHead("2852039166:80"), "169.254.169.254", "80"},
		{"metadata name", connectHead("metadata.google.internal:80"), "metadata.google.internal", "80"},
		{"localhost", connectHead("localhost:" + port), "localhost", port},
		{"localhost upper", connectHead("LOCALHOST.:" + port), "localhost", port},
		{"sub.localhost", connectHead("x.localhost:" + port), "x.localhost", port},
		{"name pinned to loopback", connectHead("api.test:" + port), "api.test", port},
		{"GET name pinned to loopback", "GET http://api.test:" + port + "/ HTTP/1.1\r\n\r\n", "api.test", port},
		{"GET loopback short", "GET http://127.1:" + port + "/ HTTP/1.1\r\n\r\n", "127.0.0.1", port},
		{"GET percent-encoded loopback", "GET http://127%2e0%2e0%2e1:" + port + "/ HTTP/1.1\r\n\r\n", "127.0.0.1", port},
		{"GET origin form with Host", "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n\r\n", "127.0.0.1", port},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, _ := exchange(t, p.addr, tc.head)
			checkRefusal(t, r, 403)
			reason := r.header["x-corral-reason"]
			if !strings.Contains(reason, tc.host) || !strings.Contains(reason, tc.port) {
				t.Errorf("reason %q does not name %s port %s", reason, tc.host, tc.port)
			}
			ev := p.events.last(t)
			if ev.Decision != "deny" || ev.Status != 403 || ev.Reason != reason || ev.Port == 0 || ev.Host == "" {
				t.Errorf("audit event %+v", ev)
			}
		})
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Errorf("the loopback origin saw %d connections, want 0", n)
	}
}

// A resolver is asked on every request, and every answer is checked: a
// name that was public a moment ago and is loopback now is refused.
func TestRebinding(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	authority := "api.test:" + strconv.Itoa(origin.port)
	res := &stubResolver{answer: func(call int64, host string) ([]netip.Addr, error) {
		if host != "api.test" {
			return nil, fmt.Errorf("unexpected lookup of %q", host)
		}
		if call == 1 {
			return addrs(testNet3), nil
		}
		return addrs("127.0.0.1"), nil
	}}
	p := startProxy(t, Config{Engine: testEngine(t, authority), Resolver: res, DialTimeout: 200 * time.Millisecond})

	// The public answer passes the checks; the dial then fails, 502 or 504.
	r, _, _ := exchange(t, p.addr, connectHead(authority))
	if r.status != 502 && r.status != 504 {
		t.Fatalf("first request: status %d (%s), want 502 or 504", r.status, r.header["x-corral-reason"])
	}
	if ev := p.events.last(t); ev.Decision != "error" || ev.Status != r.status {
		t.Errorf("first request: audit event %+v", ev)
	}

	r, _, _ = exchange(t, p.addr, connectHead(authority))
	checkRefusal(t, r, 403)
	if reason := r.header["x-corral-reason"]; !strings.Contains(reason, "127.0.0.1:"+strconv.Itoa(origin.port)) {
		t.Errorf("reason %q does not name the loopback address", reason)
	}
	if n := res.calls.Load(); n != 2 {
		t.Errorf("%d lookups for 2 requests, want 2", n)
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Errorf("the loopback origin saw %d connections, want 0", n)
	}
}

func TestMixedAnswerRefused(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	authority := "api.test:" + strconv.Itoa(origin.port)
	for _, answer := range [][]string{
		{testNet3, "127.0.0.1"},
		{"127.0.0.1", testNet3},
		{testNet3, "::ffff:127.0.0.1"},
		{testNet3, "169.254.169.254"},
	} {
		t.Run(strings.Join(answer, ","), func(t *testing.T) {
			res := &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return addrs(answer...), nil }}
			p := startProxy(t, Config{Engine: testEngine(t, authority), Resolver: res, DialTimeout: 200 * time.Millisecond})
			r, _, _ := exchange(t, p.addr, connectHead(authority))
			checkRefusal(t, r, 403)
			if ev := p.events.last(t); ev.Decision != "deny" || ev.Addr != "" {
				t.Errorf("audit event %+v", ev)
			}
		})
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Errorf("the loopback origin saw %d connections, want 0", n)
	}
}

func TestResolverFailure(t *testing.T) {
	res := &stubResolver{answer: func(call int64, host string) ([]netip.Addr, error) {
		if call == 1 {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return nil, nil
	}}
	p := startProxy(t, Config{Engine: testEngine(t, "api.test:443"), Resolver: res})
	for range 2 {
		r, _, _ := exchange(t, p.addr, connectHead("api.test:443"))
		checkRefusal(t, r, 502)
		if !strings.Contains(r.body, "cannot resolve api.test") {
			t.Errorf("reason %q", r.body)
		}
		if ev := p.events.last(t); ev.Decision != "error" || ev.Status != 502 {
			t.Errorf("audit event %+v", ev)
		}
	}
}

func TestNoNetworkRules(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	res := &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	p := startProxy(t, Config{Engine: testEngine(t), Resolver: res})
	for _, head := range []string{
		connectHead("api.test:443"),
		connectHead(origin.addr),
		connectHead("localhost:" + strconv.Itoa(origin.port)),
		"GET http://api.test/ HTTP/1.1\r\n\r\n",
	} {
		r, _, _ := exchange(t, p.addr, head)
		checkRefusal(t, r, 403)
		if ev := p.events.last(t); ev.Decision != "deny" || ev.Reason == "" {
			t.Errorf("%q: audit event %+v", head, ev)
		}
	}
	r, _, _ := exchange(t, p.addr, connectHead("api.test:443"))
	if want := "no skill grants network access"; !strings.Contains(r.body, want) {
		t.Errorf("reason %q does not say %q", r.body, want)
	}
	if n := res.calls.Load(); n != 0 {
		t.Errorf("%d lookups, want none", n)
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Errorf("origin saw %d connections, want 0", n)
	}
}

// The proxy never relays to its own listening address, however the
// client spells it.
func TestSelfRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().(*net.TCPAddr).AddrPort()
	port := strconv.Itoa(int(self.Port()))
	p := serveProxy(t, ln, Config{
		Engine:   testEngine(t, "preset:loopback", "self.test:"+port),
		Resolver: pin("self.test", "127.0.0.1"),
		Self:     []netip.AddrPort{self},
	})
	for _, authority := range []string{"127.0.0.1:" + port, "127.1:" + port, "[::ffff:127.0.0.1]:" + port, "self.test:" + port} {
		r, _, _ := exchange(t, p.addr, connectHead(authority))
		checkRefusal(t, r, 403)
		if !strings.Contains(r.body, "proxy itself") {
			t.Errorf("%s: reason %q", authority, r.body)
		}
	}
	// The same rules let other loopback ports through.
	origin := startServer(t, "127.0.0.1:0", echo)
	br, c := tunnel(t, p.addr, origin.addr)
	roundTripEcho(t, br, c, "not self")
}

// A proxy listening on an unspecified address counts loopback as itself.
func TestSelfRelayUnspecifiedSelf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	p := serveProxy(t, ln, Config{
		Engine: testEngine(t, "preset:loopback"),
		Self:   []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), port)},
	})
	r, _, _ := exchange(t, p.addr, connectHead("127.0.0.1:"+strconv.Itoa(int(port))))
	checkRefusal(t, r, 403)
}

// On Linux connecting to 0.0.0.0 or [::] reaches the host's own
// listeners, so "0.0.0.0:port" in any spelling is the proxy itself too.
func TestSelfRelayViaUnspecified(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().(*net.TCPAddr).AddrPort()
	port := strconv.Itoa(int(self.Port()))
	p := serveProxy(t, ln, Config{Engine: testEngine(t, "preset:loopback"), Self: []netip.AddrPort{self}})
	for _, authority := range []string{"0.0.0.0:" + port, "0:" + port, "[::ffff:0.0.0.0]:" + port, "[::]:" + port} {
		r, _, _ := exchange(t, p.addr, connectHead(authority))
		if r.status != 403 || !strings.Contains(r.body, "proxy itself") {
			t.Errorf("CONNECT %s: %d %q, want 403 naming the proxy itself", authority, r.status, r.body)
		}
	}
}

// An IP literal is dialled as it is, in any spelling the policy engine
// reads as an IP: it is never handed to the resolver.
func TestEncodedIPLiteralSkipsResolver(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	port := strconv.Itoa(origin.port)
	res := &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return nil, fmt.Errorf("no resolver here") }}
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback:"+port), Resolver: res})
	for _, host := range []string{"127%2e0%2e0%2e1", "\uff11\uff12\uff17.\uff10.\uff10.\uff11"} {
		r, _, _ := exchange(t, p.addr, connectHead(host+":"+port))
		if r.status != 200 {
			t.Errorf("CONNECT %s:%s: status %d (%s), want 200", host, port, r.status, r.header["x-corral-reason"])
		}
	}
	if n := res.calls.Load(); n != 0 {
		t.Errorf("%d lookups for IP literals, want 0", n)
	}
}
