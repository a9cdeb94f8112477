package policyengine

import (
	"errors"
	"fmt"
	"strings"
)

// One reading of a URL's path is shared by every side that decides by
// it: `corral check url`, the agent policy's URL rules (package
// agentpolicy) and the egress proxy's plain-HTTP requests (package
// netns). A policy that reads a path one way while the origin server
// reads it another is bypassed by the difference ("/public/..%2fadmin"
// is under /public to one, /admin to the other), so a path is read the
// ways origins read it, and a rule must hold for each reading.

// PathReadings are the readings of a URL path that decide it.
type PathReadings struct {
	// Canonical is the path as RFC 3986 and WHATWG read it, and as the
	// proxy sends it: backslashes as '/', dot segments (also their
	// %2e spellings) resolved, never above "/", repeated slashes
	// merged, escapes of unreserved characters decoded ("%61" is "a")
	// and the rest in upper case ("%2f" is "%2F").
	Canonical string
	// Decoded is the path as the most lenient origin reads it: every
	// escape decoded, again and again ("%252F" is "/"), backslashes as
	// '/', a NUL ending it (C servers), each segment's ';' parameters
	// cut off (servlet containers: "/admin;x/y" is "/admin/y"), repeated
	// slashes merged before dot segments are resolved (nginx, Go's
	// path.Clean: "/a//../b" is "/b"), then written as Canonical writes
	// a path. It is Canonical where the path can be read only one way.
	Decoded string
}

// Ambiguous reports whether the readings differ.
func (r PathReadings) Ambiguous() bool { return r.Canonical != r.Decoded }

// ReadPath reads raw, a URL's path as written (from its first '/' up to
// its '?' or '#').
func ReadPath(raw string) PathReadings {
	if raw == "" {
		raw = "/"
	}
	canonical := NormalizeEscapes(mergeSlashes(escapePath(resolveDotSegments(strings.ReplaceAll(raw, `\`, "/")))))
	return PathReadings{Canonical: canonical, Decoded: decodedReading(raw)}
}

// Readings are the readings of u's path (ReadPath of u.RawPath, or of
// u.Path for a URL not made by ParseURL).
func (u URL) Readings() PathReadings {
	if u.RawPath != "" {
		return ReadPath(u.RawPath)
	}
	return ReadPath(u.Path)
}

// ErrAmbiguousPath means a request path that origins read in ways the
// proxy cannot check all of.
var ErrAmbiguousPath = errors.New("ambiguous request path")

// RequestPath is the path corral's proxy sends for a plain-HTTP request
// whose path is raw: dot segments resolved and repeated slashes merged,
// its escapes as the client wrote them. It refuses, with
// ErrAmbiguousPath, the forms some origins read differently from others
// in ways the proxy would have to guess: a fragment, a backslash, an
// encoded '/', '\' or '.', an encoded escape ("%2561"), an encoded NUL or
// other control character, a ';' on a dot segment ("..;/"), and dot
// segments that resolve differently once slashes are merged or ';'
// parameters cut ("/a//../b" is "/a/b" to WHATWG, "/b" to nginx). `corral check url` denies a plain http:// URL with one of
// these, as the proxy refuses it; other paths are decided by their
// readings (a ';' parameter, an encoded reserved character).
func RequestPath(raw string) (string, error) {
	if why := ambiguity(raw); why != "" {
		return "", fmt.Errorf("%w: %s", ErrAmbiguousPath, why)
	}
	return mergeSlashes(escapePath(resolveDotSegments(raw))), nil
}

// ambiguity says why the proxy refuses a request path, or "".
func ambiguity(raw string) string {
	if strings.ContainsAny(raw, "#\\") {
		return "a fragment or backslash is ambiguous"
	}
	lower := strings.ToLower(raw)
	for _, bad := range []string{"%2f", "%5c", "%2e"} {
		if strings.Contains(lower, bad) {
			return "an encoded " + strings.ToUpper(bad) + " is ambiguous"
		}
	}
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] != '%' || !isHexDigit(raw[i+1]) || !isHexDigit(raw[i+2]) {
			continue
		}
		switch c := unhexByte(raw[i+1])<<4 | unhexByte(raw[i+2]); {
		case c < 0x20 || c == 0x7f:
			return "an encoded control character is ambiguous"
		case c == '%' && i+4 < len(raw) && isHexDigit(raw[i+3]) && isHexDigit(raw[i+4]):
			return "an encoded escape (" + raw[i:i+5] + ") is ambiguous: an origin that decodes twice reads another path"
		}
	}
	for _, seg := range strings.Split(raw, "/") {
		if strings.HasPrefix(seg, ".;") || strings.HasPrefix(seg, "..;") {
			return "a ';' on a dot segment is ambiguous"
		}
	}
	if strings.IndexByte(raw, '.') >= 0 && decodedReading(raw) != decodedReading(mergeSlashes(resolveDotSegments(raw))) {
		// The origin gets the path resolved: it must read that as it
		// would have read the path as written.
		return "dot segments after a repeated slash or a ';' segment are ambiguous"
	}
	return ""
}

// decodedReading is PathReadings.Decoded.
func decodedReading(raw string) string {
	s := raw
	for i := 0; i < 8 && strings.IndexByte(s, '%') >= 0; i++ {
		d := decodeEscapes(s)
		if d == s {
			break
		}
		s = d
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, `\`, "/")
	if strings.IndexByte(s, ';') >= 0 {
		segs := strings.Split(s, "/")
		for i, seg := range segs {
			if j := strings.IndexByte(seg, ';'); j >= 0 {
				segs[i] = seg[:j]
			}
		}
		s = strings.Join(segs, "/")
	}
	if !strings.HasPrefix(s, "/") {
		s = "/" + s
	}
	s = resolvePlainDots(mergeSlashes(s))
	return escapeBytes(s, func(c byte) bool {
		return c == '"' || c == '<' || c == '>' || c == '`' || c == '{' || c == '}' || c == '%' || c == '?' || c == '#'
	})
}

// resolvePlainDots resolves "." and ".." segments, written plainly (every
// escape is decoded by then).
func resolvePlainDots(p string) string {
	if !strings.Contains(p, "/.") {
		return p
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case ".":
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "")
		}
	}
	return "/" + strings.Join(out, "/")
}

// mergeSlashes writes every run of '/' as one.
func mergeSlashes(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return p
}

// decodeEscapes decodes every %XX escape of s once; a '%' that starts
// none stays.
func decodeEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			b.WriteByte(unhexByte(s[i+1])<<4 | unhexByte(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// NormalizeEscapes decodes %XX of unreserved characters (letters,
// digits, '-', '.', '_', '~'), as RFC 3986 section 6.2.2.2 makes them
// equivalent, and writes the other escapes in upper case, so "/%61dmin"
// is "/admin" and "%2f" is "%2F". A '%' that starts no escape is written
// as "%25", so no decoded character can complete an escape with it.
func NormalizeEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			c := unhexByte(s[i+1])<<4 | unhexByte(s[i+2])
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
				b.WriteByte(c)
			} else {
				b.WriteString(strings.ToUpper(s[i : i+3]))
			}
			i += 2
			continue
		}
		if s[i] == '%' {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhexByte(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
