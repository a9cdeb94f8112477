package seatbelt

import (
	"regexp"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

func TestDenyAfterAllows(t *testing.T) {
	p := policyengine.Permissions{
		Read:     policyengine.NewEntries("docs", []string{"/srv/docs/**"}),
		Write:    policyengine.NewEntries("dev", []string{"/ws/**"}),
		Deny:     policyengine.NewEntries("guard", []string{"/**/.env", "/ws/keys/**", "/ws/id.pem"}),
		Declared: []string{"dev", "docs", "guard"},
	}
	prof, err := Render(p, Options{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	text := prof.Text
	deny := strings.Index(text, "(deny file-read* file-write*")
	if deny < 0 || deny < strings.LastIndex(text, "(allow file-read* file-write*") {
		t.Fatalf("the deny rule is missing or not after the allows:\n%s", text)
	}
	// "**/.env" is re-rooted at each grant, never at /: the baseline
	// outside the grants keeps its files.
	for _, want := range []string{`(regex "^/srv/docs(/.*)?/\\.env(/.*)?$")`, `(regex "^/ws(/.*)?/\\.env(/.*)?$")`, `(subpath "/ws/keys")`, `(subpath "/ws/id.pem")`} {
		if !strings.Contains(text[deny:], want) {
			t.Errorf("missing %s in\n%s", want, text[deny:])
		}
	}
	re := regexp.MustCompile(`^/ws(/.*)?/\.env(/.*)?$`)
	for p, want := range map[string]bool{"/ws/.env": true, "/ws/a/.env/x": true, "/ws/.envrc": false, "/etc/.env": false} {
		if re.MatchString(p) != want {
			t.Errorf("%s: %v", p, !want)
		}
	}
}
