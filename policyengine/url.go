package policyengine

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// URL is a canonical URL: what a browser-grade parser would send a request
// to, with the host classified.
type URL struct {
	Scheme string // lower case: http, https, ws, wss or ftp
	Host   string // canonical host (CanonicalHost), IPv6 without brackets
	Port   int    // explicit or the scheme's default
	Path   string // dot segments resolved, starts with "/"
	// RawPath is the path as written, before dot segments are resolved
	// (backslashes kept), for its readings (Readings, RequestPath).
	RawPath  string
	RawQuery string // without the '?'
	Category Category
	Addr     netip.Addr // the address when IsIP
	IsIP     bool
}

// defaultPorts lists the schemes ParseURL accepts and their default ports.
var defaultPorts = map[string]int{
	"http":  80,
	"https": 443,
	"ws":    80,
	"wss":   443,
	"ftp":   21,
}

// ParseURL parses and canonicalises raw the way the WHATWG URL standard
// (what browsers and most modern clients implement) does for these special
// schemes, because a policy check that parses differently from the client
// is an SSRF bypass:
//
//   - ASCII tab and newline are removed anywhere, leading and trailing
//     control characters and spaces are trimmed;
//   - scheme and host are lower-cased, userinfo is dropped; the host is
//     what follows the last '@' of the authority, so
//     "http://evil.com@127.0.0.1/" is 127.0.0.1;
//   - a backslash ends the authority and counts as '/' in the path, as in
//     browsers; but where that makes browsers and RFC 3986 clients read
//     different hosts, as in "http://127.0.0.1\@evil.com" (127.0.0.1 to a
//     browser, evil.com to Python's urllib), the URL is an error, since
//     either answer leaves one kind of client unchecked;
//   - the host is percent-decoded, IDN becomes punycode, IPv4 in any
//     notation becomes a dotted quad, and its category is computed;
//   - the port defaults by scheme; dot segments (also %2e forms) are
//     resolved; the fragment is dropped since it is never sent.
//
// It fails for a missing scheme or host, a bad port, a scheme other than
// http, https, ws, wss and ftp, or an ambiguous authority.
func ParseURL(raw string) (URL, error) {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}

	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !validScheme(s[:colon]) {
		return URL{}, fmt.Errorf("url %q: missing scheme", clip(raw))
	}
	scheme := strings.ToLower(s[:colon])
	defPort, ok := defaultPorts[scheme]
	if !ok {
		return URL{}, fmt.Errorf("url %q: unsupported scheme %q (only http, https, ws, wss and ftp)", clip(raw), clip(scheme))
	}
	afterScheme := s[colon+1:]
	// Special schemes ignore any run of slashes and backslashes before the
	// authority, so "http:\\host" and "http:///host" both reach "host".
	rest := strings.TrimLeft(afterScheme, `/\`)
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	host, addr, isIP, port, err := parseAuthority(authority, defPort)
	if err != nil {
		return URL{}, fmt.Errorf("url %q: %v", clip(raw), err)
	}
	if err := checkRFC3986Reading(afterScheme, defPort, host, port); err != nil {
		return URL{}, fmt.Errorf("url %q: %v", clip(raw), err)
	}
	u := URL{Scheme: scheme, Host: host, Port: port, Addr: addr, IsIP: isIP}
	if isIP {
		u.Category = CategoryOf(addr)
	} else {
		u.Category = nameCategory(host)
	}

	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	path := rest
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, u.RawQuery = rest[:i], escapeQuery(rest[i+1:])
	}
	u.RawPath = path
	u.Path = escapePath(resolveDotSegments(strings.ReplaceAll(path, `\`, "/")))
	return u, nil
}

// validScheme reports whether s is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // lower-cases letters, leaves digits and +-. alone
		switch {
		case 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= s[i] && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// parseAuthority reads "[userinfo@]host[:port]": the host is what follows
// the last '@', and comes back canonical (CanonicalHost).
func parseAuthority(authority string, defPort int) (host string, addr netip.Addr, isIP bool, port int, err error) {
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}
	hostPart, portPart, hasPort, err := splitAuthority(authority)
	if err != nil {
		return "", netip.Addr{}, false, 0, err
	}
	if hostPart == "" {
		return "", netip.Addr{}, false, 0, errors.New("missing host")
	}
	port = defPort
	if hasPort && portPart != "" {
		v, ok := parseDecimalPort(portPart)
		if !ok {
			return "", netip.Addr{}, false, 0, fmt.Errorf("port %q is not a number", clip(portPart))
		}
		if v < 1 || v > 65535 {
			return "", netip.Addr{}, false, 0, fmt.Errorf("port %s is out of range 1-65535", clip(portPart))
		}
		port = v
	}
	name, addr, isIP, err := canonicalize(hostPart)
	if err != nil {
		return "", netip.Addr{}, false, 0, err
	}
	if isIP {
		name = addr.String()
	}
	return name, addr, isIP, port, nil
}

// checkRFC3986Reading rejects URLs that browsers and RFC 3986 clients
// (Python's urllib and requests, and most non-browser HTTP libraries) send to
// different places. The latter take the authority to run from "//" to the
// first '/', '?' or '#', so a backslash before those splits the two readings:
// "http://evil.com\@127.0.0.1/" is evil.com to a browser but 127.0.0.1 to
// requests, and "http://127.0.0.1\@evil.com" the other way round. Whichever
// reading the policy picked, a client of the other kind would connect
// somewhere the policy never checked, so such a URL is an error unless both
// readings agree.
func checkRFC3986Reading(afterScheme string, defPort int, host string, port int) error {
	if !strings.HasPrefix(afterScheme, "//") {
		return nil // RFC 3986 clients see no authority and connect nowhere.
	}
	authority := afterScheme[2:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	if strings.IndexByte(authority, '\\') < 0 {
		return nil
	}
	otherHost, _, _, otherPort, err := parseAuthority(authority, defPort)
	if err == nil && otherHost == host && otherPort == port {
		return nil
	}
	return fmt.Errorf("ambiguous URL: a backslash before the path makes browsers connect to %s port %d but other clients read the authority as %q", host, port, clip(authority))
}

// splitAuthority splits "host[:port]" or "[v6][:port]". As in the WHATWG
// parser the first ':' outside brackets starts the port.
func splitAuthority(a string) (host, port string, hasPort bool, err error) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", false, errors.New("missing ']' after IPv6 address")
		}
		host, rest := a[:end+1], a[end+1:]
		if rest == "" {
			return host, "", false, nil
		}
		if rest[0] != ':' {
			return "", "", false, fmt.Errorf("unexpected %q after ']'", clip(rest))
		}
		return host, rest[1:], true, nil
	}
	host, port, hasPort = strings.Cut(a, ":")
	return host, port, hasPort, nil
}

// resolveDotSegments removes "." and ".." segments (including their
// percent-encoded spellings, which browsers also honour) from an absolute
// path, as RFC 3986 section 5.2.4 and the WHATWG path state do. The result
// always starts with "/".
func resolveDotSegments(p string) string {
	if p == "" || p == "/" {
		return "/"
	}
	if !strings.Contains(p, ".") && !strings.Contains(p, "%2") {
		return p
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch {
		case isDoubleDotSegment(seg):
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case isSingleDotSegment(seg):
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}

func isSingleDotSegment(s string) bool {
	return s == "." || strings.EqualFold(s, "%2e")
}

func isDoubleDotSegment(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return strings.EqualFold(s, ".%2e") || strings.EqualFold(s, "%2e.")
	case 6:
		return strings.EqualFold(s, "%2e%2e")
	}
	return false
}

// escapePath percent-encodes the bytes the WHATWG path percent-encode set
// covers, so String() is a valid URL. '%' is left alone: existing escapes
// stay as they are, which keeps canonicalisation idempotent.
func escapePath(p string) string {
	return escapeBytes(p, func(c byte) bool {
		return c == '"' || c == '<' || c == '>' || c == '`' || c == '{' || c == '}'
	})
}

// escapeQuery percent-encodes the WHATWG special-query percent-encode set.
func escapeQuery(q string) string {
	return escapeBytes(q, func(c byte) bool {
		return c == '"' || c == '<' || c == '>' || c == '\''
	})
}

func escapeBytes(s string, extra func(byte) bool) string {
	needs := func(c byte) bool { return c <= ' ' || c >= 0x7f || extra(c) }
	i := 0
	for i < len(s) && !needs(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if needs(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// String returns the canonical URL text: the default port and the fragment
// are omitted, IPv6 hosts are bracketed, IDN hosts stay in punycode.
func (u URL) String() string {
	var b strings.Builder
	b.Grow(len(u.Scheme) + len(u.Host) + len(u.Path) + len(u.RawQuery) + 16)
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.IsIP && u.Addr.Is6() {
		b.WriteByte('[')
		b.WriteString(u.Host)
		b.WriteByte(']')
	} else {
		b.WriteString(u.Host)
	}
	if def, ok := defaultPorts[u.Scheme]; u.Port != 0 && (!ok || u.Port != def) {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(u.Port))
	}
	if u.Path == "" {
		b.WriteByte('/')
	} else {
		b.WriteString(u.Path)
	}
	if u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	return b.String()
}
