package agentpolicy

import (
	"testing"

	"corral.dev/corral/policyengine"
)

// TestURLReadingsDenyWins: a URL rule holds for every reading of the path
// an origin may take (issue 27, item 4): a deny rule is not dodged by
// repeated slashes, dot segments, encodings the origin decodes, ';'
// parameters or a path climbing above /, and an allow rule does not let
// through what a lenient origin serves as another path.
func TestURLReadingsDenyWins(t *testing.T) {
	deny := urlPolicy(t, URLPolicy{Default: "allow", Deny: []string{"http://a.test:8080/admin/*", "https://a.test/admin/*"}})
	for _, tt := range []struct {
		path string
		want policyengine.Action
	}{
		{"/admin/x", policyengine.Deny},
		{"//admin/x", policyengine.Deny},
		{"///admin//x", policyengine.Deny},
		{"/./admin/x", policyengine.Deny},
		{"/x/../admin/x", policyengine.Deny},
		{"/../admin/x", policyengine.Deny},
		{"/x/%2e%2e/admin/x", policyengine.Deny},
		{"/%61dmin/x", policyengine.Deny},
		{"/%2561dmin/x", policyengine.Deny},
		{"/x/..%2fadmin/x", policyengine.Deny},
		{"/x/..%2Fadmin/x", policyengine.Deny},
		{"/x/..%5cadmin/x", policyengine.Deny},
		{`/x\..\admin/x`, policyengine.Deny},
		{"/admin;jsessionid=1/x", policyengine.Deny},
		{"/x/..;/admin/x", policyengine.Deny},
		{"/admin%3bx/y", policyengine.Deny},
		{"/admin/x#frag", policyengine.Deny},
		{"/admin/x?a=1", policyengine.Deny},
		{"/public/x", policyengine.Allow},
		{"/admin2/x", policyengine.Allow},
		{"/public/a%2fb", policyengine.Allow},
		{"/ADMIN/x", policyengine.Allow}, // paths are case-sensitive (RFC 3986)
	} {
		for _, base := range []string{"http://a.test:8080", "https://a.test"} {
			u := base + tt.path
			wantDecision(t, u, deny.CheckURL(u), tt.want, "-", "-")
		}
	}
	allow := urlPolicy(t, URLPolicy{Default: "deny", Allow: []string{"https://a.test/public/*"}})
	for _, tt := range []struct {
		path string
		want policyengine.Action
	}{
		{"/public/x", policyengine.Allow},
		{"//public//x", policyengine.Allow},
		{"/public/a;b", policyengine.Allow},
		{"/public/%61", policyengine.Allow},
		{"/public/..%2fadmin", policyengine.Deny},
		{"/public/%252e%252e/admin", policyengine.Deny},
		{"/public/..;/admin", policyengine.Deny},
		{"/public/../admin", policyengine.Deny},
		{"/public;x/../admin", policyengine.Deny},
	} {
		u := "https://a.test" + tt.path
		d := allow.CheckURL(u)
		wantDecision(t, u, d, tt.want, "-", "-")
	}
}

// TestURLRuleEscapes: a rule's path escapes are read as a URL's are
// ("%61" is "a", "%2f" is "%2F"), so a rule meets a URL written with any
// escape case.
func TestURLRuleEscapes(t *testing.T) {
	e := urlPolicy(t, URLPolicy{Default: "allow", Deny: []string{"https://a.test/%61dmin/*", "https://a.test/a%2fb", "https://a.test/100%*"}})
	for _, u := range []string{"https://a.test/admin/x", "https://a.test/%61dmin/x", "https://a.test/a%2Fb", "https://a.test/a%2fb", "https://a.test/100%25"} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Deny, "-", "-")
	}
	wantDecision(t, "https://a.test/ab", e.CheckURL("https://a.test/ab"), policyengine.Allow, "-", "-")
}
