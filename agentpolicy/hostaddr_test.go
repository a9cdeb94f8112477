package agentpolicy

import (
	"net/netip"
	"slices"
	"testing"

	"corral.dev/corral/policyengine"
)

// oneHost is a policyengine.HostAddrs knowing one address.
type oneHost netip.Addr

func (h oneHost) IsHost(a netip.Addr) bool { return a == netip.Addr(h) }

// TestPolicyHostAddrs: with WithHostAddrs, the URL presets and the network
// caps know the host's own addresses: a wildcard URL rule or cap does not
// reach them, preset:host names them, in URL and tunnel checks alike.
func TestPolicyHostAddrs(t *testing.T) {
	host := oneHost(netip.MustParseAddr("192.0.2.2"))
	e := project(t, "url:\n  default: deny\n  allow: ['http://*/*', 'https://*/*']\ncaps:\n  network: ['*:80', '*:443']\n").WithHostAddrs(host)
	for _, u := range []string{"http://192.0.2.2/x", "http://0xc0.0.2.2/", "http://[::ffff:192.0.2.2]/"} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Deny, "-", "-")
	}
	wantDecision(t, "tunnel", e.CheckRequest("CONNECT", "", "192.0.2.2", 443), policyengine.Deny, "-", "-")
	wantDecision(t, "resolved", e.CheckAddr("api.test", netip.MustParseAddr("192.0.2.2"), 443), policyengine.Deny, "-", "-")
	wantDecision(t, "another address", e.CheckURL("http://203.0.113.7/x"), policyengine.Allow, "-", "-")

	deny := project(t, "url:\n  default: allow\n  deny: ['preset:host']\n").WithHostAddrs(host)
	wantDecision(t, "preset:host denies", deny.CheckURL("http://192.0.2.2:8080/"), policyengine.Deny, "url.deny: preset:host", projectLabel)
	wantDecision(t, "preset:host denies the tunnel", deny.CheckRequest("CONNECT", "", "192.0.2.2", 443), policyengine.Deny, "url.deny: preset:host", projectLabel)
	wantDecision(t, "others pass", deny.CheckURL("http://203.0.113.7/"), policyengine.Allow, "-", "-")
}

// TestNarrowHostAddrs: a skill's wildcard never reaches the machine's own
// addresses, so a cap naming one narrows it to nothing there, not to a
// literal grant that would (preset:host and a literal in the skill do).
func TestNarrowHostAddrs(t *testing.T) {
	host := oneHost(netip.MustParseAddr("192.0.2.2"))
	e := project(t, "caps:\n  network: ['192.0.2.2:80', '203.0.113.7:80']\n").WithHostAddrs(host)
	for _, tt := range []struct {
		skill []string
		want  []string
	}{
		{[]string{"*:80"}, []string{"203.0.113.7:80"}},
		{[]string{"preset:private_network:80"}, nil},
		{[]string{"preset:host:80"}, []string{"192.0.2.2:80"}},
		{[]string{"192.0.2.2:80"}, []string{"192.0.2.2:80"}},
	} {
		p, _ := e.Narrow(policyengine.Permissions{Network: policyengine.NewEntries("s", tt.skill)})
		if got := policyengine.Values(p.Network); !slices.Equal(got, tt.want) {
			t.Errorf("%v narrowed by the caps: %v, want %v", tt.skill, got, tt.want)
		}
	}
}
