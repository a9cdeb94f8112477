package policyengine

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// maxHostLen bounds the input we are willing to canonicalise. A DNS name is
// at most 253 bytes; the slack allows for percent-encoding and Unicode
// before mapping, and the bound keeps hostile input from costing much.
const maxHostLen = 2048

// CanonicalHost lower-cases host, strips one trailing dot and IPv6 brackets,
// percent-decodes it (%2e and friends), and converts IDN to ASCII punycode
// with the idna.Lookup profile (so fullwidth letters and dots and the other
// Unicode dots 。．｡ map to their ASCII forms). IP literals in any notation
// ParseIP accepts come back in netip.Addr.String() form: "0x7f.1" becomes
// "127.0.0.1", "::ffff:127.0.0.1" becomes "127.0.0.1" and zone ids are
// dropped. It returns an error for a host that is neither a valid DNS name nor
// an IP literal.
func CanonicalHost(host string) (string, error) {
	name, addr, isIP, err := canonicalize(host)
	if err != nil {
		return "", err
	}
	if isIP {
		return addr.String(), nil
	}
	return name, nil
}

// Classify canonicalises host and returns its category and, when host is an
// IP literal, the parsed address. When host cannot be canonicalised the
// category is CatUnparseable and canonical is the error text, so a caller can
// put it straight into a denial reason.
func Classify(host string) (canonical string, cat Category, addr netip.Addr, isIP bool) {
	name, addr, isIP, err := canonicalize(host)
	if err != nil {
		return err.Error(), CatUnparseable, netip.Addr{}, false
	}
	if isIP {
		return addr.String(), CategoryOf(addr), addr, true
	}
	return name, nameCategory(name), netip.Addr{}, false
}

// nameCategory classifies a canonical DNS name. Names that resolve to special
// addresses without asking DNS (/etc/hosts aliases and the names cloud
// providers resolve internally) are caught here; anything else can only be
// caught after resolution, which is not this file's job.
func nameCategory(name string) Category {
	switch name {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return CatLoopback
	case "metadata", "metadata.google.internal", "metadata.goog",
		"instance-data", "instance-data.ec2.internal":
		return CatMetadata
	}
	// RFC 6761: *.localhost is loopback, and glibc/systemd-resolved resolve
	// it that way without asking DNS.
	if strings.HasSuffix(name, ".localhost") {
		return CatLoopback
	}
	return CatNone
}

// canonicalize is CanonicalHost without building the string for IP literals,
// so that Match can run without allocating.
func canonicalize(host string) (name string, addr netip.Addr, isIP bool, err error) {
	if name, addr, isIP, ok := fastCanonical(host); ok {
		return name, addr, isIP, nil
	}
	return canonicalizeSlow(host)
}

// canonicalizeSlow handles every host; fastCanonical is a shortcut that must
// agree with it (FuzzClassify checks that).
func canonicalizeSlow(host string) (name string, addr netip.Addr, isIP bool, err error) {
	if host == "" {
		return "", netip.Addr{}, false, errors.New("empty host")
	}
	if len(host) > maxHostLen {
		return "", netip.Addr{}, false, fmt.Errorf("host is %d bytes long, more than %d", len(host), maxHostLen)
	}
	if looksIPv6(host) {
		return parseIPv6Host(host, true)
	}
	if strings.IndexByte(host, '%') >= 0 {
		decoded, ok := percentDecode(host)
		if !ok {
			return "", netip.Addr{}, false, fmt.Errorf("host %q has an invalid percent-encoding", clip(host))
		}
		if looksIPv6(decoded) {
			return parseIPv6Host(decoded, false)
		}
		if strings.IndexByte(decoded, '%') >= 0 {
			// Decoding once is what resolvers and browsers do; a host that
			// still has a '%' was double-encoded, which only an attacker does.
			return "", netip.Addr{}, false, fmt.Errorf("host %q is percent-encoded twice", clip(host))
		}
		host = decoded
	}
	return canonicalizeName(host)
}

// Byte classes for fastCanonical.
const (
	clsDigit  = 1 << iota // 0-9
	clsHex                // a-f
	clsLetter             // g-z
	clsDash               // - and _
	clsDot                // .
	clsColon              // :
)

var hostByteClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = clsDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clsLetter
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = clsHex
	}
	t['-'], t['_'], t['.'], t[':'] = clsDash, clsDash, clsDot, clsColon
	return t
}()

// fastCanonical recognises, in one pass and without allocating, hosts that
// are already canonical: what CanonicalHost returns and Match is given. It
// reports ok=false for anything else, including some canonical hosts (names
// with punycode labels or a numeric-looking last label), which the general
// path then handles.
func fastCanonical(h string) (name string, addr netip.Addr, isIP bool, ok bool) {
	if h == "" || len(h) > 253 {
		return "", netip.Addr{}, false, false
	}
	var seen uint8
	labelStart := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		cls := hostByteClass[c]
		if cls == 0 {
			return "", netip.Addr{}, false, false
		}
		seen |= cls
		if i == labelStart && c == 'x' && i+4 <= len(h) && h[i:i+4] == "xn--" {
			return "", netip.Addr{}, false, false // punycode needs validating
		}
		if c == '.' {
			if n := i - labelStart; n == 0 || n > 63 {
				return "", netip.Addr{}, false, false
			}
			labelStart = i + 1
		}
	}
	switch {
	case seen&clsColon != 0:
		// netip accepts exactly the canonical IPv6 spellings plus a few
		// more (upper case is excluded above), all of which mean the same
		// address.
		if seen&^(clsDigit|clsHex|clsDot|clsColon) != 0 {
			return "", netip.Addr{}, false, false
		}
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return "", netip.Addr{}, false, false
		}
		return "", normalizeAddr(a), true, true
	case seen&^(clsDigit|clsDot) == 0:
		// Strict dotted quad; the loose notations take the general path.
		a, err := netip.ParseAddr(h)
		if err != nil {
			return "", netip.Addr{}, false, false
		}
		return "", a, true, true
	}
	if n := len(h) - labelStart; n == 0 || n > 63 || hostByteClass[h[labelStart]] == clsDigit {
		// A trailing dot is not canonical, and a last label starting with
		// a digit may be a number that makes the host an IPv4 address.
		return "", netip.Addr{}, false, false
	}
	return h, netip.Addr{}, false, true
}

// looksIPv6 reports whether host can only be an IPv6 literal: DNS names never
// contain ':' and only IPv6 literals are bracketed.
func looksIPv6(host string) bool {
	return host[0] == '[' || strings.IndexByte(host, ':') >= 0
}

// parseIPv6Host parses a host that can only be an IPv6 literal, bracketed
// or not. With mayDecode it retries once after percent-decoding, which
// covers "%25" before a zone id (how URLs spell it) and encoded brackets or
// colons.
func parseIPv6Host(host string, mayDecode bool) (string, netip.Addr, bool, error) {
	inner := host
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return "", netip.Addr{}, false, fmt.Errorf("host %q has an unclosed '['", clip(host))
		}
		inner = host[1 : len(host)-1]
	}
	a, err := netip.ParseAddr(inner)
	if err == nil && a.Is6() {
		return "", normalizeAddr(a), true, nil
	}
	if mayDecode && strings.IndexByte(host, '%') >= 0 {
		if decoded, ok := percentDecode(host); ok && decoded != "" {
			return parseIPv6Host(decoded, false)
		}
	}
	return "", netip.Addr{}, false, fmt.Errorf("host %q is not a valid IPv6 address", clip(host))
}

// canonicalizeName handles a percent-decoded host that is not IPv6: an IPv4
// literal in some notation, or a DNS name, possibly Unicode.
func canonicalizeName(host string) (string, netip.Addr, bool, error) {
	ascii, upper := true, false
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 0x80 {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	name := host
	switch {
	case !ascii:
		mapped, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return "", netip.Addr{}, false, fmt.Errorf("host %q is not a valid internationalised name: %v", clip(host), err)
		}
		name = mapped
	case upper:
		name = strings.ToLower(host)
	}
	if name != "" && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	if name == "" {
		return "", netip.Addr{}, false, fmt.Errorf("host %q is empty", clip(host))
	}
	if endsInNumber(name) {
		// An IPv4 address in any notation, however long its zero padding,
		// is an address to every resolver, so DNS length rules do not apply.
		if v4, ok := parseIPv4Loose(name); ok {
			return "", netip.AddrFrom4(v4), true, nil
		}
		// For "evil.com@1.2.3.4" the bad character is the better message.
		if err := validateDNSName(name); err != nil {
			return "", netip.Addr{}, false, fmt.Errorf("host %q: %v", clip(host), err)
		}
		return "", netip.Addr{}, false, fmt.Errorf("host %q is not a valid IPv4 address", clip(host))
	}
	if err := validateDNSName(name); err != nil {
		return "", netip.Addr{}, false, fmt.Errorf("host %q: %v", clip(host), err)
	}
	return name, netip.Addr{}, false, nil
}

// validateDNSName checks a lower-case ASCII name: labels of 1-63 bytes from
// [a-z0-9_-], 253 bytes in all. Underscores are not valid hostnames, but
// they occur in real DNS names and resolvers look them up, so refusing them
// would only break users. Punycode labels must decode.
func validateDNSName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("name is %d bytes long, more than 253", len(name))
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '.' {
			c := name[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("invalid character %q", c)
			}
			continue
		}
		label := name[start:i]
		if label == "" {
			return errors.New("empty label")
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", label)
		}
		if len(label) >= 4 && label[:4] == "xn--" {
			if _, err := idna.Lookup.ToUnicode(label); err != nil {
				return fmt.Errorf("label %q is not valid punycode", label)
			}
		}
		start = i + 1
	}
	return nil
}

// percentDecode decodes %XX escapes. It reports false for a malformed escape
// rather than guessing, since guessing differently from the resolver is
// exactly the kind of gap SSRF payloads use.
func percentDecode(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, ok1 := digitValue(s[i+1])
		lo, ok2 := digitValue(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), true
}

// clip shortens s for an error message, so that hostile input cannot make
// errors (which end up in logs and denial reasons) arbitrarily large.
func clip(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
