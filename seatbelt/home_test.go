package seatbelt

import (
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// TestHomeProtected: a write grant of the home folder keeps its
// home-relative protected paths and the run's skills read-only; a grant
// elsewhere adds no home rule.
func TestHomeProtected(t *testing.T) {
	perms := policyengine.Permissions{Write: policyengine.NewEntries("s", []string{"/Users/u/**"}), Declared: []string{"s"}}
	prof, err := Render(perms, Options{Home: "/Users/u", Keep: []string{"/Users/u/skills/x"}, Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\.ssh`, `\.config/fish`, `\.local/bin`, `\.bashrc`, `(subpath "/Users/u/skills/x")`} {
		if !strings.Contains(prof.Text, want) {
			t.Errorf("the profile does not protect %s", want)
		}
	}
	perms.Write = policyengine.NewEntries("s", []string{"/Users/u/ws/**"})
	prof, err = Render(perms, Options{Home: "/Users/u", Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(prof.Text, `\.local/bin`) {
		t.Error("a grant outside the home folder should not list its home-relative paths")
	}
}
