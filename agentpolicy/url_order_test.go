package agentpolicy

import (
	"fmt"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// urlLists are the URL policy's lists in the order they are tried.
var urlLists = []struct {
	name   string
	action policyengine.Action
	set    func(u *URLPolicy, rules ...string)
}{
	{"deny_override", policyengine.Deny, func(u *URLPolicy, r ...string) { u.DenyOverride = append(u.DenyOverride, r...) }},
	{"allow_override", policyengine.Allow, func(u *URLPolicy, r ...string) { u.AllowOverride = append(u.AllowOverride, r...) }},
	{"deny", policyengine.Deny, func(u *URLPolicy, r ...string) { u.Deny = append(u.Deny, r...) }},
	{"allow", policyengine.Allow, func(u *URLPolicy, r ...string) { u.Allow = append(u.Allow, r...) }},
}

// TestURLDefault checks the default when no rule matches: allow, deny, and
// deny when absent.
func TestURLDefault(t *testing.T) {
	for _, tt := range []struct {
		def  string
		want policyengine.Action
	}{
		{"allow", policyengine.Allow},
		{"deny", policyengine.Deny},
		{"", policyengine.Deny},
	} {
		t.Run("default="+tt.def, func(t *testing.T) {
			e := urlPolicy(t, URLPolicy{Default: tt.def, Allow: []string{"https://other.example/*"}})
			d := e.CheckURL("https://www.example.com/")
			wantDecision(t, "CheckURL", d, tt.want, "url.default: "+string(tt.want), projectLabel)
			wantContains(t, "reason", d.Reason, "https://www.example.com/", "project (p.yaml)")
			if tt.want == policyengine.Deny {
				// The denial says how to allow it.
				wantContains(t, "reason", d.Reason, `url.allow rule such as "https://www.example.com/"`)
			}
		})
	}
}

// TestURLListAgainstDefault puts a matching rule in each list against each
// default: the list decides whatever the default.
func TestURLListAgainstDefault(t *testing.T) {
	const url, rule = "https://api.example.com/v1/items", "https://api.example.com/*"
	for _, l := range urlLists {
		for _, def := range []string{"allow", "deny", ""} {
			t.Run(l.name+"/default="+def, func(t *testing.T) {
				u := URLPolicy{Default: def}
				l.set(&u, rule)
				d := urlPolicy(t, u).CheckURL(url)
				wantDecision(t, "CheckURL", d, l.action, "url."+l.name+": "+rule, projectLabel)
				wantContains(t, "reason", d.Reason, "url."+l.name, rule, "project (p.yaml)")
			})
		}
	}
}

// TestURLListPairs puts the same URL in every pair of lists: the list
// tried first wins, whatever the default.
func TestURLListPairs(t *testing.T) {
	const url = "https://api.example.com/v1"
	for i, first := range urlLists {
		for _, second := range urlLists[i+1:] {
			for _, def := range []string{"allow", "deny"} {
				name := fmt.Sprintf("%s>%s/default=%s", first.name, second.name, def)
				t.Run(name, func(t *testing.T) {
					u := URLPolicy{Default: def}
					// Different texts, so the decision shows which rule won.
					first.set(&u, "https://api.example.com/*")
					second.set(&u, "https://*.example.com/*")
					d := urlPolicy(t, u).CheckURL(url)
					wantDecision(t, "CheckURL", d, first.action, "url."+first.name+": https://api.example.com/*", projectLabel)
				})
			}
		}
	}
}

// TestURLAllListsMatch: with every list matching, deny_override decides;
// dropping the winner each time walks down the order.
func TestURLAllListsMatch(t *testing.T) {
	const url = "https://api.example.com/x"
	for skip := range urlLists {
		u := URLPolicy{Default: "allow"}
		for _, l := range urlLists[skip:] {
			l.set(&u, "https://api.example.com/*")
		}
		d := urlPolicy(t, u).CheckURL(url)
		want := urlLists[skip]
		wantDecision(t, "lists from "+want.name, d, want.action, "url."+want.name+": https://api.example.com/*", projectLabel)
	}
}

// TestURLFirstMatchInList: within a list the first matching rule is the
// one named.
func TestURLFirstMatchInList(t *testing.T) {
	for _, l := range urlLists {
		u := URLPolicy{Default: "deny"}
		if l.action == policyengine.Deny {
			u.Default = "allow"
		}
		l.set(&u, "https://nothing.example/*", "https://api.example.com/admin*", "https://api.example.com/*", "https://*")
		e := urlPolicy(t, u)
		for _, tt := range []struct{ url, rule string }{
			{"https://api.example.com/admin/users", "https://api.example.com/admin*"},
			{"https://api.example.com/public", "https://api.example.com/*"},
			{"https://other.example/", "https://*"},
		} {
			d := e.CheckURL(tt.url)
			wantDecision(t, l.name+" "+tt.url, d, l.action, "url."+l.name+": "+tt.rule, projectLabel)
		}
	}
}

// TestURLSchemesAndPorts: rules see the scheme and a non-default port.
func TestURLSchemesAndPorts(t *testing.T) {
	e := urlPolicy(t, URLPolicy{
		Default: "deny",
		Allow:   []string{"https://api.example.com/*", "wss://stream.example.com/*", "http://localhost:8080/*"},
	})
	for _, tt := range []struct {
		url  string
		want policyengine.Action
	}{
		{"https://api.example.com/", policyengine.Allow},
		{"https://api.example.com:443/", policyengine.Allow},
		{"http://api.example.com/", policyengine.Deny},
		{"https://api.example.com:8443/", policyengine.Deny},
		{"wss://stream.example.com/feed", policyengine.Allow},
		{"ws://stream.example.com/feed", policyengine.Deny},
		{"http://localhost:8080/health", policyengine.Allow},
		{"http://localhost:8081/health", policyengine.Deny},
		{"http://localhost/health", policyengine.Deny},
	} {
		wantDecision(t, tt.url, e.CheckURL(tt.url), tt.want, "-", projectLabel)
	}
}

// TestURLBadInput: a URL that does not parse is denied, whatever the
// policy, with the parser's reason.
func TestURLBadInput(t *testing.T) {
	e := urlPolicy(t, URLPolicy{Default: "allow", AllowOverride: []string{"*"}})
	for _, raw := range []string{"", "example.com", "file:///etc/passwd", "gopher://x/", "http://", "http://a:99999/", `http://evil.com\@127.0.0.1/`} {
		d := e.CheckURL(raw)
		wantDecision(t, fmt.Sprintf("%q", raw), d, policyengine.Deny, "", "")
		wantContains(t, "reason", d.Reason, "cannot check URL")
	}
}

// TestURLNoPolicy: with no layer setting url (and no network caps) a URL
// is allowed: the skills decide alone.
func TestURLNoPolicy(t *testing.T) {
	e := project(t, "permissions:\n  allow:\n    - tool: web_fetch\n")
	wantDecision(t, "CheckURL", e.CheckURL("https://example.com/"), policyengine.Allow, "", "")
	e = evaluator(t, nil)
	if !e.Empty() {
		t.Error("an evaluator without layers is not Empty")
	}
	wantDecision(t, "CheckURL", e.CheckURL("http://127.0.0.1/"), policyengine.Allow, "", "")
}

// TestCheckRequest: a CONNECT tunnel is decided as https://host:port/ (http
// on port 80); an absolute-URI request by its URL.
func TestCheckRequest(t *testing.T) {
	e := urlPolicy(t, URLPolicy{Default: "deny", Allow: []string{"https://api.example.com/*", "http://plain.example.com/*", "https://[2001:db8::1]:8443/*"}})
	for _, tt := range []struct {
		method, url, host string
		port              int
		want              policyengine.Action
	}{
		{"CONNECT", "", "api.example.com", 443, policyengine.Allow},
		{"CONNECT", "", "api.example.com", 8443, policyengine.Deny},
		{"CONNECT", "", "plain.example.com", 80, policyengine.Allow},
		{"CONNECT", "", "2001:db8::1", 8443, policyengine.Allow},
		{"CONNECT", "", "127.0.0.1", 443, policyengine.Deny},
		{"GET", "http://plain.example.com/x", "plain.example.com", 80, policyengine.Allow},
		{"GET", "http://api.example.com/x", "api.example.com", 80, policyengine.Deny},
	} {
		d := e.CheckRequest(tt.method, tt.url, tt.host, tt.port)
		wantDecision(t, fmt.Sprintf("%s %s %s:%d", tt.method, tt.url, tt.host, tt.port), d, tt.want, "-", projectLabel)
	}
}

// TestURLDenyIgnoresQuery: a deny rule about a path denies it whatever
// query follows (servers serve /admin?a=1 as /admin); an allow rule about
// an exact path still does not allow it with a query, and a rule that
// names a query matches as written.
func TestURLDenyIgnoresQuery(t *testing.T) {
	e := project(t, "url:\n  default: deny\n  allow: ['http://h.test/*', 'http://h.test/exact']\n  deny: ['http://h.test/admin', 'http://h.test/admin/*', 'http://h.test/q\\?x=1']\n")
	for _, u := range []string{"http://h.test/admin?a=1", "http://h.test/admin?", "http://h.test/admin/x?y=2", "http://h.test/q?x=1"} {
		if d := e.CheckURL(u); d.Action != policyengine.Deny {
			t.Errorf("%s: %s (%s), want deny", u, d.Action, d.Reason)
		}
	}
	for _, u := range []string{"http://h.test/other?a=1", "http://h.test/q?x=2", "http://h.test/administrator"} {
		if d := e.CheckURL(u); d.Action != policyengine.Allow {
			t.Errorf("%s: %s (%s), want allow", u, d.Action, d.Reason)
		}
	}
}

// TestPolicyWithoutDefault pins what the README says a policy that leaves
// things out does: a url without default denies what no rule allows (a
// deny list alone denies everything, tunnels too); url: {} denies every
// URL; an empty url: sets no URL policy, so a lower layer's applies; no
// URL policy at all leaves URLs to the caps and skills; a tool use no rule
// allows needs confirmation.
func TestPolicyWithoutDefault(t *testing.T) {
	e := project(t, "url:\n  deny: ['https://evil.example/*']\n")
	wantDecision(t, "deny list only", e.CheckURL("https://ok.example/"), policyengine.Deny, "url.default: deny", projectLabel)
	wantDecision(t, "deny list only, tunnel", e.CheckRequest("CONNECT", "", "ok.example", 443), policyengine.Deny, "url.default: deny", projectLabel)
	wantDecision(t, "url {}", project(t, "url: {}\n").CheckURL("https://ok.example/"), policyengine.Deny, "url.default: deny", projectLabel)
	if got := e.Layers()[0].Summary; !strings.Contains(got, "default deny") {
		t.Errorf("explain summary %q does not say default deny", got)
	}

	e, gl, _ := stack(t, "url: {default: allow, deny: ['https://evil.example/*']}\n", "url:\npermissions:\n  allow: [{command: make}]\n", "")
	wantDecision(t, "empty url in project", e.CheckURL("https://evil.example/x"), policyengine.Deny, "url.deny: https://evil.example/*", gl)
	wantDecision(t, "empty url in project", e.CheckURL("https://ok.example/"), policyengine.Allow, "url.default: allow", gl)

	e = project(t, "permissions:\n  allow: [{command: make}]\n")
	if e.URLLayer() != "" {
		t.Errorf("no url: URL layer %q", e.URLLayer())
	}
	wantDecision(t, "no url", e.CheckURL("https://ok.example/"), policyengine.Allow, "", "")
	wantDecision(t, "no rule", e.CheckTool("web_fetch", ""), policyengine.Confirm, "", "")
	wantDecision(t, "no rule", e.CheckExec("curl https://ok.example/"), policyengine.Confirm, "", "")
}
