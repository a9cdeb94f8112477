package netns

import (
	"bytes"
	"strings"
)

// A tunnel's first client bytes say what it carries. Plain HTTP/1 is
// served as through HTTP_PROXY, one request at a time (tunnel.go); the
// rest is relayed as it comes. The line is read the way lenient origin
// servers read a request line (RFC 9112 §3, §2.2), so that whatever an
// origin could take for a request is taken for one here too: empty
// lines before it, any token as the method, runs of spaces or tabs
// between the parts, HTTP/0.9's two-part form. What is taken for a
// request the HTTP path then reads strictly, refusing what it would
// refuse through HTTP_PROXY (a lower-case method, a bare LF, a leading
// empty line, HTTP/0.9).

// tunnelProto is what a tunnel's first client bytes start.
type tunnelProto int

const (
	protoUndecided tunnelProto = iota // more bytes are needed to tell
	protoOther                        // no HTTP request line: relayed as it is
	protoHTTP1                        // an HTTP request line (also 0.9's, or a version the proxy refuses)
	protoH2C                          // HTTP/2's preface without TLS: many requests in one connection
)

// classifyPrefix tells what b, the first bytes a client sent in a tunnel,
// start; protoUndecided while b could still be the start of a request
// line.
func classifyPrefix(b []byte) tunnelProto {
	i := 0
	for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	m := i
	for m < len(b) && isTchar(b[m]) {
		m++
	}
	switch {
	case m == len(b):
		return protoUndecided
	case m == i || !isBlank(b[m]):
		// Not a token, or a token ending in something other than a
		// space: "SSH-2.0-...\r\n", "EHLO\r\n", "AMQP\x00", TLS.
		return protoOther
	}
	method := b[i:m]
	t := skipBlanks(b, m)
	u := t
	for u < len(b) && !isBlank(b[u]) && b[u] > 0x20 && b[u] != 0x7f {
		u++
	}
	if u == len(b) {
		return protoUndecided
	}
	target := b[t:u]
	switch {
	case t == u:
		return protoOther // a control character where the target starts
	case b[u] == '\r' || b[u] == '\n':
		// "GET /path": an HTTP/0.9 request, when the target is a path
		// (Redis' inline "GET key" is not).
		if target[0] == '/' {
			return protoHTTP1
		}
		return protoOther
	case !isBlank(b[u]):
		return protoOther // a control character inside the target
	}
	rest := b[skipBlanks(b, u):]
	const version = "HTTP/"
	if n := min(len(rest), len(version)); !bytes.EqualFold(rest[:n], []byte(version[:n])) {
		return protoOther // "SET key value", "MAIL FROM:<a> SIZE=1"
	}
	if len(rest) < len(version) {
		return protoUndecided
	}
	if string(method) == "PRI" && string(target) == "*" {
		// "PRI * HTTP/2.0": HTTP/2 with prior knowledge.
		if len(rest) < len("HTTP/2.0") {
			return protoUndecided
		}
		if string(rest[:len("HTTP/2.0")]) == "HTTP/2.0" {
			return protoH2C
		}
	}
	return protoHTTP1
}

// classifyAtEnd tells what b, the first bytes of a client that then ended
// its side, are: a request when classifyPrefix says so, or when b is
// still undecided but holds a method and a target ("GET /secret"), which
// some origins (Python's http.server) serve as an HTTP/0.9 request when
// the stream ends. Anything shorter cannot be a request and is relayed
// with the end.
func classifyAtEnd(b []byte) tunnelProto {
	if p := classifyPrefix(b); p != protoUndecided {
		return p
	}
	i := 0
	for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	for i < len(b) && isTchar(b[i]) {
		i++
	}
	if t := skipBlanks(b, i); t > i && t < len(b) {
		return protoHTTP1
	}
	return protoOther
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlanks(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
