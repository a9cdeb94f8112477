package skill

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

func writeDenySkill(t *testing.T, name, deny string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	text := "---\nname: " + name + "\ndescription: d\npermissions:\n  fs:\n    read: [\"$WORK_DIR/**\"]\n    deny: " + deny + "\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDenyGlobs: fs.deny is expanded like the other fs lists ("**/NAME"
// means anywhere), merged by union with its sources, and a glob that is
// not one is an error naming the field.
func TestDenyGlobs(t *testing.T) {
	a, err := Load(writeDenySkill(t, "one", `["**/.env", "$HOME/.ssh/**"]`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(writeDenySkill(t, "two", `["**/.env", "**/*.pem"]`))
	if err != nil {
		t.Fatal(err)
	}
	p := mustMerge(t, []*Skill{a, b})
	want := []policyengine.Entry{{Value: "/**/*.pem", From: []string{"two"}}, {Value: "/**/.env", From: []string{"one", "two"}}, {Value: "/home/u/.ssh/**", From: []string{"one"}}}
	if !reflect.DeepEqual(p.Deny, want) {
		t.Errorf("deny = %+v, want %+v", p.Deny, want)
	}
	if !reflect.DeepEqual(mustMerge(t, []*Skill{b, a}).Deny, want) {
		t.Error("merge of deny is not commutative")
	}
	for _, bad := range []string{`["**"]`, `["/**"]`, `["relative/.env"]`, `["$NOPE/x"]`, `["/ws/../etc"]`, `["[ab"]`, `"**/.env"`} {
		_, err := Load(writeDenySkill(t, "bad", bad))
		if err == nil || !strings.Contains(err.Error(), "permissions.fs.deny") {
			t.Errorf("deny %s: %v", bad, err)
		}
	}
}
