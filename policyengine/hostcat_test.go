package policyengine

import (
	"net/netip"
	"strings"
	"testing"
)

// fakeHost is a HostAddrs with a fixed list.
type fakeHost []netip.Addr

func (f fakeHost) IsHost(a netip.Addr) bool {
	for _, h := range f {
		if h == a {
			return true
		}
	}
	return false
}

var testHost = fakeHost{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("10.1.2.3"),
	netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("fe80::1"), netip.MustParseAddr("169.254.169.254")}

func hostEngine(t *testing.T, rules ...string) *Engine {
	t.Helper()
	e, err := New(Permissions{Network: NewEntries("s", rules), Declared: []string{"s"}}, Options{WorkDir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	return e.WithHostAddrs(testHost)
}

// TestHostCategory: an address of this machine is granted only by
// preset:host or its literal, in every notation; name patterns and the
// other presets never grant it.
func TestHostCategory(t *testing.T) {
	spellings := []string{"192.0.2.2", "0xc0.0.2.2", "0300.0.2.2", "3221225986", "192.0.514", "0xc0000202",
		"::ffff:192.0.2.2", "[::ffff:c000:202]", "::192.0.2.2", "64:ff9b::192.0.2.2", "2002:c000:202::1",
		"::ffff:0:192.0.2.2", "10.1.2.3", "2001:db8::2", "[2001:DB8::2]", "fe80::1%eth0", "169.254.169.254", "%31%39%32.0.2.2"}
	for _, rules := range [][]string{{"*:80"}, {"*:*"}, {"preset:private_network", "preset:link_local", "preset:cloud_metadata", "*:80"}} {
		e := hostEngine(t, rules...)
		for _, h := range spellings {
			d := e.CheckNetwork(h, 80)
			if d.Action != Deny || !strings.Contains(d.Reason, "an address of this host") || !strings.Contains(d.Reason, "preset:host") {
				t.Errorf("%v: CheckNetwork(%q) = %v %q", rules, h, d.Action, d.Reason)
			}
		}
	}
	for _, rules := range [][]string{{"preset:host"}, {"preset:host:80"}} {
		e := hostEngine(t, rules...)
		for _, h := range spellings {
			if d := e.CheckNetwork(h, 80); d.Action != Allow {
				t.Errorf("%v: CheckNetwork(%q) = %v %q", rules, h, d.Action, d.Reason)
			}
		}
		// Loopback stays loopback: preset:host does not grant it.
		for _, h := range []string{"127.0.0.1", "::1", "0.0.0.0", "::", "localhost"} {
			if d := e.CheckNetwork(h, 80); d.Action != Deny {
				t.Errorf("%v: CheckNetwork(%q) = %v", rules, h, d.Action)
			}
		}
	}
	if d := hostEngine(t, "preset:host:443").CheckNetwork("192.0.2.2", 80); d.Action != Deny {
		t.Errorf("preset:host:443 granted port 80: %q", d.Reason)
	}
	// The literal grants that address and no other host address.
	e := hostEngine(t, "192.0.2.2:80", "*:80")
	if d := e.CheckNetwork("0xc0.0.2.2", 80); d.Action != Allow {
		t.Errorf("the literal rule: %q", d.Reason)
	}
	if d := e.CheckNetwork("10.1.2.3", 80); d.Action != Deny {
		t.Errorf("10.1.2.3 granted by another host address's literal: %q", d.Reason)
	}
	// Other addresses keep their categories.
	if d := e.CheckNetwork("203.0.113.7", 80); d.Action != Allow {
		t.Errorf("a public address: %q", d.Reason)
	}
	if d := e.CheckNetwork("10.9.9.9", 80); d.Action != Deny || !strings.Contains(d.Reason, "private network") {
		t.Errorf("a private address: %q", d.Reason)
	}
}

// TestHostCategoryResolved: a name that resolves to an address of this
// machine is refused at CheckAddr, also under names patterns and presets
// of other categories.
func TestHostCategoryResolved(t *testing.T) {
	e := hostEngine(t, "api.test:80", "*:80", "preset:private_network")
	for _, a := range []string{"192.0.2.2", "::ffff:192.0.2.2", "64:ff9b::c000:202", "10.1.2.3", "2001:db8::2", "169.254.169.254"} {
		d := e.CheckAddr("api.test", netip.MustParseAddr(a), 80)
		if d.Action != Deny || !strings.Contains(d.Reason, "api.test resolves to") || !strings.Contains(d.Reason, "preset:host:80") {
			t.Errorf("CheckAddr(%s) = %v %q", a, d.Action, d.Reason)
		}
	}
	if d := hostEngine(t, "api.test:80", "preset:host:80").CheckAddr("api.test", netip.MustParseAddr("192.0.2.2"), 80); d.Action != Allow {
		t.Errorf("preset:host:80: %q", d.Reason)
	}
	if d := e.CheckAddr("api.test", netip.MustParseAddr("203.0.113.7"), 80); d.Action != Allow {
		t.Errorf("a public address: %q", d.Reason)
	}
}

// TestHostCategoryPure: without HostAddrs the engine knows no host
// addresses, and the category is not a property of the address.
func TestHostCategoryPure(t *testing.T) {
	e, err := New(Permissions{Network: NewEntries("s", []string{"*:80"}), Declared: []string{"s"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.CheckNetwork("192.0.2.2", 80); d.Action != Allow {
		t.Errorf("pure engine: %q", d.Reason)
	}
	if _, err := ParseHostPattern("preset:host:80"); err != nil {
		t.Error(err)
	}
	if CategoryOf(netip.MustParseAddr("192.0.2.2")) == CatHost {
		t.Error("CategoryOf says host")
	}
}
