package netns

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

// query builds a DNS query for name and type.
func query(id uint16, name string, qtype uint16) []byte {
	q := []byte{byte(id >> 8), byte(id), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for l := range strings.SplitSeq(name, ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, byte(qtype>>8), byte(qtype), 0, 1)
}

func TestFakeDNSAnswers(t *testing.T) {
	d := NewFakeDNS()
	r := d.answer(query(7, "Api.Example.COM", typeA))
	if len(r) < 12 || r[0] != 0 || r[1] != 7 || r[3]&0xf != rcodeOK || binary.BigEndian.Uint16(r[6:]) != 1 {
		t.Fatalf("A answer %x", r)
	}
	ip := netip.AddrFrom4([4]byte(r[len(r)-4:]))
	if !FakePool.Contains(ip) {
		t.Fatalf("answer %v is not in %v", ip, FakePool)
	}
	if n, ok := d.Name(ip); !ok || n != "api.example.com" {
		t.Errorf("Name(%v) = %q, %v", ip, n, ok)
	}
	again := d.answer(query(8, "api.example.com", typeA))
	if netip.AddrFrom4([4]byte(again[len(again)-4:])) != ip {
		t.Error("the same name got another address")
	}
	other := d.answer(query(9, "b.example.com", typeA))
	if netip.AddrFrom4([4]byte(other[len(other)-4:])) == ip {
		t.Error("two names share an address")
	}
	// AAAA and others: no data, so clients use the A answer.
	if r := d.answer(query(10, "api.example.com", 28)); r[3]&0xf != rcodeOK || binary.BigEndian.Uint16(r[6:]) != 0 {
		t.Errorf("AAAA answer %x", r)
	}
	// Names the proxy could not check get NXDOMAIN, not an address.
	for _, bad := range []string{"a b.com", "x\x00y.com", "é.com"} {
		if r := d.answer(query(11, bad, typeA)); r[3]&0xf != rcodeNoName {
			t.Errorf("%q: rcode %d, want NXDOMAIN", bad, r[3]&0xf)
		}
	}
	// Garbage: no panic, and no answer to what is not a query.
	for _, m := range [][]byte{nil, {1, 2, 3}, make([]byte, 12), append(query(1, "a.com", 1)[:12], 0xc0, 0x0c)} {
		d.answer(m)
	}
	resp := query(1, "a.com", 1)
	resp[2] |= 0x80
	if d.answer(resp) != nil {
		t.Error("answered a response")
	}
}

func TestFakeDNSPoolCap(t *testing.T) {
	d := NewFakeDNS()
	d.next = maxFakeNames - 1
	if _, ok := d.Address("last.test"); !ok {
		t.Fatal("the last address was refused")
	}
	if r := d.answer(query(1, "one-more.test", typeA)); r[3]&0xf != rcodeFail {
		t.Errorf("past the cap: rcode %d, want SERVFAIL", r[3]&0xf)
	}
}

// clientHello is a minimal TLS 1.2 ClientHello naming host.
func clientHello(host string) []byte {
	sni := []byte{0, 0} // extension type server_name
	list := append([]byte{0}, byte(len(host)>>8), byte(len(host)))
	list = append(list, host...)
	body := append([]byte{byte(len(list) >> 8), byte(len(list))}, list...)
	sni = append(sni, byte(len(body)>>8), byte(len(body)))
	sni = append(sni, body...)
	h := []byte{3, 3}
	h = append(h, make([]byte, 32)...)
	h = append(h, 0)             // session id
	h = append(h, 0, 2, 0x13, 1) // one cipher suite
	h = append(h, 1, 0)          // compression
	h = append(h, byte(len(sni)>>8), byte(len(sni)))
	h = append(h, sni...)
	hs := append([]byte{1, 0, byte(len(h) >> 8), byte(len(h))}, h...)
	return append([]byte{0x16, 3, 1, byte(len(hs) >> 8), byte(len(hs))}, hs...)
}

func TestSniffName(t *testing.T) {
	for _, tc := range []struct {
		in, name, via string
	}{
		{string(clientHello("API.test")), "api.test", "sni"},
		{"GET / HTTP/1.1\r\nUser-Agent: x\r\nHost: api.test:8080\r\n\r\n", "api.test", "host"},
		{"GET / HTTP/1.1\r\n\r\n", "", "host"},
		{"SSH-2.0-OpenSSH\r\n", "", ""},
		{string(clientHello("bad name")), "", ""},
		{"\x16\x03\x01\xff\xff", "", ""}, // a record that never ends
	} {
		br := bufio.NewReaderSize(strings.NewReader(tc.in), maxSniff+1)
		name, via := sniffName(br)
		if name != tc.name || (tc.name != "" && via != tc.via) {
			t.Errorf("%q: %q via %q, want %q via %q", tc.in, name, via, tc.name, tc.via)
		}
	}
	// A truncated ClientHello cut anywhere: no name, no panic.
	ch := clientHello("api.test")
	for i := range ch {
		sniffName(bufio.NewReaderSize(strings.NewReader(string(ch[:i])), maxSniff+1))
	}
}

// originals is a Config.Originals that knows one connection.
type originals struct {
	mu sync.Mutex
	m  map[netip.AddrPort]netip.AddrPort
}

func (o *originals) Take(from netip.AddrPort) (netip.AddrPort, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.m[from]
	delete(o.m, from)
	return d, ok
}

// redirected connects to the proxy as the supervisor would for a command
// aiming at dest: the record first, then the connection.
func redirected(t *testing.T, tp *testProxy, o *originals, dest netip.AddrPort) (*net.TCPConn, error) {
	t.Helper()
	var d net.Dialer
	// Bind first to learn the port, as the supervisor does.
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	o.mu.Lock()
	o.m[netip.MustParseAddrPort("127.0.0.1:"+itoa(port))] = dest
	o.mu.Unlock()
	c, err := d.Dial("tcp4", tp.addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestTransparentByFakeName(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	dns := NewFakeDNS()
	ok, _ := dns.Address("api.test")
	bad, _ := dns.Address("evil.test")
	o := &originals{m: map[netip.AddrPort]netip.AddrPort{}}
	tp := startProxy(t, Config{Engine: testEngine(t, "api.test:"+itoa(origin.port), "preset:loopback:"+itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"), DNS: dns, Originals: o})
	c, err := redirected(t, tp, o, netip.AddrPortFrom(ok, uint16(origin.port)))
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	c.CloseWrite()
	got, _ := io.ReadAll(c)
	if string(got) != "hello" {
		t.Errorf("echo through the proxy: %q", got)
	}
	if ev := tp.events.last(t); ev.Decision != "allow" || ev.Host != "api.test" || ev.Via != "dns" || ev.Method != "TCP" {
		t.Errorf("event %+v", ev)
	}
	for _, dest := range []netip.AddrPort{netip.AddrPortFrom(bad, uint16(origin.port)), netip.AddrPortFrom(netip.MustParseAddr("198.18.200.1"), 80)} {
		// Reset at once: the dial or the first read sees it.
		c, err := redirected(t, tp, o, dest)
		if err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
		}
		if err == nil || !strings.Contains(err.Error(), "reset") {
			t.Errorf("%v: %v, want a reset", dest, err)
		}
		if ev := tp.events.last(t); ev.Decision != "deny" {
			t.Errorf("%v: event %+v", dest, ev)
		}
	}
	if n := origin.accepts.Load(); n != 1 {
		t.Errorf("the origin got %d connections, want 1", n)
	}
}

func TestSOCKS5(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	tp := startProxy(t, Config{Engine: testEngine(t, "api.test:"+itoa(origin.port), "preset:loopback:"+itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1")})
	socks := func(host string, port int) (*net.TCPConn, []byte) {
		c := dial(t, tp.addr)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte{5, 1, 0})
		method := make([]byte, 2)
		if _, err := io.ReadFull(c, method); err != nil || method[1] != socksNoAuth {
			t.Fatalf("method reply %x, %v", method, err)
		}
		req := []byte{5, 1, 0, 3, byte(len(host))}
		req = append(append(req, host...), byte(port>>8), byte(port))
		c.Write(req)
		reply := make([]byte, 10)
		n, _ := io.ReadFull(c, reply)
		return c, reply[:n]
	}
	c, reply := socks("api.test", origin.port)
	if len(reply) != 10 || reply[1] != socksOK {
		t.Fatalf("reply %x", reply)
	}
	c.Write([]byte("ping"))
	c.CloseWrite()
	if got, _ := io.ReadAll(c); string(got) != "ping" {
		t.Errorf("echo %q", got)
	}
	_, reply = socks("evil.test", origin.port)
	if len(reply) < 2 || reply[1] != socksNotAllowed {
		t.Errorf("denied host: reply %x, want code 2", reply)
	}
	if ev := tp.events.last(t); ev.Decision != "deny" || ev.Via != "socks5" || ev.Host != "evil.test" {
		t.Errorf("event %+v", ev)
	}
	// A BIND request and a greeting without "no authentication".
	c2 := dial(t, tp.addr)
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	c2.Write([]byte{5, 1, 2})
	b := make([]byte, 2)
	if _, err := io.ReadFull(c2, b); err != nil || b[1] != socksNoMethod {
		t.Errorf("auth-only greeting: %x %v", b, err)
	}
	c3 := dial(t, tp.addr)
	c3.SetDeadline(time.Now().Add(5 * time.Second))
	c3.Write([]byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80})
	r3 := make([]byte, 12)
	n, _ := io.ReadFull(c3, r3)
	if n != 12 || r3[3] != socksBadCommand {
		t.Errorf("BIND: reply %x", r3[:n])
	}
	if n := origin.accepts.Load(); n != 1 {
		t.Errorf("the origin got %d connections, want 1", n)
	}
}

// FuzzFakeDNS: any datagram gets an answer or none, never a panic, and
// an answer always echoes the query's id.
func FuzzFakeDNS(f *testing.F) {
	f.Add(query(1, "api.test", typeA))
	f.Add(query(2, "x", 28))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1})
	d := NewFakeDNS()
	f.Fuzz(func(t *testing.T, m []byte) {
		if r := d.answer(m); r != nil && (len(r) < 12 || r[0] != m[0] || r[1] != m[1]) {
			t.Fatalf("answer %x to %x", r, m)
		}
	})
}

// FuzzSniffName: any first bytes give a valid name or none.
func FuzzSniffName(f *testing.F) {
	f.Add(clientHello("api.test"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, _ := sniffName(bufio.NewReaderSize(strings.NewReader(string(b)), maxSniff+1))
		if name != "" && !validName(name) {
			if _, ok := policyengine.ParseIP(name); !ok {
				t.Fatalf("name %q from %x", name, b)
			}
		}
	})
}
