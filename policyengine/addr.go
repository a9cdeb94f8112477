package policyengine

import (
	"net/netip"
	"strings"
)

// Category is a class of address that host patterns never grant.
//
// Name patterns such as "*:443" only ever match hosts of CatNone; every other
// category must be granted explicitly, either with an IP-literal pattern or a
// "preset:<category>" pattern. This is what keeps a broad allow rule from
// becoming an SSRF hole into the host, the local network or the cloud
// metadata service.
type Category string

const (
	// CatNone is an ordinary public address or hostname.
	CatNone Category = ""
	// CatLoopback is 127/8, ::1, 0.0.0.0/8 and :: (on Linux, connecting to
	// the unspecified address reaches localhost), and the names localhost,
	// *.localhost and the loopback aliases Debian puts in /etc/hosts.
	CatLoopback Category = "loopback"
	// CatPrivate is RFC 1918 space, CGNAT, benchmarking, ULA, multicast,
	// reserved and site-local ranges: anything that reaches the local network
	// rather than the internet.
	CatPrivate Category = "private_network"
	// CatLinkLocal is 169.254/16 and fe80::/10.
	CatLinkLocal Category = "link_local"
	// CatMetadata is a cloud instance metadata endpoint, by address or by
	// well-known name. It takes precedence over link-local and private.
	CatMetadata Category = "cloud_metadata"
	// CatUnparseable is a host that is neither an IP literal in any notation
	// nor a valid DNS name. Such hosts are never granted by name patterns,
	// because what a resolver makes of them is anyone's guess.
	CatUnparseable Category = "unparseable"
	// CatHost is an address of the machine corral runs on, other than
	// loopback: any address assigned to any of its interfaces (the primary
	// address, bridges such as docker0, veths, IPv6 global and link-local
	// addresses) or routed to it locally. A connection there reaches the
	// host's own services just as 127.0.0.1 does. Whether an address is
	// one is a host fact, not a property of the address: an Engine knows
	// it only through its HostAddrs, and it takes precedence over every
	// category but loopback.
	CatHost Category = "host"
)

// Categories lists every category except CatNone, for validating
// "preset:<category>".
func Categories() []Category {
	return []Category{CatLoopback, CatPrivate, CatLinkLocal, CatMetadata, CatUnparseable, CatHost}
}

// HostAddrs tells which addresses reach the machine corral runs on. The
// answer changes while corral runs (interfaces and addresses come and
// go), so an Engine asks at every check instead of keeping a list, and
// only about addresses that are not loopback already.
type HostAddrs interface {
	// IsHost reports whether a connection to a would reach this machine
	// itself. When it cannot tell it answers true: failing closed.
	IsHost(a netip.Addr) bool
}

// ParseIP parses host as an IP address in any notation a resolver or browser
// accepts: dotted quad; the inet_aton short forms (127.1, 127.0.1,
// 2130706433); octal (0177.0.0.1) and hex (0x7f.0.0.1, 0x7f000001) per
// component, mixed; IPv6 with or without brackets and with a zone id (dropped).
// IPv4-mapped addresses are returned Unmap()ed; other IPv6 forms that embed an
// IPv4 address are returned as IPv6 and classified by CategoryOf.
//
// It reports ok=false when host is not an IP literal in any notation,
// including when it looks numeric but a component is out of range (256 in a
// dotted quad, 0x100000000): Classify reports those as CatUnparseable rather
// than letting them pass as DNS names.
func ParseIP(host string) (addr netip.Addr, ok bool) {
	if len(host) > maxHostLen {
		return netip.Addr{}, false // as Classify: no host is that long
	}
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		return normalizeAddr(a), true
	}
	if strings.IndexByte(host, ':') >= 0 {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		return normalizeAddr(a), true
	}
	v4, ok := parseIPv4Loose(host)
	if !ok {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(v4), true
}

// normalizeAddr drops the zone (it does not change what the address is) and
// unmaps IPv4-mapped IPv6 so that "::ffff:127.0.0.1" and "127.0.0.1" compare
// equal.
func normalizeAddr(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// parseIPv4Loose parses s the way the WHATWG URL standard's IPv4 parser (and,
// for valid input, inet_aton) does: one to four dot-separated numbers, each
// decimal, octal with a leading 0, or hex with a leading 0x; the last number
// fills all remaining bytes. A single trailing dot is allowed. Out-of-range
// and overflowing numbers fail rather than wrap.
func parseIPv4Loose(s string) ([4]byte, bool) {
	if s == "" {
		return [4]byte{}, false
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	var parts [4]uint64
	n := 0
	for {
		dot := strings.IndexByte(s, '.')
		field := s
		if dot >= 0 {
			field = s[:dot]
		}
		if n == 4 {
			return [4]byte{}, false
		}
		v, ok := parseIPv4Number(field)
		if !ok {
			return [4]byte{}, false
		}
		parts[n] = v
		n++
		if dot < 0 {
			break
		}
		s = s[dot+1:]
	}
	for i := 0; i < n-1; i++ {
		if parts[i] > 255 {
			return [4]byte{}, false
		}
	}
	// The last number covers the 5-n low-order bytes.
	last := parts[n-1]
	if last >= 1<<(8*uint(5-n)) {
		return [4]byte{}, false
	}
	var v uint32
	for i := 0; i < n-1; i++ {
		v |= uint32(parts[i]) << (8 * uint(3-i))
	}
	v |= uint32(last)
	return [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}, true
}

// parseIPv4Number parses one component of a loose IPv4 address. Values above
// 2^32 are reported as 2^32 (still out of range for every position) so that
// long digit strings cannot overflow into a small value.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base = 16
		s = s[2:]
		if s == "" {
			// "0x" alone is zero to the WHATWG parser; treating it as an
			// address is the safe reading.
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		base = 8
		s = s[1:]
	}
	const limit = 1 << 32
	var v uint64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= base {
			return 0, false
		}
		if v < limit {
			v = v*base + d
			if v > limit {
				v = limit
			}
		}
	}
	return v, true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

// endsInNumber reports whether the last label of host (ignoring one trailing
// dot) is numeric: all digits, or a 0x hex number. Per the WHATWG URL
// standard such a host must parse as IPv4 or is invalid, so "1.2.3.4.5" and
// "999.1.1.1" are unparseable rather than DNS names.
func endsInNumber(host string) bool {
	if host != "" && host[len(host)-1] == '.' {
		host = host[:len(host)-1]
	}
	last := host
	if i := strings.LastIndexByte(host, '.'); i >= 0 {
		last = host[i+1:]
	}
	if last == "" {
		return false
	}
	allDigits := true
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			allDigits = false
			break
		}
	}
	if allDigits {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if _, ok := digitValue(last[i]); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// CategoryOf classifies a parsed address. For IPv6 forms that embed an IPv4
// address (mapped, compatible, SIIT-translated, NAT64 64:ff9b::/96 and 6to4
// 2002::/16) the embedded IPv4 address is what counts, since that is where
// the packets end up.
func CategoryOf(a netip.Addr) Category {
	if !a.IsValid() {
		return CatUnparseable
	}
	if a.Is4() {
		return categoryOf4(a.As4())
	}
	if a.Is4In6() {
		return categoryOf4(a.Unmap().As4())
	}
	b := a.As16()
	hi := be64(b[0:8])
	lo := be64(b[8:16])
	switch {
	case hi == 0 && lo == 0: // :: (unspecified) connects to localhost on Linux.
		return CatLoopback
	case hi == 0 && lo == 1: // ::1
		return CatLoopback
	case hi>>16 == 0x0064ff9b0001: // 64:ff9b:1::/48 local-use NAT64 (RFC 8215).
		return CatPrivate
	}
	if v4, ok := EmbeddedIPv4(a); ok {
		return categoryOf4(v4.As4())
	}
	if hi == 0xfd000ec200000000 && (lo == 0x254 || lo == 0x23) {
		// AWS IMDS over IPv6 (fd00:ec2::254) and the EKS pod identity
		// agent (fd00:ec2::23).
		return CatMetadata
	}
	switch {
	case b[0]&0xfe == 0xfc: // fc00::/7 unique local.
		return CatPrivate
	case b[0] == 0xfe && b[1]&0xc0 == 0x80: // fe80::/10.
		return CatLinkLocal
	case b[0] == 0xfe && b[1]&0xc0 == 0xc0: // fec0::/10 site-local (deprecated).
		return CatPrivate
	case b[0] == 0xff: // ff00::/8 multicast.
		return CatPrivate
	}
	return CatNone
}

// EmbeddedIPv4 returns the IPv4 address an IPv6 address carries to where
// its packets end up: IPv4-mapped, IPv4-compatible (deprecated, but not
// for ::1 and ::), SIIT-translated, NAT64 64:ff9b::/96 and 6to4 2002::/16.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4In6() {
		return a.Unmap(), true
	}
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	hi := be64(b[0:8])
	lo := be64(b[8:16])
	switch {
	case hi == 0 && lo <= 1:
		return netip.Addr{}, false // :: and ::1 are IPv6's own
	case hi == 0 && lo>>32 == 0: // ::a.b.c.d, IPv4-compatible (deprecated).
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case hi == 0 && lo>>32 == 0xffff0000: // ::ffff:0:a.b.c.d, SIIT.
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case hi == 0x0064ff9b00000000 && lo>>32 == 0: // 64:ff9b::/96 NAT64.
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case hi>>48 == 0x2002: // 2002::/16 6to4.
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

func be64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// categoryOf4 classifies an IPv4 address with plain integer compares; this
// is on the hot path of every match.
func categoryOf4(b [4]byte) Category {
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	switch v {
	case 0xa9fea9fe, // 169.254.169.254: AWS, GCP, Azure, OpenStack, ...
		0xa9feaa02, // 169.254.170.2: ECS task metadata.
		0xa9feaa17, // 169.254.170.23: EKS pod identity agent.
		0x646464c8, // 100.100.100.200: Alibaba Cloud.
		0xa83f8110: // 168.63.129.16: Azure wireserver.
		return CatMetadata
	}
	in := func(prefix uint32, bits uint) bool { return v>>(32-bits) == prefix>>(32-bits) }
	switch {
	case in(0x7f000000, 8), in(0x00000000, 8): // 127/8, 0/8
		return CatLoopback
	case in(0xa9fe0000, 16): // 169.254/16
		return CatLinkLocal
	case in(0x0a000000, 8), // 10/8
		in(0xac100000, 12), // 172.16/12
		in(0xc0a80000, 16), // 192.168/16
		in(0x64400000, 10), // 100.64/10 CGNAT
		in(0xc6120000, 15), // 198.18/15 benchmarking
		in(0xc0000000, 24), // 192.0.0/24 IETF protocol assignments
		in(0xe0000000, 4),  // 224/4 multicast
		in(0xf0000000, 4):  // 240/4 reserved, includes 255.255.255.255
		return CatPrivate
	}
	return CatNone
}
