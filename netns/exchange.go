package netns

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"
)

// exchange relays one checked plain-HTTP request to up and the origin's
// answer to the client: the head as originHead writes it, exactly the
// body its framing declares, then the response with "Connection: close".
// Whatever the client sends after the request (a pipelined request for
// another path or host, one hidden after the body) goes nowhere: a
// connection carries one request, so each request is decided, and
// counted, on its own. upgrade lets a WebSocket upgrade through (inside
// a tunnel, where the client could always speak it): after the origin's
// 101 the connection is relayed both ways as it comes.
func (p *Proxy) exchange(c net.Conn, br *bufio.Reader, up net.Conn, ubr *bufio.Reader, req *request, ev Event, upgrade bool) {
	ws := upgrade && req.websocket()
	if _, err := up.Write(req.originHead(ws)); err != nil {
		respondBudget(c, err)
		return
	}
	c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
	if err := req.copyBody(up, br); err != nil {
		// The origin holds an incomplete message: reset rather than end
		// it, so nothing reads it as a whole one.
		resetConn(up)
		respondBudget(c, err)
		var be *bodyError
		if errors.As(err, &be) {
			ev.Time, ev.Decision, ev.Status, ev.Reason = time.Now(), "error", 400, "request body: "+be.msg
			p.cfg.Audit(ev)
			respond(c, 400, ev.Reason)
		}
		return
	}
	if !ws {
		closeWrite(up)
	}
	upgraded, err := relayResponse(c, up, ubr, p.cfg.IdleTimeout, ws)
	if err != nil {
		var he *headError
		if errors.As(err, &he) {
			ev.Time, ev.Decision, ev.Status, ev.Reason = time.Now(), "error", he.status, he.msg
			p.cfg.Audit(ev)
			respond(c, he.status, he.msg)
		}
		return
	}
	if upgraded {
		c.SetReadDeadline(time.Time{})
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		relay(c, up, p.cfg.IdleTimeout)
	}
}

// resetConn ends c at once with a reset (RST), so the peer cannot take
// what it got for a whole message or stream. Closed here, c is not
// lingered over (lingerClose) either.
func resetConn(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// The client's connection ends with its unread input read away for at
// most lingerTime or lingerBytes.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// lingerClose ends the client's connection c once the proxy is done with
// it: its side first (FIN), then what the client still sends is read
// away until the client ends too, lingerTime passes or lingerBytes came,
// and the caller closes it. A close with unread input (a pipelined
// request the proxy does not serve, the rest of a refused body) is a
// reset, and on a loaded host the reset can overtake the answer sent
// just before it, as the two may leave through different CPUs' queues:
// the client reads "Connection reset by peer" and never the answer. The
// end is ordered after the answer; a client that reads its answer and
// closes, as a client told "Connection: close" does, ends the wait at
// once.
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c, lingerBytes)
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
