package netns

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"

	"corral.dev/corral/policyengine"
)

// maxSniff bounds what the proxy reads of a transparent connection's
// first bytes to learn its host name: a TLS ClientHello record or an
// HTTP request head.
const maxSniff = 16 << 10

// sniffName looks at the first bytes a client sent to a bare address and
// returns the host name they name: the server_name of a TLS ClientHello,
// or an HTTP/1 request's Host header; via says which. It returns "" when
// there is none yet (br may hold only part of the message: it peeks more
// until the message is whole, maxSniff, or the read fails).
func sniffName(br *bufio.Reader) (name, via string) {
	first, err := br.Peek(1)
	if err != nil {
		return "", ""
	}
	if first[0] == 0x16 { // TLS handshake record
		for n := 5; n <= maxSniff; {
			b, err := br.Peek(n)
			if err != nil {
				return "", ""
			}
			need, name, ok := clientHelloSNI(b)
			switch {
			case ok:
				return name, "sni"
			case need <= n:
				return "", ""
			}
			n = need
		}
		return "", ""
	}
	if !isTokenByte(first[0]) {
		return "", ""
	}
	// Everything that has come so far, then one byte more, until the
	// head ends. (Asking for one byte more before looking at what came
	// made every head wait for sniffWait.)
	for n := 1; ; {
		_, err := br.Peek(n)
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return hostHeader(b[:i+2]), "host"
		}
		if err != nil || len(b) >= maxSniff {
			return "", ""
		}
		n = len(b) + 1
	}
}

func isTokenByte(c byte) bool { return c >= 'A' && c <= 'Z' }

// hostHeader returns the Host of an HTTP/1 request head (its request
// line and headers, each ending in CRLF), without its port; "" if none.
func hostHeader(head []byte) string {
	lines := strings.Split(string(head), "\r\n")
	if len(lines) < 2 || !strings.HasSuffix(lines[0], " HTTP/1.1") && !strings.HasSuffix(lines[0], " HTTP/1.0") {
		return ""
	}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(k, "host") {
			continue
		}
		h, _, err := splitAuthority(strings.TrimSpace(v), 80)
		if err != nil {
			return ""
		}
		// Only a name the resolver could have given, or an address: the
		// proxy decides it as a host.
		if _, ok := policyengine.ParseIP(h); ok {
			return h
		}
		if h = strings.ToLower(h); validName(h) {
			return h
		}
		return ""
	}
	return ""
}

// clientHelloSNI reads the server_name of the TLS ClientHello that starts
// b. need is how many bytes the record takes when b is too short for it
// (more must be read); ok says a name was found.
func clientHelloSNI(b []byte) (need int, name string, ok bool) {
	if len(b) < 5 || b[0] != 0x16 || b[1] != 3 {
		return 0, "", false
	}
	need = 5 + int(binary.BigEndian.Uint16(b[3:]))
	if len(b) < need {
		return need, "", false
	}
	h := b[5:need]
	// Handshake: type 1 (ClientHello), 24-bit length, then version (2),
	// random (32), session id, cipher suites, compression methods,
	// extensions. A ClientHello split over records is not read.
	if len(h) < 4 || h[0] != 1 {
		return 0, "", false
	}
	h = h[4:]
	r := reader{b: h}
	r.skip(2 + 32)
	r.skip(int(r.u8()))
	r.skip(int(r.u16()))
	r.skip(int(r.u8()))
	ext := reader{b: r.bytes(int(r.u16()))}
	for !r.bad && !ext.bad && len(ext.b) >= 4 {
		typ, body := ext.u16(), ext.bytes(int(ext.u16()))
		if typ != 0 { // server_name
			continue
		}
		list := reader{b: body}
		names := reader{b: list.bytes(int(list.u16()))}
		for !names.bad && len(names.b) >= 3 {
			kind, host := names.u8(), names.bytes(int(names.u16()))
			if kind == 0 && !names.bad && validName(strings.ToLower(string(host))) {
				return 0, strings.ToLower(string(host)), true
			}
		}
		return 0, "", false
	}
	return 0, "", false
}

// reader reads a TLS message's fields; any read past the end sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) { r.bytes(n) }

func (r *reader) u8() byte {
	if v := r.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.bytes(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}
