package policyengine

import (
	"net/netip"
	"testing"
)

func TestParseIPNotations(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means not an IP literal
	}{
		// Every way of writing 127.0.0.1 that some resolver or browser accepts.
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F000001", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0x7F.0x0.0x0.0x1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"0177.1", "127.0.0.1"},
		{"0x7f.0.1", "127.0.0.1"},
		{"127.0x0.01", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"000000000000000000000177.0.0.1", "127.0.0.1"},
		{"0127.0.0.1", "87.0.0.1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"::ffff:7f00:1", "127.0.0.1"},
		{"[::ffff:7f00:1]", "127.0.0.1"},
		{"::127.0.0.1", "::7f00:1"},
		{"64:ff9b::7f00:1", "64:ff9b::7f00:1"},
		{"64:ff9b::127.0.0.1", "64:ff9b::7f00:1"},
		{"2002:7f00:1::", "2002:7f00:1::"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"0:0:0:0:0:0:0:1", "::1"},
		{"fe80::1%eth0", "fe80::1"},
		{"[fe80::1%eth0]", "fe80::1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"2852039166", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"0251.0376.0251.0376", "169.254.169.254"},
		{"169.16689662", "169.254.169.254"},
		{"8.8.8.8", "8.8.8.8"},

		// Not IP literals.
		{"", ""},
		{"4294967296", ""},
		{"0x100000000", ""},
		{"99999999999999999999999999", ""},
		{"256.0.0.1", ""},
		{"1.256.0.1", ""},
		{"1.2.3.256", ""},
		{"1.2.65536", ""},
		{"1.16777216", ""},
		{"999.1.1.1", ""},
		{"1.2.3.4.5", ""},
		{"0x7g.1", ""},
		{"08.0.0.1", ""},
		{"1..1", ""},
		{".1.1.1", ""},
		{"127.0.0.1..", ""},
		{"example.com", ""},
		{"[127.0.0.1]", ""},
		{"[::1", ""},
		{":::1", ""},
		{"1.2.3.4 ", ""},
		{"::ffff:0x7f.1", ""},
	}
	for _, tt := range tests {
		got, ok := ParseIP(tt.in)
		if tt.want == "" {
			if ok {
				t.Errorf("ParseIP(%q) = %v, want not an IP", tt.in, got)
			}
			continue
		}
		if !ok || got.String() != tt.want {
			t.Errorf("ParseIP(%q) = %v, %v; want %s", tt.in, got, ok, tt.want)
		}
	}
}

func TestCategoryOf(t *testing.T) {
	tests := []struct {
		addr string
		want Category
	}{
		{"127.0.0.1", CatLoopback},
		{"127.255.255.254", CatLoopback},
		{"0.0.0.0", CatLoopback},
		{"0.1.2.3", CatLoopback},
		{"::1", CatLoopback},
		{"::", CatLoopback},
		{"::ffff:127.0.0.1", CatLoopback},
		{"::127.0.0.1", CatLoopback},
		{"::ffff:0:127.0.0.1", CatLoopback},
		{"64:ff9b::7f00:1", CatLoopback},
		{"2002:7f00:1::", CatLoopback},
		{"2002:7f00:1:1234::5", CatLoopback},

		{"10.0.0.1", CatPrivate},
		{"10.255.255.255", CatPrivate},
		{"172.16.0.1", CatPrivate},
		{"172.31.255.255", CatPrivate},
		{"192.168.1.1", CatPrivate},
		{"100.64.0.1", CatPrivate},
		{"100.127.255.255", CatPrivate},
		{"198.18.0.1", CatPrivate},
		{"198.19.255.255", CatPrivate},
		{"192.0.0.1", CatPrivate},
		{"224.0.0.1", CatPrivate},
		{"239.255.255.250", CatPrivate},
		{"240.0.0.1", CatPrivate},
		{"255.255.255.255", CatPrivate},
		{"fc00::1", CatPrivate},
		{"fd12:3456::1", CatPrivate},
		{"ff02::1", CatPrivate},
		{"fec0::1", CatPrivate},
		{"::ffff:10.0.0.1", CatPrivate},
		{"64:ff9b::a00:1", CatPrivate},
		{"64:ff9b:1::a00:1", CatPrivate},
		{"2002:c0a8:101::", CatPrivate},

		{"169.254.0.1", CatLinkLocal},
		{"169.254.169.253", CatLinkLocal},
		{"fe80::1", CatLinkLocal},
		{"febf::1", CatLinkLocal},

		{"169.254.169.254", CatMetadata},
		{"169.254.170.2", CatMetadata},
		{"169.254.170.23", CatMetadata},
		{"100.100.100.200", CatMetadata},
		{"168.63.129.16", CatMetadata},
		{"fd00:ec2::254", CatMetadata},
		{"fd00:ec2::23", CatMetadata},
		{"::ffff:169.254.169.254", CatMetadata},
		{"64:ff9b::a9fe:a9fe", CatMetadata},
		{"2002:a9fe:a9fe::", CatMetadata},

		{"8.8.8.8", CatNone},
		{"1.1.1.1", CatNone},
		{"172.15.255.255", CatNone},
		{"172.32.0.0", CatNone},
		{"100.63.255.255", CatNone},
		{"100.128.0.0", CatNone},
		{"198.17.255.255", CatNone},
		{"198.20.0.0", CatNone},
		{"192.0.1.1", CatNone},
		{"223.255.255.255", CatNone},
		{"169.253.255.255", CatNone},
		{"2606:4700:4700::1111", CatNone},
		{"2001:4860:4860::8888", CatNone},
		{"64:ff9b::808:808", CatNone},
		{"2002:808:808::", CatNone},
		{"fd00:ec2::255", CatPrivate},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := CategoryOf(a); got != tt.want {
			t.Errorf("CategoryOf(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	if got := CategoryOf(netip.Addr{}); got != CatUnparseable {
		t.Errorf("CategoryOf(zero Addr) = %q, want %q", got, CatUnparseable)
	}
}

func TestClassifyLoopbackNotations(t *testing.T) {
	// Every spelling of 127.0.0.1 must come out as loopback with the
	// canonical dotted quad (or the IPv6 form that embeds it).
	hosts := []struct {
		in, canonical string
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"[::ffff:127.0.0.1]", "127.0.0.1"},
		{"::ffff:7f00:1", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"::127.0.0.1", "::7f00:1"},
		{"64:ff9b::7f00:1", "64:ff9b::7f00:1"},
		{"2002:7f00:1::", "2002:7f00:1::"},
		{"127.0.0.1.", "127.0.0.1"},
		{"%31%32%37.0.0.1", "127.0.0.1"},
		{"%31%32%37%2e%30%2e%30%2e%31", "127.0.0.1"},
		{"127%2E0%2E0%2E1", "127.0.0.1"},
		{"０x7f.1", "127.0.0.1"},            // fullwidth zero
		{"１２７．０．０．１", "127.0.0.1"},         // fullwidth digits and dots
		{"127。0。0。1", "127.0.0.1"},         // ideographic full stop
		{"127｡0｡0｡1", "127.0.0.1"},         // halfwidth ideographic full stop
		{"[%3a%3a1]", "::1"},               // percent-encoded colons
		{"%5b::1%5d", "::1"},               // percent-encoded brackets
		{"[0:0:0:0:0:0:0:1]", "::1"},       // long form
		{"[::]", "::"},                     // unspecified reaches localhost
		{"0.0.0.0", "0.0.0.0"},             // same
		{"0", "0.0.0.0"},                   // same, short
		{"localhost", "localhost"},         // by name
		{"LOCALHOST.", "localhost"},        // case and root dot
		{"foo.localhost", "foo.localhost"}, // RFC 6761
		{"ａ.localhost", "a.localhost"},
		{"ｌｏｃａｌｈｏｓｔ", "localhost"},
		{"localhost.localdomain", "localhost.localdomain"},
		{"ip6-localhost", "ip6-localhost"},
		{"%4C%4F%43%41%4C%48%4F%53%54", "localhost"},
		{"%6c%6f%63%61%6c%68%6f%73%74.", "localhost"},
	}
	for _, tt := range hosts {
		canonical, cat, _, _ := Classify(tt.in)
		if cat != CatLoopback || canonical != tt.canonical {
			t.Errorf("Classify(%q) = %q, %q; want %q, loopback", tt.in, canonical, cat, tt.canonical)
		}
	}
}

func TestClassifyHosts(t *testing.T) {
	tests := []struct {
		in        string
		canonical string // ignored when cat is CatUnparseable
		cat       Category
		isIP      bool
	}{
		{"example.com", "example.com", CatNone, false},
		{"EXAMPLE.com.", "example.com", CatNone, false},
		{"Sub.Example.COM", "sub.example.com", CatNone, false},
		{"bücher.de", "xn--bcher-kva.de", CatNone, false},
		{"BÜCHER.de", "xn--bcher-kva.de", CatNone, false},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", CatNone, false},
		{"b%C3%BCcher.de", "xn--bcher-kva.de", CatNone, false},
		{"example。com", "example.com", CatNone, false},
		{"example．com", "example.com", CatNone, false},
		{"ｅｘａｍｐｌｅ.com", "example.com", CatNone, false},
		{"ex%61mple.com", "example.com", CatNone, false},
		{"_dmarc.example.com", "_dmarc.example.com", CatNone, false},
		{"a-b.example", "a-b.example", CatNone, false},
		{"3com.com", "3com.com", CatNone, false},
		{"1.2.3.4a", "1.2.3.4a", CatNone, false},
		{"localhost.example.com", "localhost.example.com", CatNone, false},
		{"notlocalhost", "notlocalhost", CatNone, false},
		{"8.8.8.8", "8.8.8.8", CatNone, true},
		{"134744072", "8.8.8.8", CatNone, true},
		{"[2606:4700:4700::1111]", "2606:4700:4700::1111", CatNone, true},

		{"metadata", "metadata", CatMetadata, false},
		{"metadata.google.internal", "metadata.google.internal", CatMetadata, false},
		{"METADATA.GOOGLE.INTERNAL.", "metadata.google.internal", CatMetadata, false},
		{"metadata.goog", "metadata.goog", CatMetadata, false},
		{"instance-data", "instance-data", CatMetadata, false},
		{"instance-data.ec2.internal", "instance-data.ec2.internal", CatMetadata, false},
		{"169.254.169.254", "169.254.169.254", CatMetadata, true},
		{"2852039166", "169.254.169.254", CatMetadata, true},
		{"0xa9fea9fe", "169.254.169.254", CatMetadata, true},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", CatMetadata, true},
		{"[fd00:ec2::254]", "fd00:ec2::254", CatMetadata, true},
		{"[::ffff:169.254.169.254]", "169.254.169.254", CatMetadata, true},
		{"[::ffff:a9fe:a9fe]", "169.254.169.254", CatMetadata, true},
		{"100.100.100.200", "100.100.100.200", CatMetadata, true},

		{"10.1.2.3", "10.1.2.3", CatPrivate, true},
		{"012.1.2.3", "10.1.2.3", CatPrivate, true},
		{"0xc0a80101", "192.168.1.1", CatPrivate, true},
		{"[fd12::1]", "fd12::1", CatPrivate, true},
		{"[fe80::1%25eth0]", "fe80::1", CatLinkLocal, true},
		{"fe80::1%eth0", "fe80::1", CatLinkLocal, true},
		{"169.254.1.1", "169.254.1.1", CatLinkLocal, true},

		{"", "", CatUnparseable, false},
		{".", "", CatUnparseable, false},
		{"..", "", CatUnparseable, false},
		{"1.2.3.4.5", "", CatUnparseable, false},
		{"0x7g.1", "", CatUnparseable, false},
		{"999.1.1.1", "", CatUnparseable, false},
		{"256.1.1.1", "", CatUnparseable, false},
		{"4294967296", "", CatUnparseable, false},
		{"0x100000000", "", CatUnparseable, false},
		{"foo.123", "", CatUnparseable, false},
		{"08.1.1.1", "", CatUnparseable, false},
		{"a b", "", CatUnparseable, false},
		{"a\tb.com", "", CatUnparseable, false},
		{"ex%ample.com", "", CatUnparseable, false},
		{"ex%20ample.com", "", CatUnparseable, false},
		{"%", "", CatUnparseable, false},
		{"%zz", "", CatUnparseable, false},
		{"%00", "", CatUnparseable, false},
		{"%2531%2532%2537.0.0.1", "", CatUnparseable, false}, // double encoding
		{"a..b", "", CatUnparseable, false},
		{"example.com..", "", CatUnparseable, false},
		{"evil.com@127.0.0.1", "", CatUnparseable, false},
		{"evil.com/x", "", CatUnparseable, false},
		{"evil.com\\x", "", CatUnparseable, false},
		{"[127.0.0.1]", "", CatUnparseable, false},
		{"[::1", "", CatUnparseable, false},
		{"::1]", "", CatUnparseable, false},
		{"1:2:3", "", CatUnparseable, false},
		{"[::ffff:0127.0.0.1]", "", CatUnparseable, false},
		{"xn--zz.com", "", CatUnparseable, false},
		{"a\u200db.com", "", CatUnparseable, false},
		{"\xff.com", "", CatUnparseable, false},
		{"%ff.com", "", CatUnparseable, false},
		{"\u00ad", "", CatUnparseable, false},
		{"a." + string(make([]byte, 64)), "", CatUnparseable, false},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "", CatUnparseable, false}, // 64-byte label
	}
	for _, tt := range tests {
		canonical, cat, addr, isIP := Classify(tt.in)
		if cat != tt.cat || isIP != tt.isIP {
			t.Errorf("Classify(%q) = %q, %q, isIP=%v; want %q, isIP=%v", tt.in, canonical, cat, isIP, tt.cat, tt.isIP)
			continue
		}
		if cat == CatUnparseable {
			if canonical == "" {
				t.Errorf("Classify(%q): unparseable without an error text", tt.in)
			}
			if _, err := CanonicalHost(tt.in); err == nil {
				t.Errorf("CanonicalHost(%q) succeeded for an unparseable host", tt.in)
			}
			continue
		}
		if canonical != tt.canonical {
			t.Errorf("Classify(%q) canonical = %q, want %q", tt.in, canonical, tt.canonical)
		}
		if isIP && addr.String() != canonical {
			t.Errorf("Classify(%q) addr = %v, canonical %q", tt.in, addr, canonical)
		}
		if got, err := CanonicalHost(tt.in); err != nil || got != canonical {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", tt.in, got, err, canonical)
		}
	}
}

// TestClassifyNeverPublic checks inputs that are tricky enough that the
// exact answer matters less than the guarantee: they must never come out as
// an ordinary public host.
func TestClassifyNeverPublic(t *testing.T) {
	for _, in := range []string{
		"０x7f.1", "0x7f。1", "127.0.0.1..", "127.0.0.1 ", " 127.0.0.1", "127.0.0.1\x00",
		"127.0.0.1%00", "0x7f.0x0.0x0.0x1", "0x7f.0.0.0x1", "0177.0.0.01",
		"6425673729", // 2^32 + 127.0.0.1: must not wrap around
		"0x17f000001", "127.0.0.1:80", "[::1]:80", "%5b::1%5d",
		"[fe80::1%eth0]", "[::ffff:127.0.0.1%eth0]", "localhost.", "LocalHost",
		"foo.LOCALHOST.", "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", "metadata.google.internal.",
		"169.254.169.254.", "0251.254.43518", "[0:0:0:0:0:ffff:a9fe:a9fe]",
		"0x", "0x.0x.0x.0x",
	} {
		if _, cat, _, _ := Classify(in); cat == CatNone {
			t.Errorf("Classify(%q) = CatNone, want a non-public category", in)
		}
	}
}

func TestCategories(t *testing.T) {
	cats := Categories()
	seen := map[Category]bool{}
	for _, c := range cats {
		if c == CatNone {
			t.Error("Categories() includes CatNone")
		}
		if seen[c] {
			t.Errorf("Categories() lists %q twice", c)
		}
		seen[c] = true
	}
	for _, c := range []Category{CatLoopback, CatPrivate, CatLinkLocal, CatMetadata, CatUnparseable} {
		if !seen[c] {
			t.Errorf("Categories() is missing %q", c)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	hosts := []string{"api.example.com", "127.0.0.1", "0x7f.1", "::ffff:169.254.169.254", "bücher.de"}
	for _, h := range hosts {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(h)
			}
		})
	}
}
