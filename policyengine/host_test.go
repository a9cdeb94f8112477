package policyengine

import (
	"strings"
	"testing"
)

func TestParseHostPattern(t *testing.T) {
	tests := []struct {
		in, want string
		preset   Category
		isIP     bool
	}{
		{"example.com:443", "example.com:443", CatNone, false},
		{"EXAMPLE.COM.:443", "example.com:443", CatNone, false},
		{"  example.com:443  ", "example.com:443", CatNone, false},
		{"example.com:*", "example.com:*", CatNone, false},
		{"example.com:0443", "example.com:443", CatNone, false},
		{"*.example.com:443", "*.example.com:443", CatNone, false},
		{"*.Example.COM:80", "*.example.com:80", CatNone, false},
		{"*:443", "*:443", CatNone, false},
		{"*:*", "*:*", CatNone, false},
		{"bücher.de:443", "xn--bcher-kva.de:443", CatNone, false},
		{"*.bücher.de:443", "*.xn--bcher-kva.de:443", CatNone, false},
		{"1.2.3.4:80", "1.2.3.4:80", CatNone, true},
		{"127.0.0.1:8080", "127.0.0.1:8080", CatNone, true},
		{"0x7f.1:8080", "127.0.0.1:8080", CatNone, true},
		{"[::1]:8080", "[::1]:8080", CatNone, true},
		{"[::ffff:127.0.0.1]:8080", "127.0.0.1:8080", CatNone, true},
		{"[2001:DB8::1]:*", "[2001:db8::1]:*", CatNone, true},
		{"preset:loopback", "preset:loopback", CatLoopback, false},
		{"preset:loopback:8080", "preset:loopback:8080", CatLoopback, false},
		{"preset:loopback:*", "preset:loopback", CatLoopback, false},
		{"PRESET:Private_Network", "preset:private_network", CatPrivate, false},
		{"preset:link_local:53", "preset:link_local:53", CatLinkLocal, false},
		{"preset:cloud_metadata:80", "preset:cloud_metadata:80", CatMetadata, false},
		{"preset:unparseable", "preset:unparseable", CatUnparseable, false},
		{"example.com:65535", "example.com:65535", CatNone, false},
		{"example.com:1", "example.com:1", CatNone, false},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.in)
		if err != nil {
			t.Errorf("ParseHostPattern(%q): %v", tt.in, err)
			continue
		}
		if got := p.String(); got != tt.want {
			t.Errorf("ParseHostPattern(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		if got := p.Preset(); got != tt.preset {
			t.Errorf("ParseHostPattern(%q).Preset() = %q, want %q", tt.in, got, tt.preset)
		}
		if got := p.IsIP(); got != tt.isIP {
			t.Errorf("ParseHostPattern(%q).IsIP() = %v, want %v", tt.in, got, tt.isIP)
		}
		again, err := ParseHostPattern(p.String())
		if err != nil || again != p {
			t.Errorf("ParseHostPattern(%q) does not round-trip through %q: %+v, %v", tt.in, p.String(), again, err)
		}
	}
}

func TestParseHostPatternErrors(t *testing.T) {
	tests := []struct {
		in      string
		errPart string // the error must mention this
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"localhost:3000", `write "preset:loopback:3000"`},
		{"*.localhost:80", "loopback name"},
		{"metadata.google.internal:80", "preset:cloud_metadata:80"},
		{"example.com", "missing port"},
		{"example.com:", "missing port"},
		{"[::1]", "missing port"},
		{":443", "empty host"},
		{"example.com:0", "port 0 is out of range 1-65535"},
		{"example.com:70000", "port 70000 is out of range 1-65535"},
		{"example.com:65536", "port 65536 is out of range 1-65535"},
		{"example.com:99999999999999999999", "out of range"},
		{"*:abc", `port "abc" is not a number`},
		{"*:-1", "not a number"},
		{"*:+80", "not a number"},
		{"*:8 0", "not a number"},
		{"*.:443", `"*."`},
		{"*.", "missing port"},
		{"a*b.com:443", "wildcard"},
		{"*foo.com:443", "wildcard"},
		{"**.com:443", "wildcard"},
		{"*.*.com:443", "wildcard"},
		{"foo.*.com:443", "wildcard"},
		{"foo.*:443", "wildcard"},
		{"*.127.0.0.1:443", "IP address"},
		{"*.[::1]:443", "IPv6"},
		{"::1:443", "brackets"},
		{"[::1:443", "missing ']'"},
		{"[::1]443", "after ']'"},
		{"[127.0.0.1]:443", "IPv6"},
		{"exa mple.com:443", "invalid character"},
		{"exa_mple.com/x:443", "invalid character"},
		{"1.2.3.4.5:80", "IPv4"},
		{"999.1.1.1:80", "IPv4"},
		{"a..b:80", "empty label"},
		{"preset:bogus", `unknown preset "bogus"`},
		{"preset:", "unknown preset"},
		{"preset:loopback:0", "out of range"},
		{"preset:loopback:x", "not a number"},
		{"preset:loopback:", "missing port"},
		{"preset:none", "unknown preset"},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.in)
		if err == nil {
			t.Errorf("ParseHostPattern(%q) = %q, want an error", tt.in, p)
			continue
		}
		if !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("ParseHostPattern(%q) error %q does not mention %q", tt.in, err, tt.errPart)
		}
	}
}

func TestHostPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		host    string
		port    int
		want    bool
	}{
		// "*" grants public hosts, by name or address, never special ones.
		{"*:443", "example.com", 443, true},
		{"*:443", "8.8.8.8", 443, true},
		{"*:443", "2606:4700:4700::1111", 443, true},
		{"*:443", "example.com", 80, false},
		{"*:443", "127.0.0.1", 443, false},
		{"*:443", "::1", 443, false},
		{"*:443", "0.0.0.0", 443, false},
		{"*:443", "localhost", 443, false},
		{"*:443", "foo.localhost", 443, false},
		{"*:443", "169.254.169.254", 443, false},
		{"*:443", "metadata.google.internal", 443, false},
		{"*:443", "10.0.0.1", 443, false},
		{"*:443", "192.168.1.1", 443, false},
		{"*:443", "fe80::1", 443, false},
		{"*:443", "1.2.3.4.5", 443, false},
		{"*:443", "", 443, false},
		{"*:*", "example.com", 1, true},
		{"*:*", "example.com", 65535, true},
		{"*:*", "127.0.0.1", 22, false},

		// Non-canonical hosts are canonicalised before the rules apply.
		{"*:443", "0x7f.1", 443, false},
		{"*:443", "2130706433", 443, false},
		{"*:443", "[::ffff:127.0.0.1]", 443, false},
		{"*:443", "LOCALHOST.", 443, false},
		{"*:443", "Example.COM.", 443, true},

		// Exact names.
		{"example.com:443", "example.com", 443, true},
		{"example.com:443", "EXAMPLE.com.", 443, true},
		{"example.com:443", "a.example.com", 443, false},
		{"example.com:443", "example.org", 443, false},
		{"example.com:443", "example.com", 8443, false},
		{"example.com:*", "example.com", 8443, true},
		{"bücher.de:443", "xn--bcher-kva.de", 443, true},
		{"xn--bcher-kva.de:443", "bücher.de", 443, true},

		// Subdomain wildcards.
		{"*.example.com:443", "a.example.com", 443, true},
		{"*.example.com:443", "a.b.example.com", 443, true},
		{"*.example.com:443", "example.com", 443, false},
		{"*.example.com:443", "badexample.com", 443, false},
		{"*.example.com:443", "a.badexample.com", 443, false},
		{"*.example.com:443", "example.com.evil.com", 443, false},
		{"*.example.com:443", ".example.com", 443, false},
		{"*.example.com:443", "A.EXAMPLE.COM.", 443, true},
		{"*.example.com:443", "a.example.com", 80, false},
		{"*.com:443", "example.com", 443, true},

		// IP literals match the address, in any notation, whatever its category.
		{"127.0.0.1:8080", "127.0.0.1", 8080, true},
		{"127.0.0.1:8080", "0x7f.1", 8080, true},
		{"127.0.0.1:8080", "::ffff:127.0.0.1", 8080, true},
		{"127.0.0.1:8080", "127.0.0.2", 8080, false},
		{"127.0.0.1:8080", "127.0.0.1", 8081, false},
		{"127.0.0.1:8080", "localhost", 8080, false},
		{"[::1]:8080", "::1", 8080, true},
		{"[::1]:8080", "[::1]", 8080, true},
		{"[::1]:8080", "127.0.0.1", 8080, false},
		{"[::1]:*", "::1", 1234, true},
		{"8.8.8.8:53", "8.8.8.8", 53, true},
		{"8.8.8.8:53", "134744072", 53, true},
		{"8.8.8.8:53", "dns.google", 53, false},
		{"169.254.169.254:80", "169.254.169.254", 80, true},
		{"[fe80::1]:80", "fe80::1%eth0", 80, true},

		// Presets grant a category.
		{"preset:loopback", "127.0.0.5", 8080, true},
		{"preset:loopback:8080", "127.0.0.5", 8080, true},
		{"preset:loopback:8080", "127.0.0.5", 8081, false},
		{"preset:loopback", "::1", 22, true},
		{"preset:loopback", "localhost", 22, true},
		{"preset:loopback", "a.localhost", 22, true},
		{"preset:loopback", "0.0.0.0", 22, true},
		{"preset:loopback", "10.0.0.1", 22, false},
		{"preset:loopback", "example.com", 22, false},
		{"preset:private_network", "10.0.0.1", 22, true},
		{"preset:private_network", "fd12::1", 22, true},
		{"preset:private_network", "169.254.169.254", 80, false},
		{"preset:link_local", "169.254.1.1", 80, true},
		{"preset:link_local", "169.254.169.254", 80, false},
		{"preset:cloud_metadata", "169.254.169.254", 80, true},
		{"preset:cloud_metadata", "metadata.google.internal", 80, true},
		{"preset:cloud_metadata", "fd00:ec2::254", 80, true},
		{"preset:unparseable", "1.2.3.4.5", 80, true},
		{"preset:unparseable", "example.com", 80, false},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParseHostPattern(%q): %v", tt.pattern, err)
		}
		if got := p.Match(tt.host, tt.port); got != tt.want {
			t.Errorf("%q.Match(%q, %d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestZeroHostPatternMatchesNothing(t *testing.T) {
	var p HostPattern
	if p.Match("example.com", 443) || p.Match("127.0.0.1", 80) {
		t.Error("the zero HostPattern matched")
	}
	if p.String() != "" || p.Preset() != CatNone || p.IsIP() {
		t.Errorf("zero HostPattern: String %q, Preset %q, IsIP %v", p.String(), p.Preset(), p.IsIP())
	}
}

func TestCanonicalHostIdempotent(t *testing.T) {
	for _, in := range []string{
		"Example.COM.", "bücher.de", "0x7f.1", "[::ffff:7f00:1]", "[FE80::1%25eth0]",
		"%31%32%37.0.0.1", "ｅｘａｍｐｌｅ。com", "2002:7f00:1::", "foo.LOCALHOST",
	} {
		once, err := CanonicalHost(in)
		if err != nil {
			t.Errorf("CanonicalHost(%q): %v", in, err)
			continue
		}
		twice, err := CanonicalHost(once)
		if err != nil || twice != once {
			t.Errorf("CanonicalHost(%q) = %q, but CanonicalHost(%q) = %q, %v", in, once, once, twice, err)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	p, err := ParseHostPattern("*.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := ParseHostPattern("*:443")
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		p.Match("api.example.com", 443)
		anyHost.Match("127.0.0.1", 443)
		anyHost.Match("2606:4700:4700::1111", 443)
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run on canonical hosts", allocs)
	}
}

func BenchmarkHostPatternMatch(b *testing.B) {
	cases := []struct{ pattern, host string }{
		{"*.example.com:443", "api.example.com"},
		{"example.com:443", "example.com"},
		{"*:443", "8.8.8.8"},
		{"*:443", "127.0.0.1"},
		{"[::1]:443", "::1"},
		{"preset:loopback", "127.0.0.5"},
	}
	for _, c := range cases {
		p, err := ParseHostPattern(c.pattern)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.pattern+"/"+c.host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Match(c.host, 443)
			}
		})
	}
}
