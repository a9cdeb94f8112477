//go:build linux

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedSkill is a sample skill of the repository's skills folder, used
// in place.
func sharedSkill(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "skills", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	return dir
}

type decision struct {
	Action   string `json:"action"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule"`
	Error    string `json:"error"`
	NotFound bool   `json:"not_found"`
}

// TestCheckSampleSkills asks the questions of the foundation issue through
// the real binary.
func TestCheckSampleSkills(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a run with the tests' home, whose bin folder only a read-only bind keeps (the landlock tier refuses it, and check says so)")
	tests := []struct {
		skills     []string
		kind, arg  string
		wantCode   int
		wantAction string
		says       string
	}{
		{[]string{"web-fetch"}, "net", "api.example.com:443", 0, "allow", "*:443"},
		{[]string{"web-fetch"}, "net", "169.254.169.254:80", 1, "deny", "cloud metadata"},
		{[]string{"web-fetch"}, "net", "0x7f000001:443", 1, "deny", "loopback"},
		{[]string{"web-fetch"}, "url", "http://[::ffff:169.254.169.254]/latest", 1, "deny", "cloud metadata"},
		{[]string{"web-fetch"}, "net", "example.com:22", 1, "deny", "not in the network allow list"},
		{[]string{"api-a", "api-b"}, "exec", "curl -s https://api.a.com | python3 -c pass", 0, "allow", "curl, python3"},
		{[]string{"api-a"}, "exec", "curl -s https://api.a.com | python3 -c pass", 1, "deny", "python3 is not in the exec list of skills api-a"},
		{[]string{"repo-review"}, "exec", "cat x > /etc/passwd", 1, "deny", "/etc/passwd"},
		{[]string{"repo-review"}, "exec", "git log | head -5", 0, "allow", ""},
		{[]string{"python-data"}, "env", "PYTHONHASHSEED", 0, "allow", "python-data"},
		{[]string{"python-data"}, "env", "AWS_SECRET_ACCESS_KEY", 1, "deny", "dropped"},
		{[]string{"python-data"}, "write", "/etc/passwd", 1, "deny", "fs.write"},
		{[]string{"plain"}, "write", "out.txt", 0, "allow", "default sandbox"},
	}
	for _, tt := range tests {
		args := []string{"check", "--work-dir", baseDir}
		for _, s := range tt.skills {
			args = append(args, "--skill", sharedSkill(t, s))
		}
		args = append(args, tt.kind, tt.arg)
		r := asSelf.run(t, runOpts{args: args})
		var d decision
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Errorf("check %s %q: not one JSON decision: %v\n%s", tt.kind, tt.arg, err, r)
			continue
		}
		if r.code != tt.wantCode || d.Action != tt.wantAction || !strings.Contains(d.Reason+d.Rule, tt.says) {
			t.Errorf("check %v %s %q = exit %d %+v, want exit %d %s mentioning %q", tt.skills, tt.kind, tt.arg, r.code, d, tt.wantCode, tt.wantAction, tt.says)
		}
	}
}

// TestCheckStdin answers a stream of questions in order, one JSON line
// each, and keeps going after a malformed one.
func TestCheckStdin(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"kind":"net","arg":"api.a.com:443"}`,
		`{"kind":"net","arg":"api.b.com:443"}`,
		`not json`,
		`{"kind":"exec","arg":"curl x | python3 -c pass"}`,
		`{"kind":"net","arg":"example.com:70000"}`,
		``,
		`{"arg":"LANG","kind":"env"}`,
	}, "\n") + "\n"
	r := asSelf.run(t, runOpts{args: []string{"check", "--skill", sharedSkill(t, "api-a"), "--stdin"}, stdin: in})
	if r.code != 0 {
		t.Fatalf("check --stdin: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []struct{ action, err string }{{"allow", ""}, {"deny", ""}, {"deny", "invalid"}, {"deny", ""}, {"deny", "70000"}, {"allow", ""}}
	if len(lines) != len(want) {
		t.Fatalf("%d answers for %d questions:\n%s", len(lines), len(want), r.stdout)
	}
	for i, line := range lines {
		var d decision
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("answer %d is not JSON: %q", i, line)
		}
		if d.Action != want[i].action || !strings.Contains(d.Error, want[i].err) || (want[i].err == "") != (d.Error == "") {
			t.Errorf("answer %d = %+v, want %s with error %q", i, d, want[i].action, want[i].err)
		}
	}
}

// TestExplain prints the merged permissions with their sources and the
// kernel plan.
func TestExplain(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a kernel plan for the tests' home, whose bin folder only a read-only bind keeps")
	r := asSelf.run(t, runOpts{args: []string{"explain", "--json", "--skill", sharedSkill(t, "api-a"), "--skill", sharedSkill(t, "web-fetch")}})
	var x struct {
		Skills      []struct{ Name string }
		Default     bool `json:"default_sandbox"`
		Permissions struct {
			Exec []struct {
				Value string
				From  []string
			}
		}
		Plan struct {
			Landlock struct {
				Rules []struct{ Path, From string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil || r.code != 0 {
		t.Fatalf("explain --json: %v\n%s", err, r)
	}
	if len(x.Skills) != 2 || x.Default {
		t.Errorf("skills %+v, default %v", x.Skills, x.Default)
	}
	if len(x.Permissions.Exec) == 0 || x.Permissions.Exec[0].Value != "curl" || strings.Join(x.Permissions.Exec[0].From, ",") != "api-a,web-fetch" {
		t.Errorf("exec entries do not say where they came from: %+v", x.Permissions.Exec)
	}
	if len(x.Plan.Landlock.Rules) == 0 {
		t.Errorf("no kernel plan: %+v", x.Plan)
	}
	r = asSelf.run(t, runOpts{args: []string{"explain", "--skill", sharedSkill(t, "plain")}})
	if !strings.Contains(r.stdout, "default sandbox") || !strings.Contains(r.stdout, "kernel plan") {
		t.Errorf("explain for a skill without permissions does not name the default sandbox:\n%s", r)
	}
}

// TestHelpAndVersion: every command has -h, and help exits 0.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"help"}, {"help", "exec"}, {"exec", "-h"}, {"check", "-h"}, {"explain", "-h"}, {"doctor", "-h"}} {
		r := asSelf.run(t, runOpts{args: args})
		if r.code != 0 || r.output() == "" {
			t.Errorf("corral %v: %s", args, r)
		}
	}
	if v, fv := asSelf.run(t, runOpts{args: []string{"version"}}), asSelf.run(t, runOpts{args: []string{"--version"}}); v.stdout != fv.stdout || !strings.HasPrefix(v.stdout, "corral ") {
		t.Errorf("corral --version says %q, corral version %q", fv.stdout, v.stdout)
	}
	if r := asSelf.run(t, runOpts{args: []string{"frobnicate"}}); r.code != 125 {
		t.Errorf("unknown command: %s", r)
	}
}
