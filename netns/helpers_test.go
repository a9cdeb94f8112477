package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

// The helpers below start every server a test talks to on 127.0.0.1 or
// [::1]; names resolve through Pinned or a fake Resolver, never DNS.

// testEngine compiles rules as the network.allow list of one skill.
func testEngine(t testing.TB, rules ...string) *policyengine.Engine {
	t.Helper()
	p := policyengine.Permissions{Network: policyengine.NewEntries("t", rules), Declared: []string{"t"}}
	e, err := policyengine.New(p, policyengine.Options{WorkDir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// pin resolves name to addrs and nothing else.
func pin(name string, addrs ...string) *Pinned {
	p := &Pinned{Names: map[string][]netip.Addr{}}
	for _, a := range addrs {
		p.Names[name] = append(p.Names[name], netip.MustParseAddr(a))
	}
	return p
}

// eventLog is a Config.Audit that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) record(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// last returns the latest event; the proxy audits before it answers, so
// after a response has been read its event is here.
func (l *eventLog) last(t testing.TB) Event {
	t.Helper()
	evs := l.all()
	if len(evs) == 0 {
		t.Fatal("no audit event")
	}
	return evs[len(evs)-1]
}

// testProxy is a Proxy serving on 127.0.0.1.
type testProxy struct {
	*Proxy
	addr   string
	port   int
	ln     net.Listener
	events *eventLog
	served chan error
}

// startProxy serves a proxy built from cfg on a fresh 127.0.0.1 port and
// checks, when the test ends, that Close makes Serve return ErrClosed.
// A zero DialTimeout becomes 500ms.
func startProxy(t testing.TB, cfg Config) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveProxy(t, ln, cfg)
}

func serveProxy(t testing.TB, ln net.Listener, cfg Config) *testProxy {
	t.Helper()
	tp := &testProxy{addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, ln: ln,
		events: &eventLog{}, served: make(chan error, 1)}
	if cfg.Audit == nil {
		cfg.Audit = tp.events.record
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 500 * time.Millisecond
	}
	tp.Proxy = New(cfg)
	go func() { tp.served <- tp.Serve(ln) }()
	t.Cleanup(func() {
		tp.Close()
		select {
		case err := <-tp.served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve returned %v after Close, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5s of Close")
		}
	})
	return tp
}

// server is an origin server on loopback that counts its connections.
type server struct {
	addr    string
	port    int
	accepts atomic.Int64

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startServer listens on address ("127.0.0.1:0" or "[::1]:0") and runs
// handle for every connection, closing the connection after it.
func startServer(t testing.TB, address string, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				handle(c)
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// echo copies everything back until the client half-closes.
func echo(c net.Conn) { io.Copy(c, c) }

// response is a proxy's answer.
type response struct {
	status int
	header map[string]string // lower-case names
	body   string            // Content-Length bytes, if any
}

// readResponse reads a response head and, when it has a Content-Length,
// its body.
func readResponse(br *bufio.Reader) (*response, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("status line: %w", err)
	}
	f := strings.SplitN(strings.TrimRight(line, "\r\n"), " ", 3)
	if len(f) < 2 || f[0] != "HTTP/1.1" {
		return nil, fmt.Errorf("bad status line %q", line)
	}
	r := &response{header: map[string]string{}}
	if r.status, err = strconv.Atoi(f[1]); err != nil {
		return nil, fmt.Errorf("bad status line %q", line)
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			break
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("bad header line %q", l)
		}
		r.header[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	if cl, ok := r.header["content-length"]; ok {
		n, err := strconv.Atoi(cl)
		if err != nil {
			return nil, fmt.Errorf("bad Content-Length %q", cl)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		r.body = string(b)
	}
	return r, nil
}

// dial connects to the proxy with a 10s deadline on everything.
func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// exchange sends head on a new connection and reads the answer.
func exchange(t testing.TB, addr, head string) (*response, *bufio.Reader, *net.TCPConn) {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	r, err := readResponse(br)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", head, err)
	}
	return r, br, c
}

// connectHead is a CONNECT request head for authority.
func connectHead(authority string) string {
	return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
}

// tunnel opens a CONNECT tunnel through the proxy at addr.
func tunnel(t testing.TB, addr, authority string) (*bufio.Reader, *net.TCPConn) {
	t.Helper()
	r, br, c := exchange(t, addr, connectHead(authority))
	if r.status != 200 {
		t.Fatalf("CONNECT %s: status %d (%s), want 200", authority, r.status, r.header["x-corral-reason"])
	}
	return br, c
}

// checkRefusal checks the shape of a refusal: the reason in X-Corral-Reason
// and again as a one-line body.
func checkRefusal(t testing.TB, r *response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d (%s), want %d", r.status, r.header["x-corral-reason"], status)
	}
	reason := r.header["x-corral-reason"]
	if reason == "" {
		t.Fatal("refusal without X-Corral-Reason")
	}
	if r.body != reason+"\n" {
		t.Fatalf("body %q, want the reason %q on one line", r.body, reason)
	}
	if r.header["connection"] != "close" {
		t.Errorf("Connection: %q, want close", r.header["connection"])
	}
}

// stubResolver answers from a function and counts lookups.
type stubResolver struct {
	calls  atomic.Int64
	answer func(call int64, host string) ([]netip.Addr, error)
}

func (s *stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return s.answer(s.calls.Add(1), host)
}

// addrs parses IP addresses, for stub answers.
func addrs(list ...string) []netip.Addr {
	out := make([]netip.Addr, len(list))
	for i, a := range list {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// testNet3 is an address from TEST-NET-3 (RFC 5737): public to the policy
// engine, routed nowhere, so dials to it fail within DialTimeout.
const testNet3 = "203.0.113.7"

// countFDs counts this process's open file descriptors.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(ents)
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
