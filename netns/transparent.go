package netns

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"time"

	"corral.dev/corral/policyengine"
)

// Originals tells where a redirected connection was going. In a sandbox
// with transparent egress, corral's seccomp supervisor connects each TCP
// socket the command aims at an address outside the sandbox to the proxy
// instead, and records here, by the socket's own address, the address the
// command asked for.
type Originals interface {
	// Take returns and forgets the destination recorded for a
	// connection from from.
	Take(from netip.AddrPort) (dest netip.AddrPort, ok bool)
}

// sniffWait bounds how long the proxy waits for a client's first bytes
// when a connection went to a bare address (not one of the fake DNS's):
// a TLS ClientHello or an HTTP request names the host. A protocol where
// the server speaks first (SSH, SMTP) waits this long once and is then
// decided by its address alone. (300 ms was too short for curl's first
// TLS handshake under emulation: the CI's VM.)
const sniffWait = time.Second

// handleTransparent serves a connection the supervisor redirected from
// dest: it learns the host name (the fake DNS answer the command used,
// or the TLS SNI or HTTP Host the client sends to a bare address),
// decides it exactly as a CONNECT tunnel to that host and port, and
// serves it as one (tunnel.go): to the address it checked, plain HTTP one
// request a connection.
func (p *Proxy) handleTransparent(c net.Conn, dest netip.AddrPort) {
	dest = netip.AddrPortFrom(dest.Addr().Unmap(), dest.Port())
	ev := Event{Method: "TCP", Port: int(dest.Port()), Via: "address"}
	br := bufio.NewReaderSize(c, maxSniff+1)
	host := dest.Addr().String()
	deny := func(status int, d policyengine.Decision, http bool) {
		ev.Time, ev.Status, ev.Rule, ev.Reason, ev.Layer = time.Now(), status, d.Rule, d.Reason, d.Layer
		ev.Decision = "deny"
		if status != 403 {
			ev.Decision = "error"
		}
		p.cfg.Audit(ev)
		if http {
			// A plain HTTP client reads why, as through the proxy.
			respond(c, status, d.Reason)
			return
		}
		// Anything else has no place for a reason: the connection ends
		// at once (RST), not as an orderly close a client could take
		// for an empty answer.
		resetConn(c)
	}
	switch name, ok := p.cfg.DNS.nameOf(dest.Addr()); {
	case ok:
		host, ev.Via = name, "dns"
	case IsFake(dest.Addr()):
		ev.Host = host
		deny(403, policyengine.Decision{Reason: fmt.Sprintf("%s is in corral's fake DNS pool (%s) but was never given to a name", dest.Addr(), FakePool)}, false)
		return
	default:
		c.SetReadDeadline(time.Now().Add(sniffWait))
		if name, via := sniffName(br); name != "" {
			host, ev.Via = name, via
		}
		c.SetReadDeadline(time.Time{})
	}
	ev.Host = canonicalHost(host)
	if a, ok := policyengine.ParseIP(host); ok && p.isSelf(a, int(dest.Port())) {
		deny(403, policyengine.Decision{Reason: fmt.Sprintf("%s is the proxy itself; it never relays to itself", dest)}, false)
		return
	}
	req := &request{method: "CONNECT", connect: true, host: host, port: int(dest.Port())}
	up, status, d, asked := p.connect(req)
	ev.Asked = asked
	if up == nil {
		deny(status, d, ev.Via == "host")
		return
	}
	p.tunnel(c, br, up, ev, d, nil)
}

// nameOf is Name on a resolver that may be nil.
func (d *FakeDNS) nameOf(a netip.Addr) (string, bool) {
	if d == nil {
		return "", false
	}
	return d.Name(a)
}
