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

// TestRememberCommands: each segment becomes a command rule of one word,
// or two for programs that take a subcommand, without duplicates.
func TestRememberCommands(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"git push origin main", []string{"git push"}},
		{"git push && git push --force", []string{"git push"}},
		{"git status; git push; git status -s", []string{"git status", "git push"}},
		{"npm test | tee out.txt", []string{"npm test", "tee"}},
		{"ls -la", []string{"ls"}},
		{"tee out", []string{"tee"}}, // not a subcommand program: one word
		{"terraform", []string{"terraform"}},
		{"go test ./...", []string{"go test"}},
		{"go -C dir build", []string{"go"}},
		{"docker compose up -d", []string{"docker compose"}},
		{"cargo build --release && ./target/release/app", []string{"cargo build", "./target/release/app"}},
		{"FOO=1 make build", []string{"FOO=1 make build"}},
		{"make $TARGET", []string{"make"}},
		{"make 'two words'", []string{"make"}},
		{"kubectl get pods -A", []string{"kubectl get"}},
		{"echo $(date +%s)", []string{"echo", "date"}},
		{"(cd sub && npm ci)", []string{"cd", "npm ci"}},
		{"'git' \"push\"", []string{"git push"}},
	} {
		got, err := RememberCommands(tt.line)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("RememberCommands(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
		// What is remembered allows the line.
		var rules []string
		for _, c := range got {
			rules = append(rules, "{command: "+c+"}")
		}
		e := project(t, "permissions:\n  allow: ["+strings.Join(rules, ", ")+"]\n")
		if d := e.CheckExec(tt.line); d.Action != policyengine.Allow {
			t.Errorf("%q: remembered %q, still %s: %s", tt.line, got, d.Action, d.Reason)
		}
	}
	for _, line := range []string{"", "   ", "echo 'unterminated", "> out"} {
		if got, err := RememberCommands(line); err == nil {
			t.Errorf("RememberCommands(%q) = %q, want an error", line, got)
		}
	}
}

// TestRememberCommandsTooWide guards a fixed bug: what is remembered can allow
// far more than the line the user agreed to.
//
//   - A subcommand with a dash is dropped: "git rev-parse HEAD" and
//     "git cherry-pick x" become {command: git}, which allows git push.
//   - A wrapper, shell or eval is remembered alone: "sudo apt update"
//     becomes {command: sudo}, "sh -c 'make'" {command: sh}, "env FOO=1
//     make" {command: env}; each then allows any command behind it, past
//     every deny rule (command rules do not look through wrappers).
func TestRememberCommandsTooWide(t *testing.T) {
	for _, tt := range []struct{ line, not string }{
		{"git rev-parse HEAD", "git"},
		{"git cherry-pick abc", "git"},
		{"npm run-script build", "npm"},
		{"sudo apt update", "sudo"},
		{"sh -c 'make'", "sh"},
		{"bash -lc 'make'", "bash"},
		{"env FOO=1 make", "env"},
		{"eval make", "eval"},
		{"xargs -n1 echo", "xargs"},
		{"timeout 10 make", "timeout"},
	} {
		got, err := RememberCommands(tt.line)
		if err == nil && slices.Contains(got, tt.not) {
			t.Errorf("RememberCommands(%q) = %q: {command: %s} allows much more", tt.line, got, tt.not)
		}
	}
}

// TestRememberNewFile: a missing file is created, holding version 1 and
// the rules.
func TestRememberNewFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	added, err := Remember(file, "npm test && make build")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(added, []string{"npm test", "make build"}) {
		t.Errorf("added %q", added)
	}
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := &Policy{Version: 1, Permissions: Rules{Allow: []Rule{{Command: "npm test"}, {Command: "make build"}}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("file holds %+v, want %+v", p, want)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
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
    - command: make
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
	// "make" is new: the existing rule has a skill_name.
	if !slices.Equal(added, []string{"make", "npm test"}) {
		t.Errorf("added %q", added)
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
	wantAllow := append(slices.Clone(before.Permissions.Allow), Rule{Command: "make"}, Rule{Command: "npm test"})
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
			if !slices.Contains(after.Permissions.Allow, Rule{Command: "npm test"}) {
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
	wantContains(t, "file", string(data), "# project policy", "command: make")
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
