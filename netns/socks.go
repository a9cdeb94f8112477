package netns

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"corral.dev/corral/policyengine"
)

// SOCKS5 (RFC 1928) on the proxy's own port, told from HTTP by its first
// byte: for clients that speak it (ALL_PROXY=socks5h://..., ssh's
// ProxyCommand through nc -X 5, many database drivers). Only CONNECT
// without authentication; every request is decided as a CONNECT tunnel.
const (
	socksVersion     = 5
	socksNoAuth      = 0
	socksNoMethod    = 0xff
	socksConnect     = 1
	socksIPv4        = 1
	socksDomain      = 3
	socksIPv6        = 4
	socksOK          = 0
	socksFailure     = 1
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksRefused     = 5
	socksTTLExpired  = 6
	socksBadCommand  = 7
	socksBadAddress  = 8
)

// handleSOCKS serves one SOCKS5 client whose first byte br has peeked.
func (p *Proxy) handleSOCKS(c net.Conn, br *bufio.Reader) {
	ev := Event{Method: "CONNECT", Via: "socks5"}
	fail := func(reply byte, status int, reason string) {
		ev.Time, ev.Status, ev.Reason, ev.Decision = time.Now(), status, reason, "error"
		if reply == socksNotAllowed {
			ev.Decision = "deny"
		}
		p.cfg.Audit(ev)
		if reply != 0 {
			c.Write([]byte{socksVersion, reply, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
		}
	}
	host, port, err := readSOCKS(c, br)
	if err != nil {
		var se *socksError
		if errors.As(err, &se) {
			fail(se.reply, 400, "SOCKS5: "+se.msg)
		}
		return // the client went away or was too slow
	}
	c.SetReadDeadline(time.Time{})
	ev.Host, ev.Port = canonicalHost(host), port
	up, status, d, asked := p.connect(&request{method: "CONNECT", connect: true, host: host, port: port})
	ev.Asked = asked
	if up == nil {
		ev.Rule, ev.Layer = d.Rule, d.Layer
		reply := byte(socksNotAllowed)
		switch status {
		case 502:
			reply = socksUnreachable
		case 504:
			reply = socksTTLExpired
		}
		fail(reply, status, d.Reason)
		return
	}
	// The bound address is the proxy's business: 0.0.0.0:0, as many
	// SOCKS servers answer.
	p.tunnel(c, br, up, ev, d, []byte{socksVersion, socksOK, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
}

// socksError is a request the proxy answers with reply before it ends.
type socksError struct {
	reply byte
	msg   string
}

func (e *socksError) Error() string { return e.msg }

// readSOCKS reads the greeting, chooses no authentication and reads the
// request. It answers a greeting without that method itself.
func readSOCKS(c net.Conn, br *bufio.Reader) (string, int, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return "", 0, err
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", 0, err
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		c.Write([]byte{socksVersion, socksNoMethod})
		return "", 0, &socksError{msg: "the client offers no method without authentication"}
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return "", 0, err
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return "", 0, err
	}
	if req[0] != socksVersion {
		return "", 0, &socksError{reply: socksFailure, msg: fmt.Sprintf("version %d", req[0])}
	}
	var host string
	switch req[3] {
	case socksIPv4, socksIPv6:
		n := 4
		if req[3] == socksIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, err
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.Unmap().String()
	case socksDomain:
		l, err := br.ReadByte()
		if err != nil {
			return "", 0, err
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, err
		}
		host = string(b)
		if _, ok := policyengine.ParseIP(host); !ok && !validName(host) {
			return "", 0, &socksError{reply: socksBadAddress, msg: fmt.Sprintf("host %q is not a host name", clip(host))}
		}
	default:
		return "", 0, &socksError{reply: socksBadAddress, msg: fmt.Sprintf("address type %d", req[3])}
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return "", 0, err
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != socksConnect {
		return "", 0, &socksError{reply: socksBadCommand, msg: fmt.Sprintf("command %d (only CONNECT is served)", req[1])}
	}
	if port == 0 {
		return "", 0, &socksError{reply: socksBadAddress, msg: "port 0"}
	}
	return host, port, nil
}
