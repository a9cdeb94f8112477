package netns

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

// sinkOrigin counts every byte its connections receive.
func sinkOrigin(t *testing.T) (*server, *atomic.Int64) {
	var got atomic.Int64
	s := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			got.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	return s, &got
}

// budgetProxy serves a proxy allowing every name under .test on port, all
// resolving to 127.0.0.1, with b as skill s's budget.
func budgetProxy(t *testing.T, port int, b policyengine.Budget) *testProxy {
	t.Helper()
	b.From = "s"
	res := &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	return startProxy(t, Config{
		Engine:   testEngine(t, "*.test:"+strconv.Itoa(port), "preset:loopback:"+strconv.Itoa(port)),
		Resolver: res,
		Budgets:  []policyengine.Budget{b},
	})
}

// connectStatus opens a tunnel and returns the proxy's status and reason.
func connectStatus(t *testing.T, p *testProxy, authority string) (int, string) {
	t.Helper()
	r, _, _ := exchange(t, p.addr, connectHead(authority))
	return r.status, r.header["x-corral-reason"]
}

func TestBudgetRequests(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	port := strconv.Itoa(origin.port)
	p := budgetProxy(t, origin.port, policyengine.Budget{Each: policyengine.Cap{Requests: 2}, Total: policyengine.Cap{Requests: 3}})
	for i := 1; i <= 2; i++ {
		if st, why := connectStatus(t, p, "a.test:"+port); st != 200 {
			t.Fatalf("request %d to a.test: %d %s, want 200 (2 allowed)", i, st, why)
		}
	}
	st, why := connectStatus(t, p, "a.test:"+port)
	if st != 403 || !strings.Contains(why, "network.budget of skill s allows 2 requests to each host") || !strings.Contains(why, "a.test") {
		t.Fatalf("3rd request to a.test: %d %q, want 403 naming the budget", st, why)
	}
	if ev := p.events.last(t); ev.Decision != "deny" || ev.Rule != "network.budget" || ev.Status != 403 {
		t.Errorf("audit event %+v, want a deny by network.budget", ev)
	}
	// Another host has its own count, but the total is shared.
	if st, why := connectStatus(t, p, "b.test:"+port); st != 200 {
		t.Fatalf("1st request to b.test: %d %s, want 200", st, why)
	}
	st, why = connectStatus(t, p, "b.test:"+port)
	if st != 403 || !strings.Contains(why, "3 requests in all") {
		t.Fatalf("2nd request to b.test: %d %q, want 403 naming the total", st, why)
	}
	// Refused requests count nothing: only 3 reached the origin.
	// (The origin counts after its Accept returns, which may trail the
	// proxy's 200.)
	eventually(2*time.Second, func() bool { return origin.accepts.Load() == 3 })
	if n := origin.accepts.Load(); n != 3 {
		t.Errorf("the origin saw %d connections, want 3", n)
	}
	hits := p.BudgetHits()
	want := []BudgetHit{
		{From: "s", Scope: "each", Host: "a.test", Kind: "requests", Limit: 2, Refused: 1},
		{From: "s", Scope: "total", Kind: "requests", Limit: 3, Refused: 1},
	}
	if len(hits) != len(want) || hits[0] != want[0] || hits[1] != want[1] {
		t.Errorf("hits %+v, want %+v", hits, want)
	}
}

// A hosts entry is one count for every target its pattern matches, and
// replaces each for them.
func TestBudgetHostPatternShared(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	port := strconv.Itoa(origin.port)
	p := budgetProxy(t, origin.port, policyengine.Budget{
		Each:  policyengine.Cap{Requests: 1},
		Hosts: []policyengine.HostCap{{Pattern: "*.api.test:*", Cap: policyengine.Cap{Requests: 3}}},
	})
	for _, h := range []string{"x.api.test", "y.api.test", "x.api.test"} {
		if st, why := connectStatus(t, p, h+":"+port); st != 200 {
			t.Fatalf("%s: %d %s, want 200", h, st, why)
		}
	}
	if st, why := connectStatus(t, p, "z.api.test:"+port); st != 403 || !strings.Contains(why, "*.api.test:* together") {
		t.Fatalf("4th request under *.api.test: %d %q, want 403 naming the pattern", st, why)
	}
	if st, _ := connectStatus(t, p, "other.test:"+port); st != 200 {
		t.Fatalf("other.test: %d, want 200 (its own each count)", st)
	}
	if st, _ := connectStatus(t, p, "other.test:"+port); st != 403 {
		t.Fatalf("other.test again: %d, want 403 (each allows 1)", st)
	}
}

// A byte cap cuts a tunnel: the origin receives exactly the cap (less the
// name the proxy looked up for it, which took its bytes first), though
// the client sends more, and the next request is refused at the decision.
func TestBudgetSentCutsTunnel(t *testing.T) {
	origin, got := sinkOrigin(t)
	const limit = 100_000
	port := strconv.Itoa(origin.port)
	p := budgetProxy(t, origin.port, policyengine.Budget{Each: policyengine.Cap{Sent: limit}})
	c := dial(t, p.addr)
	// Early data behind the head counts too.
	if _, err := io.WriteString(c, connectHead("a.test:"+port)+strings.Repeat("e", 1000)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if r, err := readResponse(br); err != nil || r.status != 200 {
		t.Fatalf("CONNECT: %+v %v", r, err)
	}
	payload := make([]byte, 1<<20)
	var sent int64
	for sent < int64(len(payload)) {
		n, err := c.Write(payload[sent:min(sent+16<<10, int64(len(payload)))])
		sent += int64(n)
		if err != nil {
			break // cut
		}
	}
	// The tunnel ends: the client reads EOF or a reset.
	if _, err := io.ReadAll(br); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the cut tunnel: %v", err)
	}
	// The name the proxy looked up took its bytes first.
	const want = int64(limit - len("a.test"))
	if !eventually(5*time.Second, func() bool { return got.Load() == want }) {
		t.Fatalf("the origin received %d bytes, want exactly the cap %d less the name's %d", got.Load(), limit, len("a.test"))
	}
	time.Sleep(100 * time.Millisecond)
	if n := got.Load(); n != want {
		t.Fatalf("the origin received %d bytes, want exactly the cap %d less the name's %d", n, limit, len("a.test"))
	}
	var cut *Event
	for _, ev := range p.events.all() {
		if ev.Rule == "network.budget" {
			cut = &ev
		}
	}
	if cut == nil || cut.Decision != "deny" || cut.Status != 0 || cut.Host != "a.test" || !strings.Contains(cut.Reason, "100000 bytes sent to each host") || !strings.Contains(cut.Reason, "cut") {
		t.Fatalf("cut event %+v", cut)
	}
	st, why := connectStatus(t, p, "a.test:"+port)
	if st != 403 || !strings.Contains(why, "bytes sent") {
		t.Fatalf("next tunnel to a.test: %d %q, want 403: the byte budget is spent", st, why)
	}
	if hits := p.BudgetHits(); len(hits) != 1 || hits[0].Kind != "sent" || hits[0].Refused != 2 {
		t.Errorf("hits %+v, want one sent cap hit twice (the cut, the refusal)", hits)
	}
}

// Tunnels sharing a cap never send more than it together, however their
// writes interleave.
func TestBudgetSentSharedByConcurrentTunnels(t *testing.T) {
	origin, got := sinkOrigin(t)
	const limit = 300_000
	port := strconv.Itoa(origin.port)
	p := budgetProxy(t, origin.port, policyengine.Budget{Total: policyengine.Cap{Sent: limit}})
	var conns []*net.TCPConn
	for i := range 4 { // all open before any sends
		_, c := tunnel(t, p.addr, "h"+strconv.Itoa(i)+".test:"+port)
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8<<10)
			for range 64 { // 512 KiB each
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
			c.CloseWrite()
		}()
	}
	wg.Wait()
	// The four names the proxy looked up took their bytes first.
	const want = int64(limit - 4*len("h0.test"))
	if !eventually(5*time.Second, func() bool { return got.Load() == want }) {
		t.Fatalf("the origin received %d bytes in all, want exactly the cap %d less the names' bytes", got.Load(), limit)
	}
	time.Sleep(100 * time.Millisecond)
	if n := got.Load(); n != want {
		t.Fatalf("the origin received %d bytes, want exactly the cap %d less the names' bytes", n, limit)
	}
}

// A plain-HTTP request's head and body count: a body past the cap gets
// a 403 naming the budget and the origin at most the cap.
func TestBudgetSentPlainHTTP(t *testing.T) {
	var got atomic.Int64
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		var head int64
		cl := 0
		for {
			l, err := br.ReadString('\n')
			head += int64(len(l))
			if err != nil {
				got.Add(head)
				return
			}
			if v, ok := strings.CutPrefix(l, "Content-Length: "); ok {
				cl, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if l == "\r\n" {
				break
			}
		}
		n, _ := io.CopyN(io.Discard, br, int64(cl))
		got.Add(head + n)
		if n == int64(cl) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	const limit = 1000
	port := strconv.Itoa(origin.port)
	p := budgetProxy(t, origin.port, policyengine.Budget{Each: policyengine.Cap{Sent: limit}})
	post := func(body int) *response {
		r, _, _ := exchange(t, p.addr, "POST http://a.test:"+port+"/up HTTP/1.1\r\nHost: a.test:"+port+"\r\nContent-Length: "+
			strconv.Itoa(body)+"\r\n\r\n"+strings.Repeat("b", body))
		return r
	}
	if r := post(100); r.status != 200 {
		t.Fatalf("a small POST: %d %s, want 200", r.status, r.header["x-corral-reason"])
	}
	before := got.Load()
	if before <= 100 || before >= limit {
		t.Fatalf("the origin got %d bytes for a 100-byte body, want head and body counted", before)
	}
	r := post(5000)
	checkRefusal(t, r, 403)
	if why := r.header["x-corral-reason"]; !strings.Contains(why, "network.budget of skill s allows 1000 bytes sent to each host") {
		t.Fatalf("reason %q", why)
	}
	time.Sleep(100 * time.Millisecond)
	if n := got.Load(); n > limit {
		t.Fatalf("the origin received %d bytes, over the cap %d", n, limit)
	}
	if ev := p.events.last(t); ev.Rule != "network.budget" || ev.Status != 403 || ev.URL == "" {
		t.Errorf("audit event %+v, want the cut request with its URL", ev)
	}
}

// Without a byte cap the upstream socket stays a *net.TCPConn, so the
// relay keeps splicing: budgets cost the fast path nothing.
func TestBudgetFastPathUnwrapped(t *testing.T) {
	b := newBudgets([]policyengine.Budget{{From: "s", Each: policyengine.Cap{Requests: 5}}})
	a, err := b.admit("a.test", 443)
	if err != nil || a.meterOf() != nil {
		t.Fatalf("admit with a request cap only: meter %v, %v; want none", a.meterOf(), err)
	}
	if newBudgets(nil) != nil || newBudgets([]policyengine.Budget{{From: "s"}}) != nil {
		t.Fatal("no caps should compile to no budgets")
	}
	var nb *budgets
	if a, err := nb.admit("a.test", 443); a != nil || err != nil {
		t.Fatal("nil budgets admit everything")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if metered(c, nil) != c {
		t.Fatal("metered wrapped a connection without a byte cap")
	}
	mc := metered(c, &meter{b: newBudgets([]policyengine.Budget{{From: "s", Total: policyengine.Cap{Sent: 10}}})})
	if _, ok := mc.(*meteredConn); !ok || readSide(mc) != c {
		t.Fatal("a byte-capped connection should be metered, and read through the socket itself")
	}
}

// Every skill's budget holds: a larger one from another skill lifts
// nothing.
func TestBudgetEverySkillEnforced(t *testing.T) {
	b := newBudgets([]policyengine.Budget{
		{From: "big", Each: policyengine.Cap{Requests: 100}},
		{From: "small", Each: policyengine.Cap{Requests: 1}},
	})
	if _, err := b.admit("a.test", 443); err != nil {
		t.Fatal(err)
	}
	_, err := b.admit("a.test", 443)
	if err == nil || !strings.Contains(err.Error(), "skill small allows 1 requests") {
		t.Fatalf("2nd request: %v, want skill small's cap", err)
	}
}
