package netns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"corral.dev/corral/policyengine"
)

// Limits on a request head. Anything larger is refused with 431 before a
// single byte goes upstream.
const (
	maxHeadBytes = 32 << 10
	maxHeaders   = 100
)

// request is the parsed head of one proxy request.
type request struct {
	method  string
	connect bool
	host    string // as the client wrote it (name or IP literal, no brackets)
	port    int
	target  string // origin-form request target for plain HTTP ("/path?q")
	proto   string // "HTTP/1.1"
	headers [][2]string
	body    framing // how the body is delimited, for plain HTTP
	// inTunnel: the request came inside a tunnel, whose host it goes to.
	inTunnel bool
}

// headError is a malformed or oversized head: status is the answer.
type headError struct {
	status int
	msg    string
}

func (e *headError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &headError{status: 400, msg: fmt.Sprintf(format, args...)}
}

// readHead reads and parses one request head from br, refusing heads over
// maxHeadBytes or maxHeaders.
func readHead(br *bufio.Reader) (*request, error) { return readHeadIn(br, false) }

// readHeadIn is readHead for a request sent to the proxy (tunnel false)
// or inside a tunnel, whose host is the tunnel's: there an origin-form
// request needs no Host header (HTTP/1.0 clients send none), and the
// caller sets the host.
func readHeadIn(br *bufio.Reader, tunnel bool) (*request, error) {
	budget := maxHeadBytes
	line := func() (string, error) {
		var buf []byte
		for {
			frag, err := br.ReadSlice('\n')
			budget -= len(frag)
			if budget < 0 {
				return "", &headError{status: 431, msg: fmt.Sprintf("request head larger than %d bytes", maxHeadBytes)}
			}
			buf = append(buf, frag...)
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return "", err
			}
		}
		// RFC 9112 §2.2 lets a recipient take a bare LF as a line end;
		// the origin behind the proxy might not, so only CRLF is one.
		text, ok := bytes.CutSuffix(buf, []byte("\r\n"))
		if !ok {
			return "", badRequest("a line of the request head ends in a bare LF, not CRLF")
		}
		for _, c := range text {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return "", badRequest("control character 0x%02x in the request head", c)
			}
		}
		return string(text), nil
	}
	first, err := line()
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(first, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || target == "" || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || strings.ContainsRune(first, '\t') {
		return nil, badRequest("malformed request line %q", clip(first))
	}
	for _, c := range method {
		if c < 'A' || c > 'Z' {
			return nil, badRequest("malformed method %q", clip(method))
		}
	}
	r := &request{method: method, proto: proto, inTunnel: tunnel}
	for {
		l, err := line()
		if err != nil {
			return nil, err
		}
		if l == "" {
			break
		}
		if len(r.headers) == maxHeaders {
			return nil, &headError{status: 431, msg: fmt.Sprintf("more than %d request headers", maxHeaders)}
		}
		if l[0] == ' ' || l[0] == '\t' {
			// obs-fold (RFC 9112 §5.2): one origin joins the lines, another
			// takes the folded line for a header of its own.
			return nil, badRequest("folded header line %q (obs-fold)", clip(l))
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || !isToken(k) {
			return nil, badRequest("malformed header line %q", clip(l))
		}
		r.headers = append(r.headers, [2]string{k, strings.Trim(v, " \t")})
	}
	if err := r.parseTarget(target); err != nil {
		return nil, err
	}
	if r.connect {
		return r, nil // what follows is the tunnel's, not a body
	}
	return r, r.parseFraming()
}

// isToken reports whether s is an RFC 9110 token, as header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// parseTarget fills host, port and the origin-form target from the request
// target: an authority for CONNECT, an absolute http:// URI, or an origin
// form with a Host header.
func (r *request) parseTarget(target string) error {
	var authority string
	defPort := 80
	switch {
	case r.method == "CONNECT":
		r.connect = true
		authority, defPort = target, 0
	case hasPrefixFold(target, "http://"):
		rest := target[len("http://"):]
		i := strings.IndexAny(rest, "/?#")
		if i < 0 {
			authority, r.target = rest, "/"
		} else {
			authority, r.target = rest[:i], rest[i:]
			if r.target[0] != '/' {
				r.target = "/" + r.target
			}
		}
		if strings.Contains(authority, "@") {
			return badRequest("credentials in the proxy URL %q are not relayed", clip(target))
		}
	case hasPrefixFold(target, "https://"):
		return badRequest("https:// must go through a CONNECT tunnel (set HTTPS_PROXY)")
	case strings.HasPrefix(target, "/"):
		authority, r.target = r.header("Host"), target
		if authority == "" && r.inTunnel {
			return nil // the tunnel's host is the request's
		}
		if authority == "" {
			return badRequest("origin-form request %q without a Host header", clip(target))
		}
	default:
		return badRequest("unsupported request target %q", clip(target))
	}
	host, port, err := splitAuthority(authority, defPort)
	if err != nil {
		return badRequest("%v", err)
	}
	r.host, r.port = host, port
	return nil
}

// splitAuthority splits host[:port] and [v6][:port]; defPort 0 means the
// port is required.
func splitAuthority(a string, defPort int) (string, int, error) {
	if a == "" {
		return "", 0, errors.New("empty host")
	}
	host, portStr := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%q: missing ']'", clip(a))
		}
		host, portStr = a[1:end], a[end+1:]
		if portStr != "" && portStr[0] != ':' {
			return "", 0, fmt.Errorf("%q: unexpected text after ']'", clip(a))
		}
		portStr = strings.TrimPrefix(portStr, ":")
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		host, portStr = a[:i], a[i+1:]
		if strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("%q: IPv6 addresses need brackets", clip(a))
		}
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q: empty host", clip(a))
	}
	if portStr == "" {
		if defPort == 0 {
			return "", 0, fmt.Errorf("%q: CONNECT needs host:port", clip(a))
		}
		return host, defPort, nil
	}
	if strings.Trim(portStr, "0123456789") != "" {
		return "", 0, fmt.Errorf("%q: port is not a number in 1-65535", clip(a))
	}
	p, err := strconv.Atoi(portStr)
	if err != nil || p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("%q: port is not a number in 1-65535", clip(a))
	}
	return host, p, nil
}

func (r *request) header(name string) string {
	for _, h := range r.headers {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

// canonicalTarget replaces the request target by the path and query the
// policy checks and the origin gets (policyengine.RequestPath): dot
// segments resolved, repeated slashes merged. A path origins could read
// in ways the check cannot all follow ("/public/..%2fsecret",
// "/public/..;/admin", a fragment, a backslash) is refused; `corral check
// url` denies the same URLs.
func (r *request) canonicalTarget() error {
	t := r.target
	if strings.ContainsAny(t, "#\\") {
		// In the query too: the origin may take either for the path's.
		return fmt.Errorf("request path %q: a fragment or backslash is ambiguous", clip(t))
	}
	path, query, _ := strings.Cut(t, "?")
	if _, err := policyengine.ParseURL("http://" + authority(canonicalHost(r.host), r.port, 80) + "/"); err != nil {
		return fmt.Errorf("request path %q: %v", clip(t), err)
	}
	clean, err := policyengine.RequestPath(path)
	if err != nil {
		return fmt.Errorf("request path %q: %v", clip(t), err)
	}
	if query != "" {
		clean += "?" + query
	}
	r.target = clean
	return nil
}

// hopByHop are headers meant for the proxy, not the origin.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "TE", "Trailer", "Upgrade"}

// originHead is the head sent upstream for a plain HTTP request: the origin
// form, hop-by-hop headers dropped, Host set to the checked authority, and
// "Connection: close" so one upstream connection carries one exchange; a
// WebSocket upgrade (websocket true) asks for it instead, one exchange
// too, after which the connection is no longer HTTP.
func (r *request) originHead(websocket bool) []byte {
	var b bytes.Buffer
	b.WriteString(r.method + " " + r.target + " " + r.proto + "\r\n")
	drop := map[string]bool{}
	for _, h := range hopByHop {
		drop[strings.ToLower(h)] = true
	}
	for _, h := range r.headers {
		if strings.EqualFold(h[0], "Connection") {
			for _, tok := range strings.Split(h[1], ",") {
				drop[strings.ToLower(strings.Trim(tok, " \t"))] = true
			}
		}
	}
	// The body's framing is the proxy's own (body.go), never the
	// client's headers.
	drop["content-length"], drop["transfer-encoding"], drop["host"] = true, true, true
	b.WriteString("Host: " + authority(canonicalHost(r.host), r.port, 80) + "\r\n")
	for _, h := range r.headers {
		if drop[strings.ToLower(h[0])] {
			continue
		}
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	switch {
	case r.body.chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case r.body.declared:
		b.WriteString("Content-Length: " + strconv.FormatInt(r.body.length, 10) + "\r\n")
	}
	if websocket {
		b.WriteString("Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		return b.Bytes()
	}
	b.WriteString("Connection: close\r\n\r\n")
	return b.Bytes()
}

// websocket reports whether r asks to upgrade its connection to a
// WebSocket (RFC 6455 §4.1): a GET without a body, "Upgrade: websocket"
// and "upgrade" among its Connection options. No other upgrade is
// relayed (h2c would carry many requests in one connection).
func (r *request) websocket() bool {
	if r.method != "GET" || r.body.chunked || r.body.length != 0 || !strings.EqualFold(strings.TrimSpace(r.header("Upgrade")), "websocket") {
		return false
	}
	for _, h := range r.headers {
		if !strings.EqualFold(h[0], "Connection") {
			continue
		}
		for _, tok := range strings.Split(h[1], ",") {
			if strings.EqualFold(strings.Trim(tok, " \t"), "upgrade") {
				return true
			}
		}
	}
	return false
}

func authority(host string, port, defPort int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == defPort {
		return host
	}
	return host + ":" + strconv.Itoa(port)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// clip shortens s for an error message; %q makes it printable.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// canonicalHost is the host as the policy engine names it, or the raw host
// when it is unparseable (the engine denies those).
func canonicalHost(h string) string {
	if c, err := policyengine.CanonicalHost(h); err == nil {
		return c
	}
	return h
}
