// Package netns is the sandbox's one way out of its private network
// namespace: corral's egress proxy. It serves HTTP (absolute-URI requests)
// and CONNECT tunnels, decides every request with the policy engine,
// resolves names itself, checks every address a name resolves to, and dials
// exactly the address it checked, so DNS rebinding and names that point at
// loopback, the host's own interface addresses or the cloud metadata
// service get nowhere. A plain-HTTP request is relayed only when its
// framing is unambiguous, with a body the proxy re-frames itself, so no
// request the policy never saw can hide inside an allowed one; a
// connection carries one such request, also inside a tunnel (CONNECT,
// SOCKS5, transparent), so each is decided and counted against
// network.budget on its own.
//
// It speaks just enough HTTP/1.1 to route a request and does not import
// net/http or crypto/tls: their package init would cost every corral start,
// also the ones with no network.
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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
)

// Resolver turns a name into addresses. *net.Resolver is one; tests inject
// their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Event is one audited decision.
type Event struct {
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent,omitempty"`
	Permission string    `json:"permission"` // "network"
	Method     string    `json:"method"`
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	URL        string    `json:"url,omitempty"`  // a plain-HTTP request's URL, as sent upstream
	Addr       string    `json:"addr,omitempty"` // the address dialled, for an allowed request
	Decision   string    `json:"decision"`       // allow, deny or error
	Status     int       `json:"status"`         // the answer to the client
	Rule       string    `json:"rule,omitempty"`
	Layer      string    `json:"layer,omitempty"` // the agent policy layer that decided
	Reason     string    `json:"reason"`
	// Via says how the proxy learnt the host of a connection that did
	// not name it in an HTTP proxy request: "dns" (the sandbox's fake
	// DNS answer), "sni" (TLS), "host" (an HTTP Host header), "address"
	// (none: the bare address), or "socks5".
	Via string `json:"via,omitempty"`
	// Asked is the ask channel's answer, when the request was put to it.
	Asked *ask.Answer `json:"asked,omitempty"`
}

// Policy is a second decision layer, the agent's policy: a request must
// pass both it and the skills' Engine.
type Policy interface {
	// CheckRequest decides a request: url is the absolute URI of a plain
	// HTTP request, empty for a CONNECT tunnel.
	CheckRequest(method, url, host string, port int) policyengine.Decision
	// CheckAddr decides one address the host resolved to.
	CheckAddr(host string, addr netip.Addr, port int) policyengine.Decision
}

// Config configures a Proxy. Zero durations and counts take the defaults.
type Config struct {
	Engine   *policyengine.Engine
	Policy   Policy      // optional: the agent policy, checked after Engine
	Agent    string      // put in every Event
	Resolver Resolver    // default: the pure-Go resolver
	Audit    func(Event) // called for every decision, from many goroutines
	// MaxConns caps concurrent client connections (default 4096, fewer
	// when RLIMIT_NOFILE would run out first); one over the cap is
	// answered 503.
	MaxConns int
	// HeadTimeout bounds reading a request head (default 10s), DialTimeout
	// name resolution plus connecting (default 10s), IdleTimeout a tunnel
	// with no bytes in either direction (default 5m).
	HeadTimeout, DialTimeout, IdleTimeout time.Duration
	// Self are the proxy's own listening addresses: it never relays to them.
	Self []netip.AddrPort
	// HostAddrs tells which addresses are this machine's own, a category
	// only "preset:host" or the literal address grants (default:
	// SystemHostAddrs, the kernel's routing table).
	HostAddrs policyengine.HostAddrs
	// Originals, when set, are the destinations of the connections
	// corral's supervisor redirected to the proxy (transparent egress):
	// such a connection is served as a tunnel to where it was going.
	Originals Originals
	// DNS is the sandbox's fake resolver, whose addresses name hosts.
	DNS *FakeDNS
	// Ask, if set, is asked about a request refused only because no rule
	// lists its host (ask.go); nil refuses it, as ever. It must return
	// within its own bound, or when the context (ended by Close) ends.
	Ask func(context.Context, ask.Question) ask.Answer
	// Budgets are the skills' network.budget caps (budget.go), all
	// enforced; none: no caps.
	Budgets []policyengine.Budget
}

// Proxy is the egress proxy. Serve it on one or more listeners; Close ends
// every listener and connection.
type Proxy struct {
	cfg    Config
	slots  chan struct{}
	ctx    context.Context // cancelled by Close: ends lookups and dials
	cancel context.CancelFunc

	budgets *budgets // network.budget's counts; nil without caps

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	packets   []net.PacketConn // the fake DNS's sockets
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup

	grants grants // allow-run answers
}

// New returns a proxy deciding with cfg.Engine.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = SystemResolver()
	}
	if cfg.HostAddrs == nil {
		cfg.HostAddrs = SystemHostAddrs()
	}
	if cfg.Engine != nil {
		cfg.Engine = cfg.Engine.WithHostAddrs(cfg.HostAddrs)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns()
	}
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.Audit == nil {
		cfg.Audit = func(Event) {}
	}
	if record, agent := cfg.Audit, cfg.Agent; true {
		cfg.Audit = func(ev Event) {
			ev.Agent, ev.Permission = agent, "network"
			record(ev)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{cfg: cfg, budgets: newBudgets(cfg.Budgets), slots: make(chan struct{}, cfg.MaxConns), ctx: ctx, cancel: cancel,
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}
}

// fdsPerTunnel is what one tunnel holds: the two sockets and, while a
// splice waits for data, two pipes of two fds each in each direction's
// relay.
const fdsPerTunnel = 8

// defaultMaxConns is 4096, or what RLIMIT_NOFILE leaves room for, so the
// 4097th client gets a 503 rather than the proxy an EMFILE.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 1024
	}
	return int(min(4096, max(16, (int64(rl.Cur)-64)/fdsPerTunnel)))
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("proxy closed")

// Serve accepts connections on ln until Close.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	p.listeners[ln] = struct{}{}
	p.mu.Unlock()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return ErrClosed
			}
			// Out of fds and the like: wait instead of spinning.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		// The handler is counted under the same lock Close takes, so
		// Close either sees it or refuses it.
		if !p.trackHandler(c) {
			c.Close()
			return ErrClosed
		}
		select {
		case p.slots <- struct{}{}:
		default:
			go func() {
				defer p.wg.Done()
				defer p.untrack(c)
				reason := fmt.Sprintf("the proxy already holds %d connections", p.cfg.MaxConns)
				p.cfg.Audit(Event{Time: time.Now(), Decision: "error", Status: 503, Reason: reason})
				c.SetWriteDeadline(time.Now().Add(time.Second))
				respond(c, 503, reason)
			}()
			continue
		}
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			defer p.untrack(c)
			p.handle(c)
			lingerClose(c)
		}()
	}
}

// ServeDNS answers DNS queries on pc with the fake resolver (Config.DNS)
// until Close.
func (p *Proxy) ServeDNS(pc net.PacketConn) error {
	p.mu.Lock()
	if p.closed || p.cfg.DNS == nil {
		p.mu.Unlock()
		pc.Close()
		return ErrClosed
	}
	p.packets = append(p.packets, pc)
	p.mu.Unlock()
	return p.cfg.DNS.Serve(pc)
}

// Close stops every listener, ends every connection and waits for their
// handlers.
func (p *Proxy) Close() error {
	p.cancel()
	p.mu.Lock()
	p.closed = true
	for ln := range p.listeners {
		ln.Close()
	}
	for _, pc := range p.packets {
		pc.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// trackHandler tracks a client connection and counts its handler.
func (p *Proxy) trackHandler(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// handle serves one client connection: one request head, a decision, and
// then one exchange with the origin or a tunnel to the checked address.
func (p *Proxy) handle(c net.Conn) {
	if o := p.cfg.Originals; o != nil {
		if from, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			if dest, ok := o.Take(netip.AddrPortFrom(from.Addr().Unmap(), from.Port())); ok {
				p.handleTransparent(c, dest)
				return
			}
		}
	}
	c.SetReadDeadline(time.Now().Add(p.cfg.HeadTimeout))
	br := bufio.NewReaderSize(c, 4096)
	if b, err := br.Peek(1); err == nil && b[0] == socksVersion {
		p.handleSOCKS(c, br)
		return
	}
	req, err := readHead(br)
	if err != nil {
		var he *headError
		if errors.As(err, &he) {
			p.cfg.Audit(Event{Time: time.Now(), Decision: "error", Status: he.status, Reason: he.msg})
			respond(c, he.status, he.msg)
		}
		return // the client went away or was too slow
	}
	c.SetReadDeadline(time.Time{})
	ev := Event{Method: req.method, Host: canonicalHost(req.host), Port: req.port}
	if !req.connect {
		// The path the policy checks is the path that is sent: resolved,
		// with no ambiguous encodings left for the origin to read
		// differently.
		if err := req.canonicalTarget(); err != nil {
			ev.Time, ev.Decision, ev.Status, ev.Reason = time.Now(), "error", 400, err.Error()
			p.cfg.Audit(ev)
			respond(c, 400, err.Error())
			return
		}
		ev.URL = "http://" + authority(ev.Host, req.port, 80) + req.target
	}
	up, status, d, asked := p.connect(req)
	ev.Asked = asked
	ev.Time, ev.Status, ev.Rule, ev.Reason, ev.Layer = time.Now(), status, d.Rule, d.Reason, d.Layer
	if up == nil {
		ev.Decision = "deny"
		if status != 403 {
			ev.Decision = "error"
		}
		p.cfg.Audit(ev)
		respond(c, status, d.Reason)
		return
	}
	if req.connect {
		p.tunnel(c, br, up, ev, d, []byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
		return
	}
	ev.Decision, ev.Addr = "allow", up.RemoteAddr().String()
	p.cfg.Audit(ev)
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	p.exchange(c, br, up, bufio.NewReaderSize(readSide(up), 4096), req, ev, false)
}

func (p *Proxy) isSelf(a netip.Addr, port int) bool {
	for _, s := range p.cfg.Self {
		if int(s.Port()) != port {
			continue
		}
		// Connecting to 0.0.0.0 or [::] reaches the host's own listeners,
		// whatever address the proxy listens on.
		if s.Addr() == a || a.IsUnspecified() || (s.Addr().IsUnspecified() && (a.IsLoopback() || isLocalAddr(a))) {
			return true
		}
	}
	return false
}

func isLocalAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: assume it is
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
				return true
			}
		}
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func errText(err error) string {
	if err == nil {
		return "no addresses"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		err = se.Err
	}
	return err.Error()
}

var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large",
	501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}

// respond answers with status and a one-line reason, in a header and as the
// body, and ends the exchange.
func respond(w io.Writer, status int, reason string) {
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	body := reason + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Corral-Reason: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, statusText[status], reason, len(body), body)
}

// copyIdle copies src to dst until EOF, an error, or idle without a byte.
func copyIdle(dst, src net.Conn, idle time.Duration) {
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		n, err := io.CopyN(dst, readSide(src), 4<<20)
		if err != nil && !(isTimeout(err) && n > 0) {
			return
		}
	}
}

// relay copies both ways until both directions end, passing half-closes
// on, and ends both when neither moved a byte for idle.
func relay(client, up net.Conn, idle time.Duration) {
	// Each direction marks itself idle after a read deadline with no
	// bytes (or when it ends); the tunnel ends when both are idle. A
	// splice returns only at its deadline, so a busy direction shows its
	// traffic then, before it could be counted idle.
	var idleDir [2]atomic.Bool
	done := make(chan struct{})
	pipe := func(me int, dst, src net.Conn) {
		for {
			src.SetReadDeadline(time.Now().Add(idle))
			n, err := io.CopyN(dst, readSide(src), 4<<20)
			if n > 0 {
				idleDir[me].Store(false)
			}
			if err == nil {
				continue
			}
			if isTimeout(err) {
				if n == 0 {
					idleDir[me].Store(true)
				}
				if n > 0 || !idleDir[1-me].Load() {
					continue // this direction or the other moved bytes
				}
			}
			if err != io.EOF {
				client.Close()
				up.Close()
			}
			break
		}
		idleDir[me].Store(true)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	go func() {
		pipe(0, up, client)
		close(done)
	}()
	pipe(1, client, up)
	<-done
}
