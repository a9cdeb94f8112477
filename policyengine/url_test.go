package policyengine

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw      string
		want     string // canonical String()
		host     string
		port     int
		path     string
		cat      Category
		isIP     bool
		rawQuery string
	}{
		// Default ports and case.
		{"http://example.com", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"https://example.com/", "https://example.com/", "example.com", 443, "/", CatNone, false, ""},
		{"ws://example.com/s", "ws://example.com/s", "example.com", 80, "/s", CatNone, false, ""},
		{"wss://example.com/s", "wss://example.com/s", "example.com", 443, "/s", CatNone, false, ""},
		{"ftp://example.com/f", "ftp://example.com/f", "example.com", 21, "/f", CatNone, false, ""},
		{"HTTPS://EXAMPLE.COM./A/B", "https://example.com/A/B", "example.com", 443, "/A/B", CatNone, false, ""},
		{"https://example.com:443/", "https://example.com/", "example.com", 443, "/", CatNone, false, ""},
		{"https://example.com:8443/", "https://example.com:8443/", "example.com", 8443, "/", CatNone, false, ""},
		{"http://example.com:/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http://example.com:0080/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"https://example.com/p?q=1&r=2#frag", "https://example.com/p?q=1&r=2", "example.com", 443, "/p", CatNone, false, "q=1&r=2"},
		{"https://example.com?q", "https://example.com/?q", "example.com", 443, "/", CatNone, false, "q"},
		{"https://example.com#f", "https://example.com/", "example.com", 443, "/", CatNone, false, ""},

		// Userinfo: the host is after the last '@' of the authority.
		{"http://evil.com@127.0.0.1/", "http://127.0.0.1/", "127.0.0.1", 80, "/", CatLoopback, true, ""},
		{"http://user:pass@example.com/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http://a@b@169.254.169.254/", "http://169.254.169.254/", "169.254.169.254", 80, "/", CatMetadata, true, ""},
		{"http://127.0.0.1:80@evil.com/", "http://evil.com/", "evil.com", 80, "/", CatNone, false, ""},
		{"http://evil.com#@127.0.0.1/", "http://evil.com/", "evil.com", 80, "/", CatNone, false, ""},
		{"http://evil.com?@127.0.0.1/", "http://evil.com/?@127.0.0.1/", "evil.com", 80, "/", CatNone, false, "@127.0.0.1/"},
		{"http://evil.com/@127.0.0.1/", "http://evil.com/@127.0.0.1/", "evil.com", 80, "/@127.0.0.1/", CatNone, false, ""},

		// Backslashes end the authority, as in browsers, where RFC 3986
		// clients agree on the host (see TestParseURLErrors for where not).
		{"http://example.com\\@example.com/", "http://example.com/@example.com/", "example.com", 80, "/@example.com/", CatNone, false, ""},
		{"http://u@127.0.0.1:8080\\@127.0.0.1:8080", "http://127.0.0.1:8080/@127.0.0.1:8080", "127.0.0.1", 8080, "/@127.0.0.1:8080", CatLoopback, true, ""},
		{"http:\\\\127.0.0.1\\a\\b", "http://127.0.0.1/a/b", "127.0.0.1", 80, "/a/b", CatLoopback, true, ""},
		{"http:/\\example.com/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http:///example.com/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http:example.com/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"https://example.com/a\\b?c\\d", "https://example.com/a/b?c\\d", "example.com", 443, "/a/b", CatNone, false, "c\\d"},

		// Dot segments.
		{"http://example.com/a/b/../c", "http://example.com/a/c", "example.com", 80, "/a/c", CatNone, false, ""},
		{"http://example.com/a/./b/.", "http://example.com/a/b/", "example.com", 80, "/a/b/", CatNone, false, ""},
		{"http://example.com/../../etc/passwd", "http://example.com/etc/passwd", "example.com", 80, "/etc/passwd", CatNone, false, ""},
		{"http://example.com/a/%2e%2E/b", "http://example.com/b", "example.com", 80, "/b", CatNone, false, ""},
		{"http://example.com/a/.%2e/b", "http://example.com/b", "example.com", 80, "/b", CatNone, false, ""},
		{"http://example.com/a/%2e/b", "http://example.com/a/b", "example.com", 80, "/a/b", CatNone, false, ""},
		{"http://example.com/a/..", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http://example.com/a/..b", "http://example.com/a/..b", "example.com", 80, "/a/..b", CatNone, false, ""},
		{"http://example.com/a/..?x=/../", "http://example.com/?x=/../", "example.com", 80, "/", CatNone, false, "x=/../"},

		// Hosts in every notation.
		{"http://0x7f.1:80/", "http://127.0.0.1/", "127.0.0.1", 80, "/", CatLoopback, true, ""},
		{"http://2130706433/", "http://127.0.0.1/", "127.0.0.1", 80, "/", CatLoopback, true, ""},
		{"http://0177.0.0.1:8080/", "http://127.0.0.1:8080/", "127.0.0.1", 8080, "/", CatLoopback, true, ""},
		{"http://%31%32%37.0.0.1/", "http://127.0.0.1/", "127.0.0.1", 80, "/", CatLoopback, true, ""},
		{"http://[::1]:8080/x", "http://[::1]:8080/x", "::1", 8080, "/x", CatLoopback, true, ""},
		{"http://[::ffff:169.254.169.254]/", "http://169.254.169.254/", "169.254.169.254", 80, "/", CatMetadata, true, ""},
		{"http://[fd00:ec2::254]/latest", "http://[fd00:ec2::254]/latest", "fd00:ec2::254", 80, "/latest", CatMetadata, true, ""},
		{"http://[fe80::1%25eth0]/", "http://[fe80::1]/", "fe80::1", 80, "/", CatLinkLocal, true, ""},
		{"http://2852039166/latest/meta-data/", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", 80, "/latest/meta-data/", CatMetadata, true, ""},
		{"http://metadata.google.internal/computeMetadata/v1/", "http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal", 80, "/computeMetadata/v1/", CatMetadata, false, ""},
		{"http://localhost:3000/", "http://localhost:3000/", "localhost", 3000, "/", CatLoopback, false, ""},
		{"http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/", "xn--bcher-kva.de", 80, "/", CatNone, false, ""},
		{"http://bücher.de/", "http://xn--bcher-kva.de/", "xn--bcher-kva.de", 80, "/", CatNone, false, ""},
		{"http://ｅｘａｍｐｌｅ。com/", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http://8.8.8.8/", "http://8.8.8.8/", "8.8.8.8", 80, "/", CatNone, true, ""},

		// Tabs and newlines vanish; surrounding space and controls are trimmed.
		{" \thttp://exa\tmple.com/\n ", "http://example.com/", "example.com", 80, "/", CatNone, false, ""},
		{"http://127.0.0.\n1/", "http://127.0.0.1/", "127.0.0.1", 80, "/", CatLoopback, true, ""},

		// Path and query bytes that are not valid in a URL get encoded.
		{"http://example.com/a b/ü?q=a b", "http://example.com/a%20b/%C3%BC?q=a%20b", "example.com", 80, "/a%20b/%C3%BC", CatNone, false, "q=a%20b"},
		{"http://example.com/%41", "http://example.com/%41", "example.com", 80, "/%41", CatNone, false, ""},
	}
	for _, tt := range tests {
		u, err := ParseURL(tt.raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.raw, err)
			continue
		}
		if got := u.String(); got != tt.want {
			t.Errorf("ParseURL(%q).String() = %q, want %q", tt.raw, got, tt.want)
		}
		if u.Host != tt.host || u.Port != tt.port || u.Path != tt.path || u.Category != tt.cat || u.IsIP != tt.isIP || u.RawQuery != tt.rawQuery {
			t.Errorf("ParseURL(%q) = %+v; want host %q port %d path %q category %q isIP %v query %q",
				tt.raw, u, tt.host, tt.port, tt.path, tt.cat, tt.isIP, tt.rawQuery)
		}
		if u.IsIP && u.Addr.String() != u.Host {
			t.Errorf("ParseURL(%q): Addr %v does not match Host %q", tt.raw, u.Addr, u.Host)
		}
		again, err := ParseURL(u.String())
		again.RawPath = u.RawPath // as written, before dot segments are resolved
		if err != nil || again != u {
			t.Errorf("ParseURL(%q) is not idempotent: %+v then %+v, %v", tt.raw, u, again, err)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct {
		raw, errPart string
	}{
		{"", "missing scheme"},
		{"example.com", "missing scheme"},
		{"//example.com/", "missing scheme"},
		{"://example.com/", "missing scheme"},
		{"1http://example.com/", "missing scheme"},
		{"ht tp://example.com/", "missing scheme"},
		{"file:///etc/passwd", "unsupported scheme \"file\""},
		{"gopher://127.0.0.1:70/", "unsupported scheme"},
		{"javascript:alert(1)", "unsupported scheme"},
		{"http://", "missing host"},
		{"http:///", "missing host"},
		{"http://:80/", "missing host"},
		{"http://user@/", "missing host"},
		{"http://?x", "missing host"},
		{"http://example.com:0/", "out of range"},
		{"http://example.com:65536/", "out of range"},
		{"http://example.com:99999999999999999999/", "out of range"},
		{"http://example.com:8o/", "not a number"},
		{"http://example.com:80:80/", "not a number"},
		{"http://example.com:-1/", "not a number"},
		{"http://::1/", "missing host"},
		{"http://[::1/", "missing ']'"},
		{"http://[::1]x/", "after ']'"},
		{"http://[127.0.0.1]/", "IPv6"},
		{"http://1.2.3.4.5/", "IPv4"},
		{"http://999.1.1.1/", "IPv4"},
		{"http://0x7g.1/", "IPv4"},
		{"http://exa mple.com/", "invalid character"},
		{"http://ex%ample.com/", "percent"},
		{"http://evil.com%40127.0.0.1/", "invalid character"},
		{"http://evil.com%2f127.0.0.1/", "invalid character"},

		// Browsers and RFC 3986 clients would connect to different hosts.
		{"http://127.0.0.1\\@evil.com", "ambiguous"},
		{"http://127.0.0.1\\\\@evil.com/", "ambiguous"},
		{"http://evil.com\\@127.0.0.1/", "ambiguous"},
		{"http://evil.com\\@169.254.169.254/latest/", "ambiguous"},
		{"http://a.com\\@b.com/", "ambiguous"},
		{"http://example.com\\@example.com:8080/", "ambiguous"},
		{"http://example.com\\x", "ambiguous"},
		{"https://example.com\\?@127.0.0.1/", "ambiguous"},
	}
	for _, tt := range tests {
		u, err := ParseURL(tt.raw)
		if err == nil {
			t.Errorf("ParseURL(%q) = %q, want an error", tt.raw, u)
			continue
		}
		if !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("ParseURL(%q) error %q does not mention %q", tt.raw, err, tt.errPart)
		}
	}
}
