package policyengine

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// patternKind says how a HostPattern's host part matches.
type patternKind uint8

const (
	patInvalid patternKind = iota // the zero HostPattern matches nothing
	patAny                        // "*"
	patExact                      // "example.com"
	patSuffix                     // "*.example.com"
	patIP                         // "1.2.3.4", "[::1]"
	patPreset                     // "preset:loopback"
)

// HostPattern is one network.allow entry: "host:port", "*.host:port" (any
// subdomain, never the apex), "*:port" (any host), port "*" (any port),
// "[v6]:port", "1.2.3.4:port", or "preset:<category>[:<port>]", which grants
// a whole category.
type HostPattern struct {
	kind   patternKind
	host   string     // canonical name for patExact, the apex for patSuffix
	addr   netip.Addr // for patIP
	port   int        // 0 means any port
	preset Category   // for patPreset
}

// ParseHostPattern parses one network.allow entry. Surrounding white space
// is ignored.
func ParseHostPattern(s string) (HostPattern, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return HostPattern{}, errors.New("empty host pattern")
	}
	if len(s) >= 7 && strings.EqualFold(s[:7], "preset:") {
		return parsePresetPattern(orig, s[7:])
	}

	var hostPart, portPart string
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return HostPattern{}, fmt.Errorf("host pattern %q: missing ']' after IPv6 address", clip(orig))
		}
		hostPart = s[:end+1]
		rest := s[end+1:]
		if rest == "" {
			return HostPattern{}, fmt.Errorf("host pattern %q: missing port (write %q or %q)", clip(orig), s+":443", s+":*")
		}
		if rest[0] != ':' {
			return HostPattern{}, fmt.Errorf("host pattern %q: unexpected %q after ']'", clip(orig), rest)
		}
		portPart = rest[1:]
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return HostPattern{}, fmt.Errorf("host pattern %q: missing port (write %q or %q)", clip(orig), s+":443", s+":*")
		}
		hostPart, portPart = s[:i], s[i+1:]
		if strings.IndexByte(hostPart, ':') >= 0 {
			return HostPattern{}, fmt.Errorf("host pattern %q: an IPv6 address must be in brackets, as in \"[::1]:443\"", clip(orig))
		}
	}
	if hostPart == "" {
		return HostPattern{}, fmt.Errorf("host pattern %q: empty host", clip(orig))
	}
	port, err := parsePatternPort(portPart)
	if err != nil {
		return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(orig), err)
	}
	p := HostPattern{port: port}

	switch {
	case hostPart == "*":
		p.kind = patAny
		return p, nil
	case strings.HasPrefix(hostPart, "*."):
		apex := hostPart[2:]
		if apex == "" {
			return HostPattern{}, fmt.Errorf("host pattern %q: \"*.\" needs a domain after it, as in \"*.example.com\"", clip(orig))
		}
		if strings.IndexByte(apex, '*') >= 0 {
			return HostPattern{}, fmt.Errorf("host pattern %q: a wildcard may only be the whole host \"*\" or a leading \"*.\"", clip(orig))
		}
		name, _, isIP, err := canonicalize(apex)
		if err != nil {
			return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(orig), err)
		}
		if isIP {
			return HostPattern{}, fmt.Errorf("host pattern %q: \"*.\" cannot be combined with an IP address", clip(orig))
		}
		if err := specialName(orig, name, portPart); err != nil {
			return HostPattern{}, err
		}
		p.kind, p.host = patSuffix, name
		return p, nil
	case strings.IndexByte(hostPart, '*') >= 0:
		return HostPattern{}, fmt.Errorf("host pattern %q: a wildcard may only be the whole host \"*\" or a leading \"*.\"", clip(orig))
	}

	name, addr, isIP, err := canonicalize(hostPart)
	if err != nil {
		return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(orig), err)
	}
	if isIP {
		p.kind, p.addr = patIP, addr
	} else {
		if err := specialName(orig, name, portPart); err != nil {
			return HostPattern{}, err
		}
		p.kind, p.host = patExact, name
	}
	return p, nil
}

// specialName refuses a name pattern that could never match because the
// name itself is in a category (localhost, metadata.google.internal):
// only a preset grants those, so say which one to write.
func specialName(orig, name, port string) error {
	if _, cat, _, _ := Classify(name); cat != CatNone && cat != CatUnparseable {
		return fmt.Errorf("host pattern %q: %s is a %s name, which host patterns never grant; write \"preset:%s:%s\"", clip(orig), name, strings.ReplaceAll(string(cat), "_", " "), cat, port)
	}
	return nil
}

func parsePresetPattern(orig, rest string) (HostPattern, error) {
	name, portPart, hasPort := strings.Cut(rest, ":")
	cat := Category(strings.ToLower(name))
	known := false
	for _, c := range Categories() {
		if c == cat {
			known = true
			break
		}
	}
	if !known {
		names := make([]string, 0, len(Categories()))
		for _, c := range Categories() {
			names = append(names, string(c))
		}
		return HostPattern{}, fmt.Errorf("host pattern %q: unknown preset %q (known: %s)", clip(orig), name, strings.Join(names, ", "))
	}
	p := HostPattern{kind: patPreset, preset: cat}
	if hasPort {
		port, err := parsePatternPort(portPart)
		if err != nil {
			return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(orig), err)
		}
		p.port = port
	}
	return p, nil
}

// parsePatternPort parses a pattern's port: "*" (returned as 0) or 1-65535.
func parsePatternPort(s string) (int, error) {
	if s == "" {
		return 0, errors.New("missing port after ':'")
	}
	if s == "*" {
		return 0, nil
	}
	v, ok := parseDecimalPort(s)
	if !ok {
		return 0, fmt.Errorf("port %q is not a number or \"*\"", clip(s))
	}
	if v < 1 || v > 65535 {
		return 0, fmt.Errorf("port %s is out of range 1-65535", clip(s))
	}
	return v, nil
}

// parseDecimalPort parses an all-digit string, saturating at 65536 so that
// long inputs cannot overflow into range.
func parseDecimalPort(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v <= 65535 {
			v = v*10 + int(c-'0')
		}
	}
	return v, true
}

// String returns the canonical form of the pattern: lower-case, punycode
// host, IPv6 in brackets, "*" for any port. It parses back to an equal
// pattern.
func (p HostPattern) String() string {
	port := "*"
	if p.port != 0 {
		port = strconv.Itoa(p.port)
	}
	switch p.kind {
	case patPreset:
		if p.port == 0 {
			return "preset:" + string(p.preset)
		}
		return "preset:" + string(p.preset) + ":" + port
	case patAny:
		return "*:" + port
	case patExact:
		return p.host + ":" + port
	case patSuffix:
		return "*." + p.host + ":" + port
	case patIP:
		if p.addr.Is6() {
			return "[" + p.addr.String() + "]:" + port
		}
		return p.addr.String() + ":" + port
	}
	return ""
}

// Preset returns the category a preset pattern grants, else CatNone.
func (p HostPattern) Preset() Category {
	if p.kind == patPreset {
		return p.preset
	}
	return CatNone
}

// IsIP reports whether the pattern's host part is an IP literal.
func (p HostPattern) IsIP() bool { return p.kind == patIP }

// Addr is the address of an IP literal pattern (the zero Addr otherwise).
func (p HostPattern) Addr() netip.Addr { return p.addr }

// Match reports whether host (as returned by CanonicalHost; other forms are
// canonicalised first, at some cost) and port match the pattern.
//
// A preset pattern matches any host of its category. An IP-literal pattern
// matches exactly that address, in whatever notation host spells it. A name
// pattern ("*", "*.x.com", "x.com") never matches a host whose category is
// not CatNone, so "*:443" does not grant 127.0.0.1:443, localhost:443 or
// 169.254.169.254:443; "*" matches any other host including public IPs, and
// "*.x.com" matches proper subdomains of x.com only.
func (p HostPattern) Match(host string, port int) bool {
	if p.kind == patInvalid {
		return false
	}
	if p.port != 0 && port != p.port {
		return false
	}
	name, addr, isIP, err := canonicalize(host)
	if err != nil {
		return p.kind == patPreset && p.preset == CatUnparseable
	}
	var cat Category
	if isIP {
		cat = CategoryOf(addr)
	} else {
		cat = nameCategory(name)
	}
	return p.matchClassified(name, addr, isIP, cat, port)
}

// matchClassified is Match for a host already canonicalised and given its
// category, which may be CatHost, a fact Match alone cannot know.
func (p HostPattern) matchClassified(name string, addr netip.Addr, isIP bool, cat Category, port int) bool {
	if p.kind == patInvalid || (p.port != 0 && port != p.port) {
		return false
	}
	switch p.kind {
	case patPreset:
		return cat == p.preset
	case patIP:
		return isIP && addr == p.addr
	}
	if cat != CatNone {
		return false
	}
	switch p.kind {
	case patAny:
		return true
	case patExact:
		return !isIP && name == p.host
	case patSuffix:
		// The byte before the apex must be a dot, so "*.example.com" does
		// not match "badexample.com", and the apex itself is too short.
		return !isIP && len(name) > len(p.host)+1 &&
			name[len(name)-len(p.host)-1] == '.' &&
			name[len(name)-len(p.host):] == p.host
	}
	return false
}

// CoversHostAddr is Covers for a q that is an IP literal of the machine's
// own (CatHost, which only a HostAddrs can tell): only preset:host or the
// same literal covers it.
func (p HostPattern) CoversHostAddr(q HostPattern) bool {
	if q.kind != patIP || (p.port != 0 && p.port != q.port) {
		return false
	}
	return (p.kind == patPreset && p.preset == CatHost) || (p.kind == patIP && p.addr == q.addr)
}

// Covers reports whether every host:port that q matches, p matches too
// (p is at least as wide as q). It is conservative: false when unsure.
func (p HostPattern) Covers(q HostPattern) bool {
	if p.kind == patInvalid || q.kind == patInvalid {
		return false
	}
	if p.port != 0 && p.port != q.port {
		return false
	}
	switch p.kind {
	case patPreset:
		return (q.kind == patPreset && q.preset == p.preset) || (q.kind == patIP && CategoryOf(q.addr) == p.preset)
	case patIP:
		return q.kind == patIP && q.addr == p.addr
	case patAny:
		return q.kind == patAny || q.kind == patExact || q.kind == patSuffix || (q.kind == patIP && CategoryOf(q.addr) == CatNone)
	case patSuffix:
		switch q.kind {
		case patExact:
			return strings.HasSuffix(q.host, "."+p.host)
		case patSuffix:
			return q.host == p.host || strings.HasSuffix(q.host, "."+p.host)
		}
	case patExact:
		return q.kind == patExact && q.host == p.host
	}
	return false
}
