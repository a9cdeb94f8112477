package netns

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"corral.dev/corral/policyengine"
)

// Egress budgets (network.budget) cap, per run, how many requests the
// proxy allows and how many bytes the client sends upstream, per host, per
// host pattern and in all: a limit on what an allowed host can carry away.
//
// Requests are counted at the decision, after the allow list and the agent
// policy said yes and before anything leaves the host for the request (a
// question on the ask channel, a lookup, a dial: decide.go): a request
// over a cap is refused with 403, naming the cap, and sends nothing. A
// tunnel is one request; plain HTTP inside one is served one request a
// connection (tunnel.go), so each of its requests is counted on its own
// connection. Bytes are counted on
// their way upstream, through the connection connect returns: a request
// with a byte cap gets its upstream socket wrapped (meteredConn), so every
// write to it (a plain-HTTP request's head and body, a tunnel's bytes in
// either relay) is taken from the caps first. A write over a cap sends
// only what fits and fails with a *BudgetError, and the relay cuts the
// tunnel: the upstream side receives at most the cap, exactly, however many
// connections share it (bytes are taken from the caps under one lock, after
// they were read, before they are written). A connection without a byte
// cap keeps the plain *net.TCPConn and the relay's splice path.

// budgetScope says which cap of a skill's budget counted.
type budgetScope string

const (
	scopeEach  budgetScope = "each"  // every host on its own
	scopeHosts budgetScope = "hosts" // the targets one pattern matches, together
	scopeTotal budgetScope = "total" // the whole run
)

// BudgetHit is one cap a run reached: reported once per cap.
type BudgetHit struct {
	From    string `json:"from"`              // the skill whose budget it is
	Scope   string `json:"scope"`             // each, hosts or total
	Pattern string `json:"pattern,omitempty"` // the host pattern, for scope hosts
	Host    string `json:"host,omitempty"`    // the host, for scope each
	Kind    string `json:"kind"`              // requests or sent
	Limit   int64  `json:"limit"`             // the cap: requests, or bytes
	// Refused counts requests refused and connections cut by this cap.
	Refused int `json:"refused"`
}

// BudgetError is a request or a write a budget refused.
type BudgetError struct{ Hit BudgetHit }

func (e *BudgetError) Error() string {
	h := e.Hit
	what := fmt.Sprintf("%d requests", h.Limit)
	if h.Kind == "sent" {
		what = fmt.Sprintf("%d bytes sent", h.Limit)
	}
	switch budgetScope(h.Scope) {
	case scopeEach:
		what += " to each host, and " + h.Host + " used them"
	case scopeHosts:
		what += " to " + h.Pattern + " together, all used"
	default:
		what += " in all, all used"
	}
	return fmt.Sprintf("network.budget of skill %s allows %s", h.From, what)
}

// pool is one cap's count.
type pool struct {
	hit            BudgetHit // the cap's names; Kind and Limit are set per hit
	cap            policyengine.Cap
	requests, sent int64
	hits           [2]*BudgetHit // requests, sent: in budgets.hits once reached
}

type poolKey struct {
	budget int
	scope  budgetScope
	index  int    // the pattern's index, for scopeHosts
	host   string // for scopeEach
}

type compiledBudget struct {
	policyengine.Budget
	patterns []policyengine.HostPattern
	matchAll []bool
}

// budgets holds a run's caps and counts.
type budgets struct {
	list  []compiledBudget
	mu    sync.Mutex
	pools map[poolKey]*pool
	hits  []*BudgetHit
}

// newBudgets compiles the caps; nil when there are none.
func newBudgets(list []policyengine.Budget) *budgets {
	b := &budgets{pools: map[poolKey]*pool{}}
	for _, bu := range list {
		if bu.IsZero() {
			continue
		}
		cb := compiledBudget{Budget: bu}
		for _, h := range bu.Hosts {
			// skill.Load checked every pattern; one that still does not
			// parse would match nothing and lift its cap, so it counts
			// every request instead (matchAll).
			hp, err := policyengine.ParseHostPattern(h.Pattern)
			cb.patterns = append(cb.patterns, hp)
			cb.matchAll = append(cb.matchAll, err != nil)
		}
		b.list = append(b.list, cb)
	}
	if len(b.list) == 0 {
		return nil
	}
	return b
}

// pool returns the count for key, made on first use. b.mu is held.
func (b *budgets) pool(key poolKey, c policyengine.Cap, hit BudgetHit) *pool {
	p := b.pools[key]
	if p == nil {
		p = &pool{cap: c, hit: hit}
		b.pools[key] = p
	}
	return p
}

// applying returns the counts a request to host:port counts against.
// b.mu is held.
func (b *budgets) applying(host string, port int) []*pool {
	var out []*pool
	for i, cb := range b.list {
		matched := false
		for j, hp := range cb.patterns {
			if cb.matchAll[j] || hp.Match(host, port) {
				matched = true
				out = append(out, b.pool(poolKey{budget: i, scope: scopeHosts, index: j}, cb.Hosts[j].Cap,
					BudgetHit{From: cb.From, Scope: string(scopeHosts), Pattern: cb.Hosts[j].Pattern}))
			}
		}
		if !matched && !cb.Each.IsZero() {
			out = append(out, b.pool(poolKey{budget: i, scope: scopeEach, host: host}, cb.Each,
				BudgetHit{From: cb.From, Scope: string(scopeEach), Host: host}))
		}
		if !cb.Total.IsZero() {
			out = append(out, b.pool(poolKey{budget: i, scope: scopeTotal}, cb.Total,
				BudgetHit{From: cb.From, Scope: string(scopeTotal)}))
		}
	}
	return out
}

// admit counts one request to host:port against every cap that applies,
// or refuses it, counting nothing, when one is used up (also a byte cap
// with no byte left). The proxy admits a request before anything leaves
// the host for it (a question, a lookup, a dial): the admission's release
// gives its place back when it is refused before anything did. Its meter
// counts the request's bytes; nil when no byte cap applies.
func (b *budgets) admit(host string, port int) (*admission, error) {
	if b == nil {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pools := b.applying(host, port)
	for _, p := range pools {
		if p.cap.Requests > 0 && p.requests >= p.cap.Requests {
			return nil, b.refuse(p, "requests")
		}
		if p.cap.Sent > 0 && p.sent >= p.cap.Sent {
			return nil, b.refuse(p, "sent")
		}
	}
	a := &admission{b: b, pools: pools}
	for _, p := range pools {
		p.requests++
		if p.cap.Sent > 0 {
			if a.meter == nil {
				a.meter = &meter{b: b}
			}
			a.meter.pools = append(a.meter.pools, p)
		}
	}
	return a, nil
}

// admission is one request counted by admit.
type admission struct {
	b        *budgets
	pools    []*pool // every count the request is in
	meter    *meter  // its byte caps; nil without
	released bool
}

// release takes the request out of its counts again: for a request
// refused before anything left the host for it (the ask channel said
// no, or an IP literal failed its checks). Its place may have refused
// another request meanwhile; that refusal stands. A nil admission (no
// caps) has nothing to release.
func (a *admission) release() {
	if a == nil {
		return
	}
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	if a.released {
		return
	}
	a.released = true
	for _, p := range a.pools {
		p.requests--
	}
}

// meterOf is a's meter; nil for a nil admission.
func (a *admission) meterOf() *meter {
	if a == nil {
		return nil
	}
	return a.meter
}

// capsRequests reports whether a request cap counts requests to
// host:port, without counting one.
func (b *budgets) capsRequests(host string, port int) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.applying(host, port) {
		if p.cap.Requests > 0 {
			return true
		}
	}
	return false
}

// refuse records that p's cap of kind refused one more request or write
// and returns the error saying so. b.mu is held.
func (b *budgets) refuse(p *pool, kind string) *BudgetError {
	i, limit := 0, p.cap.Requests
	if kind == "sent" {
		i, limit = 1, p.cap.Sent
	}
	h := p.hits[i]
	if h == nil {
		h = &BudgetHit{}
		*h = p.hit
		h.Kind, h.Limit = kind, limit
		p.hits[i] = h
		b.hits = append(b.hits, h)
	}
	h.Refused++
	return &BudgetError{Hit: *h}
}

// Hits returns the caps the run reached, in the order it reached them.
func (b *budgets) Hits() []BudgetHit {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BudgetHit, len(b.hits))
	for i, h := range b.hits {
		out[i] = *h
	}
	return out
}

// meter is one connection's share of the byte caps.
type meter struct {
	b     *budgets
	pools []*pool
	// ev is the request, audited once with audit when a cap cuts it.
	ev    Event
	audit func(Event)
	cut   bool
}

// takeName takes the bytes of a name the proxy is about to look up from
// every byte cap, all or none: the query carries them to the name's DNS
// servers, whatever the answer, so a command cannot spell unlimited data
// into names whose lookups fail and send nothing else. It refuses when a
// cap has fewer left. (The bound is on the name's bytes, not on the DNS
// packets, which carry the name more than once.) A nil admission has no
// byte cap.
func (a *admission) takeName(name string) error {
	if a == nil || a.meter == nil {
		return nil
	}
	b, n := a.b, int64(len(name))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range a.meter.pools {
		if p.cap.Sent-p.sent < n {
			return b.refuse(p, "sent")
		}
	}
	for _, p := range a.meter.pools {
		p.sent += n
	}
	return nil
}

// take takes up to n bytes from every cap and returns how many fit in all
// of them, with the error of the cap that refused the rest.
func (m *meter) take(n int64) (int64, error) {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	fit, by := n, (*pool)(nil)
	for _, p := range m.pools {
		if left := max(p.cap.Sent-p.sent, 0); left < fit {
			fit, by = left, p
		}
	}
	for _, p := range m.pools {
		p.sent += fit
	}
	if by == nil {
		return fit, nil
	}
	err := m.b.refuse(by, "sent")
	if !m.cut && m.audit != nil {
		// A plain-HTTP client gets a 403 (respondBudget); a tunnel is
		// cut, and its client gets no status: 0.
		ev := m.ev
		ev.Time, ev.Decision, ev.Reason = time.Now(), "deny", err.Error()+"; the connection was cut"
		if ev.URL != "" {
			ev.Status = 403
		}
		m.audit(ev)
	}
	m.cut = true
	return fit, err
}

// meteredConn is an upstream connection whose writes are taken from a
// meter first.
type meteredConn struct {
	*net.TCPConn
	m   *meter
	buf []byte // ReadFrom's, made on first use; one writer at a time
}

// metered wraps c when m has byte caps.
func metered(c net.Conn, m *meter) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if m == nil || !ok {
		return c
	}
	return &meteredConn{TCPConn: tc, m: m}
}

// readSide is what the relay reads c through: the socket itself for a
// meteredConn (only writes are metered), so reads keep the splice path.
func readSide(c net.Conn) net.Conn {
	if m, ok := c.(*meteredConn); ok {
		return m.TCPConn
	}
	return c
}

func (c *meteredConn) Write(b []byte) (int, error) {
	fit, berr := c.m.take(int64(len(b)))
	// Bytes taken but not sent (a write error) stay counted: the cap
	// bounds what went upstream, it is not an exact tally.
	n, err := c.TCPConn.Write(b[:fit])
	if err == nil {
		err = berr
	}
	return n, err
}

// ReadFrom copies src upstream through a buffer, since a splice would
// move bytes before the meter saw them.
func (c *meteredConn) ReadFrom(src io.Reader) (int64, error) {
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	buf := c.buf
	var total int64
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			w, werr := c.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// respondBudget answers a plain-HTTP client 403 when err is a budget's
// refusal of its request's bytes.
func respondBudget(c net.Conn, err error) {
	var be *BudgetError
	if errors.As(err, &be) {
		respond(c, 403, be.Error()+"; the request was cut")
	}
}

// BudgetHits returns the network.budget caps the proxy's requests
// reached, one entry per cap.
func (p *Proxy) BudgetHits() []BudgetHit { return p.budgets.Hits() }
