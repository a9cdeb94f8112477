package agentpolicy

import (
	"testing"

	"corral.dev/corral/policyengine"
)

// TestCombine: allowed only where both allow; the skills' denial first,
// then the policy's denial, then its confirm.
func TestCombine(t *testing.T) {
	skillAllow := policyengine.Decision{Action: policyengine.Allow, Reason: "skill allows", Rule: "api.example.com:443"}
	skillDeny := policyengine.Decision{Action: policyengine.Deny, Reason: "skill denies"}
	polAllow := policyengine.Decision{Action: policyengine.Allow, Reason: "policy allows", Rule: "url.allow: x", Layer: "project (p)"}
	polNoRule := allow
	polDeny := policyengine.Decision{Action: policyengine.Deny, Reason: "policy denies", Rule: "url.deny: x", Layer: "global (g)"}
	polConfirm := policyengine.Decision{Action: policyengine.Confirm, Reason: "ask"}
	for _, tt := range []struct {
		name          string
		skills, pol   policyengine.Decision
		action        policyengine.Action
		reason, layer string
	}{
		{"both allow", skillAllow, polAllow, policyengine.Allow, "skill allows; policy allows", "project (p)"},
		{"skills allow, no policy rule", skillAllow, polNoRule, policyengine.Allow, "skill allows", ""},
		{"skills deny, policy allows", skillDeny, polAllow, policyengine.Deny, "skill denies", ""},
		{"skills deny, policy denies", skillDeny, polDeny, policyengine.Deny, "skill denies", ""},
		{"skills deny, policy asks", skillDeny, polConfirm, policyengine.Deny, "skill denies", ""},
		{"policy denies", skillAllow, polDeny, policyengine.Deny, "policy denies", "global (g)"},
		{"policy asks", skillAllow, polConfirm, policyengine.Confirm, "ask", ""},
	} {
		d := Combine(tt.skills, tt.pol)
		if d.Action != tt.action || d.Reason != tt.reason || d.Layer != tt.layer {
			t.Errorf("%s: %+v, want %s %q layer %q", tt.name, d, tt.action, tt.reason, tt.layer)
		}
	}
	// The skills' rule stays the rule of a combined allow.
	if d := Combine(skillAllow, polAllow); d.Rule != skillAllow.Rule {
		t.Errorf("both allow: rule %q", d.Rule)
	}
}

// TestCombineWithEngine: a skills engine and a policy answering the same
// questions.
func TestCombineWithEngine(t *testing.T) {
	skills, err := policyengine.New(policyengine.Permissions{
		Network:  policyengine.NewEntries("fetcher", []string{"*.example.com:443", "evil.net:443"}),
		Read:     policyengine.NewEntries("fetcher", []string{"/work/**"}),
		Declared: []string{"fetcher"},
	}, policyengine.Options{WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	pol := project(t, `url:
  default: allow
  deny: ['https://evil.net/*']
permissions:
  allow: [{command: make}]
caps:
  fs: {read: ['$WORK_DIR/src/**']}
`)
	for _, tt := range []struct {
		name  string
		d     policyengine.Decision
		want  policyengine.Action
		layer string
	}{
		{"url both", Combine(skills.CheckURL("https://api.example.com/"), pol.CheckURL("https://api.example.com/")), policyengine.Allow, projectLabel},
		{"url policy denies", Combine(skills.CheckURL("https://evil.net/"), pol.CheckURL("https://evil.net/")), policyengine.Deny, projectLabel},
		{"url skills deny", Combine(skills.CheckURL("https://other.org/"), pol.CheckURL("https://other.org/")), policyengine.Deny, ""},
		{"read both", Combine(skills.CheckRead("/work/src/a.go"), pol.CheckRead("/work/src/a.go")), policyengine.Allow, ""},
		{"read cap denies", Combine(skills.CheckRead("/work/.env"), pol.CheckRead("/work/.env")), policyengine.Deny, projectLabel},
		{"read skills deny", Combine(skills.CheckRead("/etc/shadow"), pol.CheckRead("/etc/shadow")), policyengine.Deny, ""},
		{"exec policy asks", Combine(skills.CheckExec("curl x"), pol.CheckExec("curl x")), policyengine.Confirm, ""},
		{"exec both", Combine(skills.CheckExec("make"), pol.CheckExec("make")), policyengine.Allow, "-"},
	} {
		wantDecision(t, tt.name, tt.d, tt.want, "-", tt.layer)
	}
}
