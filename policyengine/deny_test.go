package policyengine

import (
	"strings"
	"testing"
)

func TestDenyCarvesGrants(t *testing.T) {
	p := Permissions{
		Read:     NewEntries("docs", []string{"/srv/docs/**"}),
		Write:    NewEntries("dev", []string{"/ws/**"}),
		Deny:     NewEntries("guard", []string{"/**/.env", "/home/u/.ssh/**", "/**/*.pem", "/ws/secrets"}),
		Declared: []string{"dev", "docs", "guard"},
	}
	e, err := New(p, Options{WorkDir: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path        string
		read, write Action
		rule        string
	}{
		{"/ws/.env", Deny, Deny, "/**/.env"},
		{"/ws/a/b/.env", Deny, Deny, "/**/.env"},
		{"/ws/x/../.env", Deny, Deny, "/**/.env"},
		{".env", Deny, Deny, "/**/.env"},
		{"/ws/.envrc", Allow, Allow, "/ws/**"},
		{"/ws/key.pem", Deny, Deny, "/**/*.pem"},
		{"/srv/docs/tls/key.pem", Deny, Deny, "/**/*.pem"},
		{"/srv/docs/readme", Allow, Deny, "/srv/docs/**"},
		{"/ws/secrets", Deny, Deny, "/ws/secrets"},
		{"/ws/secrets/token", Deny, Deny, "/ws/secrets"}, // below a denied folder
		{"/ws/secrets2", Allow, Allow, "/ws/**"},
		// The baseline outside the grants is not carved.
		{"/etc/ssl/certs/ca.pem", Allow, Deny, "/etc/ssl/certs/**"},
		// Outside every grant a deny changes nothing: denied anyway.
		{"/home/u/.ssh/id_rsa", Deny, Deny, ""},
	} {
		r, w := e.CheckRead(c.path), e.CheckWrite(c.path)
		if r.Action != c.read || w.Action != c.write {
			t.Errorf("%s: read %v write %v, want %v %v (%s | %s)", c.path, r.Action, w.Action, c.read, c.write, r.Reason, w.Reason)
		}
		if c.rule != "" && r.Rule != c.rule {
			t.Errorf("%s: read decided by %q, want %q", c.path, r.Rule, c.rule)
		}
		if c.read == Deny && c.rule != "" && strings.HasPrefix(c.rule, "/") && !strings.Contains(r.Reason, "(from guard)") {
			t.Errorf("%s: reason %q does not name the skill", c.path, r.Reason)
		}
	}
}

func TestDenyMergeIsUnion(t *testing.T) {
	a := Permissions{Deny: NewEntries("a", []string{"/**/.env"})}
	b := Permissions{Deny: NewEntries("b", []string{"/**/.env", "/**/*.pem"})}
	ab, ba := a.Merge(b), b.Merge(a)
	if len(ab.Deny) != 2 || ab.Deny[0].Value != "/**/*.pem" || strings.Join(ab.Deny[1].From, ",") != "a,b" {
		t.Fatalf("merge: %+v", ab.Deny)
	}
	if len(ba.Deny) != len(ab.Deny) || ba.Deny[1].Value != ab.Deny[1].Value {
		t.Fatalf("not commutative: %+v vs %+v", ab.Deny, ba.Deny)
	}
}
