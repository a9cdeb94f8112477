package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
)

// Issue 27, item 3: a request network.budget refuses is refused before
// anything leaves the host for it: no DNS query (a name the command
// chose carries data to the name's servers, answered or not) and no
// question on the ask channel. Every way a request reaches the proxy is
// tried.

// headOrigin answers every request head on a connection, keep-alive,
// whatever the head says about closing: the most lenient origin there
// is, so it counts every head that reaches it (heads) and records their
// request lines and Host headers (lines).
type headOrigin struct {
	*server
	heads atomic.Int64
	mu    sync.Mutex
	lines []string
}

func newHeadOrigin(t *testing.T) *headOrigin {
	o := &headOrigin{}
	o.server = startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				continue
			}
			host, length, chunked := "", int64(0), false
			for {
				l, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if l == "\r\n" {
					break
				}
				k, v, _ := strings.Cut(l, ":")
				switch strings.ToLower(k) {
				case "host":
					host = strings.TrimSpace(v)
				case "content-length":
					length, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				case "transfer-encoding":
					chunked = strings.Contains(strings.ToLower(v), "chunked")
				}
			}
			o.heads.Add(1)
			o.mu.Lock()
			o.lines = append(o.lines, strings.TrimSpace(line)+" host="+host)
			o.mu.Unlock()
			if chunked && skipChunks(br) != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, br, length); err != nil {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	return o
}

// skipChunks reads a chunked body up to the end of its trailers.
func skipChunks(br *bufio.Reader) error {
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(l, ";", 2)[0]), 16, 64)
		if err != nil {
			return err
		}
		if n == 0 {
			for {
				if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
					return err
				}
			}
		}
		if _, err := io.CopyN(io.Discard, br, n+2); err != nil {
			return err
		}
	}
}

func (o *headOrigin) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}

// lookupLog is a Resolver recording every name it is asked for: each one
// a DNS query that would leave the host.
type lookupLog struct {
	mu     sync.Mutex
	names  []string
	answer func(host string) ([]netip.Addr, error)
}

func (l *lookupLog) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	l.mu.Lock()
	l.names = append(l.names, host)
	l.mu.Unlock()
	return l.answer(host)
}

func (l *lookupLog) looked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...)
}

// route is one way a request reaches the proxy. open makes a connection
// on which the client's next bytes go to host:port (nil when the proxy
// refused it); absolute says its requests are written in absolute form
// (through HTTP_PROXY), not as a client inside a tunnel writes them.
type route struct {
	name     string
	open     func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader)
	absolute bool
}

// routeEnv is a proxy with the sandbox's fake DNS and the supervisor's
// records, so transparent connections can be made.
type routeEnv struct {
	tp   *testProxy
	dns  *FakeDNS
	orig *originals
}

func newRouteEnv(t *testing.T, cfg Config) *routeEnv {
	e := &routeEnv{dns: NewFakeDNS(), orig: &originals{m: map[netip.AddrPort]netip.AddrPort{}}}
	cfg.DNS, cfg.Originals = e.dns, e.orig
	e.tp = startProxy(t, cfg)
	return e
}

// head is a GET of path on host:port as r's clients write it.
func (r route) head(host string, port int, path string) string {
	authority := host + ":" + strconv.Itoa(port)
	if r.absolute {
		return "GET http://" + authority + path + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
	}
	return "GET " + path + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
}

// try makes one request to host:port and reports whether the origin
// answered it.
func (r route) try(t *testing.T, e *routeEnv, host string, port int) bool {
	c, br := r.open(t, e, host, port)
	if c == nil {
		return false
	}
	defer c.Close()
	io.WriteString(c, r.head(host, port, "/r"))
	return answered(br)
}

// answered reads an HTTP answer from br and reports whether it is the
// origin's "ok"; a refusal (a 403, a reset, a close) is not.
func answered(br *bufio.Reader) bool {
	resp, err := readResponse(br)
	return err == nil && resp.status == 200 && resp.body == "ok"
}

// redirectedTo is a transparent connection the supervisor redirected
// from dest, with a deadline.
func redirectedTo(t *testing.T, e *routeEnv, dest netip.AddrPort) (net.Conn, *bufio.Reader) {
	c, err := redirected(t, e.tp, e.orig, dest)
	if err != nil {
		return nil, nil
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

var (
	proxyRoute = route{"HTTP_PROXY absolute-form", func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader) {
		c := dial(t, e.tp.addr)
		return c, bufio.NewReader(c)
	}, true}
	connectRoute = route{"CONNECT", func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader) {
		c := dial(t, e.tp.addr)
		io.WriteString(c, connectHead(host+":"+strconv.Itoa(port)))
		br := bufio.NewReader(c)
		if r, err := readResponse(br); err != nil || r.status != 200 {
			return nil, nil
		}
		return c, br
	}, false}
	socksRoute = route{"SOCKS5", func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader) {
		c := dial(t, e.tp.addr)
		c.Write([]byte{5, 1, 0})
		req := append([]byte{5, 1, 0, 3, byte(len(host))}, host...)
		c.Write(append(req, byte(port>>8), byte(port)))
		reply := make([]byte, 12)
		if _, err := io.ReadFull(c, reply); err != nil || reply[3] != socksOK {
			return nil, nil
		}
		return c, bufio.NewReader(c)
	}, false}
	fakeDNSRoute = route{"transparent by fake DNS name", func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader) {
		fake, _ := e.dns.Address(host)
		return redirectedTo(t, e, netip.AddrPortFrom(fake, uint16(port)))
	}, false}
	// The client writes its head at once: the proxy learns the host from
	// its Host header.
	hostRoute = route{"transparent by Host header", func(t *testing.T, e *routeEnv, host string, port int) (net.Conn, *bufio.Reader) {
		return redirectedTo(t, e, netip.MustParseAddrPort("192.0.2.1:"+strconv.Itoa(port)))
	}, false}

	routes = []route{proxyRoute, connectRoute, socksRoute, fakeDNSRoute, hostRoute}
	// tunnelRoutes are the routes that relay a client's bytes as they
	// come, once the connection is allowed.
	tunnelRoutes = []route{connectRoute, socksRoute, fakeDNSRoute, hostRoute}
)

// TestBudgetBeforeLookup: once a request cap is used up, no request
// under it makes a DNS query, by any route. Lookups that fail, and
// names refused for the address they resolve to, count as requests: the
// query left the host either way, so a command cannot spell data into
// unlimited names whose lookup goes nowhere.
func TestBudgetBeforeLookup(t *testing.T) {
	origin := newHeadOrigin(t)
	port := origin.port
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			res := &lookupLog{answer: func(host string) ([]netip.Addr, error) {
				switch {
				case strings.HasPrefix(host, "nx"):
					return nil, errors.New("no such host")
				case strings.HasPrefix(host, "meta"):
					return addrs("169.254.169.254"), nil
				}
				return addrs("127.0.0.1"), nil
			}}
			e := newRouteEnv(t, Config{
				Engine:   testEngine(t, "*.test:"+strconv.Itoa(port), "preset:loopback:"+strconv.Itoa(port)),
				Resolver: res,
				Budgets:  []policyengine.Budget{{From: "s", Total: policyengine.Cap{Requests: 3}}},
			})
			before := origin.heads.Load()
			if !r.try(t, e, "a.test", port) {
				t.Fatal("the first request was not answered")
			}
			for _, h := range []string{"nx-c2vjcmv0.test", "meta-zgf0yq.test"} {
				if r.try(t, e, h, port) {
					t.Fatalf("%s was answered", h)
				}
			}
			// The cap (3) is used: by a.test, by the lookup that failed
			// and by the name refused for its address.
			for i := range 4 {
				if r.try(t, e, "x"+strconv.Itoa(i)+"-bw9yzq.test", port) {
					t.Fatalf("request %d over the cap was answered", i)
				}
			}
			if got := res.looked(); strings.Join(got, " ") != "a.test nx-c2vjcmv0.test meta-zgf0yq.test" {
				t.Errorf("the proxy looked up %q; want only the 3 names the cap admitted", got)
			}
			if n := origin.heads.Load() - before; n != 1 {
				t.Errorf("the origin got %d requests, want 1", n)
			}
			var refused int
			for _, ev := range e.tp.events.all() {
				if ev.Rule == "network.budget" {
					refused++
				}
			}
			if refused != 4 {
				t.Errorf("%d refusals by network.budget in the audit, want 4", refused)
			}
		})
	}
}

// TestBudgetBeforeLookupSent: a byte cap with no byte left refuses the
// next request before its lookup too.
func TestBudgetBeforeLookupSent(t *testing.T) {
	origin := newHeadOrigin(t)
	port := origin.port
	res := &lookupLog{answer: func(string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	e := newRouteEnv(t, Config{
		Engine:   testEngine(t, "*.test:"+strconv.Itoa(port), "preset:loopback:"+strconv.Itoa(port)),
		Resolver: res,
		Budgets:  []policyengine.Budget{{From: "s", Total: policyengine.Cap{Sent: 10}}},
	})
	// The first request's head is cut at 10 bytes.
	proxyRoute.try(t, e, "a.test", port)
	for _, r := range routes {
		if r.try(t, e, "data-"+strings.ReplaceAll(r.name, " ", "-")+".test", port) {
			t.Errorf("%s: answered with no byte left", r.name)
		}
	}
	if got := res.looked(); len(got) != 1 {
		t.Errorf("the proxy looked up %q; want only a.test", got)
	}
}

// TestBudgetSentCountsNames: a name the proxy looks up takes its bytes
// from the byte caps first, so under a byte cap alone names whose
// lookups fail (and send nothing else) cannot go on without end.
func TestBudgetSentCountsNames(t *testing.T) {
	res := &lookupLog{answer: func(string) ([]netip.Addr, error) { return nil, errors.New("no such host") }}
	e := newRouteEnv(t, Config{
		Engine:   testEngine(t, "*.test:443"),
		Resolver: res,
		Budgets:  []policyengine.Budget{{From: "s", Total: policyengine.Cap{Sent: 100}}},
	})
	refused := 0
	for i := range 20 {
		// 19 bytes a name: 5 lookups fit in 100 bytes.
		r, _, _ := exchange(t, e.tp.addr, connectHead(fmt.Sprintf("n%02d-c2vjcmv0abc.test:443", i)))
		if r.status == 403 {
			refused++
			if why := r.header["x-corral-reason"]; !strings.Contains(why, "100 bytes sent") {
				t.Fatalf("reason %q", why)
			}
		}
	}
	if got := res.looked(); len(got) != 5 || refused != 15 {
		t.Errorf("%d lookups, %d refusals; want 5 lookups (100 bytes of names) and 15 refusals", len(got), refused)
	}
}

// TestBudgetBeforeQuestion: a request the budget refuses is not put to
// the ask channel; a question answered deny gives its place in the count
// back (nothing left the host for it).
func TestBudgetBeforeQuestion(t *testing.T) {
	origin := newHeadOrigin(t)
	port := origin.port
	var questions atomic.Int64
	reply := ask.AllowOnce
	res := &lookupLog{answer: func(string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			questions.Store(0)
			e := newRouteEnv(t, Config{
				Engine:   testEngine(t, "a.test:"+strconv.Itoa(port), "preset:loopback:"+strconv.Itoa(port)),
				Resolver: res,
				Budgets:  []policyengine.Budget{{From: "s", Total: policyengine.Cap{Requests: 1}}},
				Ask: func(context.Context, ask.Question) ask.Answer {
					questions.Add(1)
					return ask.Answer{Reply: reply, By: "test"}
				},
			})
			reply = ask.Deny
			if r.try(t, e, "unlisted-one.test", port) {
				t.Fatal("a request answered deny was answered")
			}
			if questions.Load() != 1 {
				t.Fatalf("%d questions, want 1", questions.Load())
			}
			// The denied question counted nothing: the cap's one
			// request is still there.
			if !r.try(t, e, "a.test", port) {
				t.Fatal("the one request the cap allows was refused")
			}
			reply = ask.AllowOnce
			if r.try(t, e, "unlisted-c2VjcmV0.test", port) {
				t.Fatal("a request over the cap was answered")
			}
			if n := questions.Load(); n != 1 {
				t.Errorf("%d questions, want 1: a request over the cap was asked about", n)
			}
			ev := e.tp.events.last(t)
			if ev.Rule != "network.budget" || ev.Asked != nil {
				t.Errorf("the last event %+v, want a refusal by network.budget without a question", ev)
			}
		})
	}
}
