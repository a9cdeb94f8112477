package policyengine

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

var fuzzHostSeeds = []string{
	"", ".", "example.com", "EXAMPLE.com.", "bücher.de", "xn--bcher-kva.de", "xn--zz",
	"localhost", "foo.localhost", "metadata.google.internal", "_dmarc.example.com",
	"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1",
	"0177.0.0.1", "017700000001", "0x7f.1", "0X7F.1", "127.0.0.1.", "127.0.0.1..",
	"%31%32%37.0.0.1", "０x7f.1", "１２７。０。０。１", "::ffff:127.0.0.1", "::ffff:7f00:1",
	"[::1]", "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "fe80::1%eth0",
	"[fe80::1%25eth0]", "%5b::1%5d", "2852039166", "0xa9fea9fe", "[fd00:ec2::254]",
	"1.2.3.4.5", "0x7g.1", "999.1.1.1", "4294967296", "0x", "08.1", "a b", "ex%ample.com",
	"a..b", "[127.0.0.1]", "1.2.3.4a", "\xff", "%ff", "\u00ad", "a\u200db",
	// Found by fuzzing.
	strings.Repeat("0", 65),
}

// FuzzClassify checks that Classify never panics, that canonical output is a
// fixed point, that the allocation-free fast path agrees with the general
// one, and that nothing a strict IP parser accepts slips through as a name.
func FuzzClassify(f *testing.F) {
	for _, s := range fuzzHostSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		canonical, cat, addr, isIP := Classify(host)
		got, err := CanonicalHost(host)
		if (err != nil) != (cat == CatUnparseable) {
			t.Fatalf("Classify(%q) = %q but CanonicalHost error = %v", host, cat, err)
		}

		if name, a, ip, ok := fastCanonical(host); ok {
			sName, sAddr, sIP, sErr := canonicalizeSlow(host)
			if sErr != nil || sName != name || sAddr != a || sIP != ip {
				t.Fatalf("fastCanonical(%q) = %q, %v, %v but the general path gives %q, %v, %v, %v",
					host, name, a, ip, sName, sAddr, sIP, sErr)
			}
		}

		if a, ok := ParseIP(host); ok {
			if !isIP || addr != a {
				t.Fatalf("ParseIP(%q) = %v but Classify gives %q, %v, isIP=%v", host, a, canonical, addr, isIP)
			}
		}
		if a, err := netip.ParseAddr(host); err == nil && len(host) <= maxHostLen {
			if !isIP || addr != normalizeAddr(a) {
				t.Fatalf("netip parses %q as %v but Classify gives %q, %v, isIP=%v", host, a, canonical, addr, isIP)
			}
		}

		if cat == CatUnparseable {
			if isIP {
				t.Fatalf("Classify(%q): unparseable but isIP", host)
			}
			return
		}
		if got != canonical {
			t.Fatalf("CanonicalHost(%q) = %q but Classify gives %q", host, got, canonical)
		}
		if isIP {
			if addr.String() != canonical || CategoryOf(addr) != cat || addr.Zone() != "" || addr.Is4In6() {
				t.Fatalf("Classify(%q) = %q, %q, %v: inconsistent", host, canonical, cat, addr)
			}
		} else if _, ok := ParseIP(canonical); ok {
			t.Fatalf("Classify(%q) = name %q, but ParseIP accepts it", host, canonical)
		}
		c2, cat2, addr2, isIP2 := Classify(canonical)
		if c2 != canonical || cat2 != cat || addr2 != addr || isIP2 != isIP {
			t.Fatalf("Classify(%q) = %q, %q, %v; Classify of that = %q, %q, %v", host, canonical, cat, addr, c2, cat2, addr2)
		}
		if _, _, _, ok := fastCanonical(canonical); !ok && !isIP && !strings.Contains(canonical, "xn--") && !endsInNumberish(canonical) {
			t.Fatalf("canonical name %q misses the fast path", canonical)
		}
	})
}

// endsInNumberish mirrors the fast path's refusal of names whose last label
// starts with a digit.
func endsInNumberish(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	return last != "" && last[0] >= '0' && last[0] <= '9'
}

// FuzzParseHostPattern checks that parsing never panics, that String()
// round-trips, and that name patterns never grant special hosts.
func FuzzParseHostPattern(f *testing.F) {
	for _, s := range []string{
		"example.com:443", "*.example.com:443", "*:443", "*:*", "[::1]:8080", "1.2.3.4:80",
		"0x7f.1:80", "preset:loopback", "preset:loopback:8080", "preset:cloud_metadata:*",
		"bücher.de:443", "*.bücher.de:*", "example.com:0", "example.com:70000", "*.:443",
		"a*b.com:443", "*:abc", ":443", "::1:443", "[::1", "*.[::1]:80", "preset:bogus",
		"localhost:3000", " example.com:443 ", "[fe80::1%25eth0]:80",
	} {
		f.Add(s, "127.0.0.1", 443)
	}
	f.Add("*.example.com:443", "a.example.com", 443)
	f.Add("preset:private_network", "10.0.0.1", 22)
	f.Fuzz(func(t *testing.T, s, host string, port int) {
		p, err := ParseHostPattern(s)
		if err != nil {
			if p != (HostPattern{}) {
				t.Fatalf("ParseHostPattern(%q) failed but returned %+v", s, p)
			}
			return
		}
		text := p.String()
		again, err := ParseHostPattern(text)
		if err != nil || again != p {
			t.Fatalf("ParseHostPattern(%q) = %q, which parses to %+v, %v", s, text, again, err)
		}
		matched := p.Match(host, port)
		if _, cat, _, _ := Classify(host); matched && p.Preset() == CatNone && !p.IsIP() && cat != CatNone {
			t.Fatalf("name pattern %q matched %q (category %q)", text, host, cat)
		}
		if canonical, err := CanonicalHost(host); err == nil && p.Match(canonical, port) != matched {
			t.Fatalf("%q.Match differs for %q and its canonical form %q", text, host, canonical)
		}
		for _, special := range []string{"127.0.0.1", "localhost", "169.254.169.254", "10.0.0.1", "::1"} {
			if p.Preset() == CatNone && !p.IsIP() && p.Match(special, port) {
				t.Fatalf("name pattern %q matched %q", text, special)
			}
		}
	})
}

// FuzzParseURL checks that parsing never panics, that canonical URLs are a
// fixed point, and that where Go's net/url also finds an authority it agrees
// on the host and port: a disagreement is exactly an SSRF parser gap.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://EXAMPLE.COM./A/../B?q#f", "http://evil.com@127.0.0.1/",
		"http://127.0.0.1\\@evil.com", "http:\\\\127.0.0.1\\a", "http:///example.com",
		"http:example.com", "http://0x7f.1:80/", "http://[::ffff:169.254.169.254]/",
		"http://xn--bcher-kva.de/", "http://bücher.de/", "ws://[fe80::1%25eth0]:8080/x",
		"ftp://a:b@c:21/%2e%2e/x", "http://example.com:0/", "http://example.com:65536/",
		"file:///etc/passwd", "http://", "http://a@b@c/", "http://evil.com#@127.0.0.1/",
		"http://evil.com?@127.0.0.1/", "http://127.0.0.\n1/", " http://x/ ", "http://a/ü?é",
		"http://[::1]:80:80/", "http://%31%32%37.0.0.1/",
		// Found by fuzzing.
		"http:0?\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseURL(raw)
		if err != nil {
			if u != (URL{}) {
				t.Fatalf("ParseURL(%q) failed but returned %+v", raw, u)
			}
			return
		}
		if u.Port < 1 || u.Port > 65535 || !strings.HasPrefix(u.Path, "/") || u.Host == "" {
			t.Fatalf("ParseURL(%q) = %+v: out of shape", raw, u)
		}
		canonical, cat, addr, isIP := Classify(u.Host)
		if canonical != u.Host || cat != u.Category || addr != u.Addr || isIP != u.IsIP {
			t.Fatalf("ParseURL(%q) = %+v but Classify(%q) = %q, %q, %v, %v", raw, u, u.Host, canonical, cat, addr, isIP)
		}
		text := u.String()
		again, err := ParseURL(text)
		// The raw path is as written; its canonical reading is the
		// same again.
		a, b := again, u
		a.RawPath, b.RawPath = "", ""
		if err != nil || a != b || again.Readings().Canonical != u.Readings().Canonical {
			t.Fatalf("ParseURL(%q) = %+v, String %q parses to %+v, %v", raw, u, text, again, err)
		}
		// A backslash may stay in the query (browsers leave it there too),
		// never before it, where it would change the authority or path.
		if strings.ContainsAny(text, " \t\r\n#\"<>") || strings.Contains(strings.SplitN(text, "?", 2)[0], `\`) {
			t.Fatalf("ParseURL(%q).String() = %q contains bytes a URL must not", raw, text)
		}

		// Differential check against net/url where it has the same view of
		// the input: a "scheme://" prefix, no backslashes or control bytes
		// that the two standards treat differently.
		if i := strings.Index(raw, "://"); i <= 0 || strings.HasPrefix(raw[i+3:], "/") ||
			strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == '\\' || r == 0x7f }) {
			return
		}
		std, err := url.Parse(raw)
		if err != nil || std.Host == "" {
			return
		}
		stdHost, stdCat, _, _ := Classify(std.Hostname())
		if stdCat != CatUnparseable && stdHost != u.Host {
			t.Fatalf("ParseURL(%q) host %q, net/url host %q (canonical %q)", raw, u.Host, std.Hostname(), stdHost)
		}
		if p := std.Port(); p != "" {
			if n, err := strconv.Atoi(p); err == nil && n != u.Port {
				t.Fatalf("ParseURL(%q) port %d, net/url port %q", raw, u.Port, p)
			}
		}
	})
}
