package netns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
)

// A tunnel (CONNECT, SOCKS5, a transparent connection) is decided, and
// counted against network.budget, as one request before the client sent
// a byte through it: protocols where the server speaks first need the
// origin connected before the client says anything. Once through, the
// client's first bytes say what it carries (tunnelproto.go):
//
//   - Plain HTTP/1 is served as through HTTP_PROXY (exchange): the
//     tunnel's one request, its URL checked against the URL rules, sent
//     to the tunnel's host with the proxy's own Host header and framing;
//     then the connection ends, and the client's next request comes on
//     a new connection, decided and counted again. Counting request
//     heads as they pass would have to find where each message ends
//     exactly as the origin does, and a head one side takes for a body
//     is a request the counter never saw; one request a connection
//     leaves the origin nothing to split.
//   - HTTP/2 without TLS carries many requests no cap could count: it
//     is refused where a request cap applies, relayed elsewhere.
//   - Anything else is relayed as it comes (TLS, SSH, database
//     protocols), also when the origin spoke first: an HTTP server never
//     does, so what follows is not an exchange the client starts.
//
// There is no time window: the first bytes decide whenever they come.

// tunnel audits an allowed connection to up, answers the client with
// greet (if any), and serves what the client sends through it.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, up net.Conn, ev Event, d policyengine.Decision, greet []byte) {
	ev.Time, ev.Status, ev.Rule, ev.Reason, ev.Layer = time.Now(), 200, d.Rule, d.Reason, d.Layer
	ev.Decision, ev.Addr = "allow", up.RemoteAddr().String()
	p.cfg.Audit(ev)
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	if greet != nil {
		if _, err := c.Write(greet); err != nil {
			return
		}
	}
	ubr := bufio.NewReaderSize(readSide(up), 4096)
	proto, err := p.firstBytes(c, br, up, ubr)
	switch {
	case err != nil:
		return
	case proto == protoHTTP1:
		p.serveInTunnel(c, br, up, ubr, ev)
		return
	case proto == protoH2C && p.budgets.capsRequests(ev.Host, ev.Port):
		ev.Time, ev.Decision, ev.Status, ev.Rule = time.Now(), "deny", 0, "network.budget"
		ev.Reason = fmt.Sprintf("HTTP/2 without TLS carries many requests in one connection, which network.budget's request cap on %s cannot count; use TLS or HTTP/1.1", hostPort(ev.Host, ev.Port))
		p.cfg.Audit(ev)
		resetConn(c)
		resetConn(up)
		return
	}
	// Bytes either side sent before the relay go first.
	for _, f := range []struct {
		from *bufio.Reader
		to   net.Conn
	}{{br, up}, {ubr, c}} {
		if n := f.from.Buffered(); n > 0 {
			b, _ := f.from.Peek(n)
			if _, err := f.to.Write(b); err != nil {
				return
			}
		}
	}
	relay(c, up, p.cfg.IdleTimeout)
}

// longAgo is a deadline in the past: it ends a read at once.
var longAgo = time.Unix(1, 0)

// firstBytes waits for the first bytes of either side, and tells what the
// client's start: protoOther when the origin spoke first. An origin that
// ended or failed without a byte decides nothing: the client's first
// bytes still do. What either side sent stays in br and ubr. An error
// ends the tunnel: neither side sent a byte for IdleTimeout, or the
// client's side broke.
func (p *Proxy) firstBytes(c net.Conn, br *bufio.Reader, up net.Conn, ubr *bufio.Reader) (tunnelProto, error) {
	deadline := time.Now().Add(p.cfg.IdleTimeout)
	c.SetReadDeadline(deadline)
	up.SetReadDeadline(deadline)
	client, origin := make(chan error, 1), make(chan error, 1)
	go func() { _, err := br.Peek(1); client <- err }()
	go func() { _, err := ubr.Peek(1); origin <- err }()
	var cerr error
	select {
	case err := <-origin:
		up.SetReadDeadline(time.Time{})
		if err == nil {
			// The origin spoke first. End the client's wait: a byte
			// that came meanwhile is in br.
			c.SetReadDeadline(longAgo)
			<-client
			c.SetReadDeadline(time.Time{})
			return protoOther, nil
		}
		cerr = <-client
	case cerr = <-client:
		up.SetReadDeadline(longAgo)
		<-origin
		up.SetReadDeadline(time.Time{})
	}
	switch {
	case cerr == nil:
		return p.classify(c, br)
	case cerr == io.EOF:
		c.SetReadDeadline(time.Time{})
		return protoOther, nil // the relay passes the half-close on
	case isTimeout(cerr) && ubr.Buffered() > 0:
		c.SetReadDeadline(time.Time{})
		return protoOther, nil // the origin spoke as the wait ended
	}
	return protoOther, cerr
}

// classify reads the client's first bytes, which br has begun to hold,
// until they tell whether they start a request line. Bytes that could
// still be one when the reader is full or HeadTimeout passes are taken
// for a request: the HTTP path reads it, and refuses what it cannot (the
// deadline stays for reading the head). Bytes the client ended its side
// after are relayed with the end unless an origin could take them for a
// request then (classifyAtEnd).
func (p *Proxy) classify(c net.Conn, br *bufio.Reader) (tunnelProto, error) {
	c.SetReadDeadline(time.Now().Add(p.cfg.HeadTimeout))
	for {
		b, _ := br.Peek(br.Buffered())
		proto := classifyPrefix(b)
		if proto == protoUndecided && len(b) == br.Size() {
			proto = protoHTTP1
		}
		if proto != protoUndecided {
			if proto != protoHTTP1 {
				c.SetReadDeadline(time.Time{})
			}
			return proto, nil
		}
		switch _, err := br.Peek(len(b) + 1); {
		case err == io.EOF:
			if classifyAtEnd(b) == protoHTTP1 {
				return protoHTTP1, nil
			}
			c.SetReadDeadline(time.Time{})
			return protoOther, nil
		case isTimeout(err):
			return protoHTTP1, nil
		case err != nil:
			return protoOther, err
		}
	}
}

// serveInTunnel serves plain HTTP a client sent inside the allowed tunnel
// tev as a request through HTTP_PROXY is served: its one request, to the
// tunnel's host, checked against the URL rules.
func (p *Proxy) serveInTunnel(c net.Conn, br *bufio.Reader, up net.Conn, ubr *bufio.Reader, tev Event) {
	ev := Event{Host: tev.Host, Port: tev.Port, Via: tev.Via} // Method "": not read yet
	refuse := func(status int, d policyengine.Decision) {
		resetConn(up)
		ev.Time, ev.Status, ev.Rule, ev.Reason, ev.Layer, ev.Decision = time.Now(), status, d.Rule, d.Reason, d.Layer, "deny"
		if status != 403 {
			ev.Decision = "error"
		}
		p.cfg.Audit(ev)
		respond(c, status, d.Reason)
	}
	req, err := readHeadIn(br, true)
	if err != nil {
		var he *headError
		if errors.As(err, &he) {
			refuse(he.status, policyengine.Decision{Reason: he.msg})
			return
		}
		resetConn(up)
		return // the client went away or was too slow
	}
	ev.Method = req.method
	if req.connect {
		refuse(400, policyengine.Decision{Reason: "a CONNECT request inside a tunnel is not relayed"})
		return
	}
	// The request goes to the tunnel's host, whatever its Host header or
	// absolute target name: the origin gets the checked one.
	req.host, req.port = tev.Host, tev.Port
	if err := req.canonicalTarget(); err != nil {
		refuse(400, policyengine.Decision{Reason: err.Error()})
		return
	}
	ev.URL = "http://" + authority(ev.Host, ev.Port, 80) + req.target
	d, asked := p.checkURL(req, ev.URL, tev.Asked)
	ev.Asked = asked
	if d.Action != policyengine.Allow {
		refuse(403, d)
		return
	}
	c.SetReadDeadline(time.Time{})
	if m, ok := up.(*meteredConn); ok {
		m.m.ev.Method, m.m.ev.URL = req.method, ev.URL // a cut is this request's, answered 403
	}
	// The tunnel's event stands for the request it carries: the audit log
	// keeps one event an allowed connection, and its own for a request
	// refused inside. ev is what a later error of this request (its body,
	// the origin's answer) is audited as: allowed by the rule that allowed
	// the tunnel, and the URL rule that allowed its path, if any.
	ev.Addr, ev.Rule, ev.Reason, ev.Layer = tev.Addr, tev.Rule, tev.Reason, tev.Layer
	if d.Rule != "" {
		ev.Rule += "; policy " + d.Rule
		ev.Reason += "; " + d.Reason
		ev.Layer = d.Layer
	}
	p.exchange(c, br, up, ubr, req, ev, true)
}

// checkURL decides a request inside an allowed tunnel by the agent
// policy's URL rules, as a plain-HTTP request through HTTP_PROXY is
// decided (the tunnel was decided by its scheme and host only). A
// refusal only for want of a rule is put to the ask channel, unless an
// answer already allowed this tunnel (tunnelAsked).
func (p *Proxy) checkURL(req *request, url string, tunnelAsked *ask.Answer) (policyengine.Decision, *ask.Answer) {
	pol := p.cfg.Policy
	if pol == nil {
		return policyengine.Decision{Action: policyengine.Allow, Reason: "no agent policy"}, nil
	}
	pd := pol.CheckRequest(req.method, url, req.host, req.port)
	switch {
	case pd.Action == policyengine.Allow:
		return pd, nil
	case !p.askable(req.host, pd):
		return pd, nil
	case tunnelAsked != nil && tunnelAsked.Reply.Allows():
		return policyengine.Decision{Action: policyengine.Allow, Rule: "ask: " + string(tunnelAsked.Reply),
			Reason: "the ask channel's answer allowed this tunnel"}, tunnelAsked
	}
	return p.ask(req, req.host, pd)
}
