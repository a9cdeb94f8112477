package agentpolicy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// TestRememberNewFile: a missing file is created, holding version 1 and
// the rules.
func TestRememberNewFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	added, err := Remember(file, "npm test && make build")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(added, []Rule{{CommandGlob: "npm test"}, {CommandGlob: "make build"}}) {
		t.Errorf("added %v", added)
	}
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := &Policy{Version: 1, Permissions: Rules{Allow: []Rule{{CommandGlob: "npm test"}, {CommandGlob: "make build"}}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("file holds %+v, want %+v", p, want)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("temporary file left: %v", entries)
	}
	for _, f := range []string{filepath.Join(t.TempDir(), "no", "such", "dir", "p.yaml")} {
		if _, err := Remember(f, "make"); err == nil {
			t.Errorf("%s: no error", f)
		}
	}
}

const existingPolicy = `# corral project policy
version: 1
url:
  default: deny # deny unless listed
  allow:
    - "https://*.example.com/*"
permissions:
  allow:
    - command: git status
    - command_glob: make
      skill_name: builder
  deny:
    - command: git push # never
caps:
  network: ["*.example.com:443"]
`

// TestRememberExistingFile: the file keeps its comments and other keys,
// duplicates are skipped, the result parses and allows the line.
func TestRememberExistingFile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "policy.yaml", existingPolicy)
	before := mustParse(t, existingPolicy)
	added, err := Remember(file, "git status && make && npm test")
	if err != nil {
		t.Fatal(err)
	}
	// "git status" needs no rule (the built-in list); "make" is new: the
	// existing rule has a skill_name.
	if !slices.Equal(added, []Rule{{CommandGlob: "make"}, {CommandGlob: "npm test"}}) {
		t.Errorf("added %v", added)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "file", string(data), "# corral project policy", "# deny unless listed", "# never")
	after, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.URL, before.URL) || !reflect.DeepEqual(after.Caps, before.Caps) ||
		!reflect.DeepEqual(after.Permissions.Deny, before.Permissions.Deny) || after.Version != 1 {
		t.Errorf("other keys changed:\n%s", data)
	}
	wantAllow := append(slices.Clone(before.Permissions.Allow), Rule{CommandGlob: "make"}, Rule{CommandGlob: "npm test"})
	if !reflect.DeepEqual(after.Permissions.Allow, wantAllow) {
		t.Errorf("allow %+v, want %+v", after.Permissions.Allow, wantAllow)
	}
	e := evaluator(t, nil, Layer{Name: "project", Source: file, Policy: after})
	wantDecision(t, "remembered line", e.CheckExec("git status && make && npm test"), policyengine.Allow, "-", "-")

	// Remembering again adds nothing and changes nothing.
	added, err = Remember(file, "npm test; make")
	if err != nil || len(added) != 0 {
		t.Errorf("again: added %q, %v", added, err)
	}
	again, _ := os.ReadFile(file)
	if string(again) != string(data) {
		t.Errorf("again: file changed:\n%s\n---\n%s", data, again)
	}
}

// TestRememberShapes: files whose permissions are absent, null, flow style
// or JSON.
func TestRememberShapes(t *testing.T) {
	for _, tt := range []struct{ name, content string }{
		{"no permissions", "version: 1\nurl: {default: allow}\n"},
		{"null permissions", "version: 1\npermissions:\n"},
		{"null allow", "permissions:\n  allow:\n  deny: [{command: rm}]\n"},
		{"flow allow", "permissions: {allow: [{command: ls}], deny: [{command: rm}]}\n"},
		{"JSON", `{"version": 1, "url": {"default": "allow"}, "permissions": {"deny": [{"command": "rm"}]}}`},
		{"blank", "\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "p.yaml", tt.content)
			var before *Policy
			if strings.TrimSpace(tt.content) != "" {
				before = mustParse(t, tt.content)
			}
			if _, err := Remember(file, "npm test"); err != nil {
				t.Fatal(err)
			}
			after, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(after.Permissions.Allow, Rule{CommandGlob: "npm test"}) {
				t.Errorf("allow %+v lacks npm test", after.Permissions.Allow)
			}
			if before != nil && (!reflect.DeepEqual(after.URL, before.URL) || !reflect.DeepEqual(after.Permissions.Deny, before.Permissions.Deny)) {
				t.Errorf("other keys changed: %+v", after)
			}
		})
	}
}

// TestRememberRefuses: an invalid file or line is an error and the file
// is left alone.
func TestRememberRefuses(t *testing.T) {
	for _, tt := range []struct{ content, line string }{
		{"version: 1\nbogus: 2\n", "make"},
		{"- a\n- b\n", "make"},
		{"version: 1\n", "echo 'unterminated"},
		{"version: 1\n", ""},
		{"version: 1\n", "cd sub && npm ci"},
		{`{"version": 1}`, "npm run $SCRIPT"},
	} {
		file := writeFile(t, t.TempDir(), "p.yaml", tt.content)
		if added, err := Remember(file, tt.line); err == nil {
			t.Errorf("%q + %q: added %q, want an error", tt.content, tt.line, added)
		}
		if data, _ := os.ReadFile(file); string(data) != tt.content {
			t.Errorf("%q: file changed to %q", tt.content, data)
		}
	}
}

// TestRememberCommentOnlyFile guards a fixed bug: a policy file holding only
// comments (a fresh template) cannot be remembered into: Parse says
// "empty", and Remember only forgives that for a blank file.
func TestRememberCommentOnlyFile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "p.yaml", "# project policy: see corral policy schema\n")
	if _, err := Remember(file, "make"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	wantContains(t, "file", string(data), "# project policy", "command_glob: make")
}

// TestRememberKeepsMode guards a fixed bug: Remember writes a new file with mode
// 0644 and renames it over the policy, so a 0600 policy becomes world
// readable (and a symlinked policy is replaced by a plain file).
func TestRememberKeepsMode(t *testing.T) {
	file := writeFile(t, t.TempDir(), "p.yaml", "version: 1\n")
	if _, err := Remember(file, "make"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}
