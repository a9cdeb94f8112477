//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyRun runs corral with a policy file written from text.
func writePolicy(t *testing.T, dir, text string) string {
	t.Helper()
	f := filepath.Join(dir, "policy.yaml")
	writeFile(t, f, text, 0o644)
	return f
}

// TestPolicyNarrowsFiles: the skill grants the whole work dir; the policy
// caps writes to out/ and reads to the work dir. The kernel enforces the
// intersection: writing beside out/ fails even though the skill allows it.
func TestPolicyNarrowsFiles(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "policy", "write where the skill allows and the policy does not")
		f := newFS(t, u)
		os.MkdirAll(filepath.Join(f.work, "out"), 0o755)
		own(t, u, filepath.Join(f.work, "out"))
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "wide", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		pol := writePolicy(t, newDir(t, asSelf, "policy"), "caps:\n  fs:\n    read: [\"$WORK_DIR/**\"]\n    write: [\"$WORK_DIR/out/**\"]\n")
		writeFile(t, filepath.Join(f.work, "attack.sh"), `./probe write out/ok.txt x; ./probe write beside.txt x; ./probe read attack.sh`+"\n", 0o644)
		own(t, u, filepath.Join(f.work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--skill", sk, "--policy", pol, "--global-policy", "", "--confirmed", "--", "sh", "attack.sh"}, dir: f.work})
		lines := probeLines(r.stdout)
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "OK") || strings.HasPrefix(lines[1], "OK") || !strings.HasPrefix(lines[2], "OK") {
			t.Errorf("want out/ writable, beside.txt not, attack.sh readable; got %q:\n%s", lines, r)
		}
		if _, err := os.Stat(filepath.Join(f.work, "beside.txt")); err == nil {
			t.Error("beside.txt was written")
		}
	})
}

// TestPolicyNarrowsExec: the skill allows any program; the policy caps
// exec to sh and the probe. Another program fails to run, through the
// shell, by the kernel (Landlock), not only in the preflight.
func TestPolicyNarrowsExec(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "policy", "run a program the skill allows and the policy does not")
		f := newFS(t, u)
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "anyexec", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		pol := writePolicy(t, newDir(t, asSelf, "policy"), fmt.Sprintf("caps:\n  exec: [sh, %s]\n", filepath.Join(f.work, "probe")))
		// The preflight sees only "sh attack.sh"; the script runs cat.
		writeFile(t, filepath.Join(f.work, "attack.sh"), "./probe exec /usr/bin/cat /etc/hostname\n/usr/bin/cat /etc/hostname && echo RAN-CAT\n", 0o644)
		own(t, u, filepath.Join(f.work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--skill", sk, "--policy", pol, "--global-policy", "", "--confirmed", "--", "sh", "attack.sh"}, dir: f.work})
		lines := probeLines(r.stdout)
		if strings.Contains(r.stdout, "RAN-CAT") || len(lines) == 0 || strings.HasPrefix(lines[0], "OK") {
			t.Errorf("cat ran under an exec cap without it:\n%s", r)
		}
	})
}

// TestPolicyCommandRules: a deny rule refuses with 126 before anything
// runs; a command no rule allows needs --confirmed; the audit log names
// the agent.
func TestPolicyCommandRules(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "policy", "run a command the policy denies")
	work := newDir(t, asSelf, "work")
	logs := newDir(t, asSelf, "logs")
	audit := filepath.Join(logs, "audit.jsonl")
	pol := writePolicy(t, newDir(t, asSelf, "policy"), "permissions:\n  deny:\n    - {command: \"git push\"}\n  allow:\n    - {command: echo}\n")
	base := []string{"exec", "--work-dir", work, "--policy", pol, "--global-policy", "", "--agent", "agent-7", "--audit-log", audit, "--"}
	run := func(argv ...string) result {
		return asSelf.run(t, runOpts{args: append(append([]string(nil), base...), argv...), dir: work})
	}
	if r := run("sh", "-c", "echo hi && git push origin main"); r.code != 126 || !strings.Contains(r.stderr, "git push") {
		t.Errorf("denied command: exit %d, want 126:\n%s", r.code, r)
	}
	if r := run("sh", "-c", "echo hi; date"); r.code != 0 || !strings.Contains(r.stdout, "hi") {
		t.Errorf("allowed and read-only commands: exit %d:\n%s", r.code, r)
	}
	if r := run("sh", "-c", "touch x"); r.code != 126 || !strings.Contains(r.stderr, "--confirmed") {
		t.Errorf("unconfirmed command: exit %d, want 126 naming --confirmed:\n%s", r.code, r)
	}
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--policy", pol, "--global-policy", "", "--confirmed", "--", "sh", "-c", "touch x"}, dir: work})
	if r.code != 0 {
		t.Errorf("confirmed command: exit %d:\n%s", r.code, r)
	}
	var denials []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, audit)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		denials = append(denials, m)
	}
	if len(denials) != 2 {
		t.Fatalf("want 2 audited denials, got %v", denials)
	}
	for _, d := range denials {
		if d["agent"] != "agent-7" || d["permission"] != "exec" || d["time"] == nil || d["context"] == nil || d["reason"] == nil || d["action"] != "deny" {
			t.Errorf("audit event lacks agent, permission, time, context or reason: %v", d)
		}
	}
}

// TestPolicyURLThroughProxy: the skill allows a loopback origin; the
// policy's URL rules deny one path and its network caps deny another
// port. The proxy enforces both, with the layer in the audit log.
func TestPolicyURLThroughProxy(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "policy", "fetch a URL the skill allows and the policy denies")
	o := newOrigin(t)
	f := newNet(t, asSelf, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
	pol := writePolicy(t, newDir(t, asSelf, "policy"), fmt.Sprintf(`{"url": {"default": "allow", "deny": ["http://api.test:%d/admin/*"]}}`, o.port))
	r := f.run(t, fmt.Sprintf(`
curl -s -o /dev/null -w 'ok=%%{http_code}\n' http://api.test:%d/public
curl -s -o /dev/null -w 'admin=%%{http_code}\n' http://api.test:%d/admin/users
`, o.port, o.port), "--resolve", "api.test=127.0.0.1", "--policy", pol, "--global-policy", "", "--agent", "a1", "--confirmed")
	if !strings.Contains(r.stdout, "ok=200\n") || !strings.Contains(r.stdout, "admin=403\n") {
		t.Errorf("want ok=200 and admin=403:\n%s", r)
	}
	var denied []proxyEvent
	for _, e := range readAudit(t, f.audit) {
		if e.Decision == "deny" {
			denied = append(denied, e)
		}
	}
	if len(denied) != 1 || !strings.Contains(denied[0].Reason, "url.deny") {
		t.Errorf("want one URL-policy denial in the audit log, got %v", denied)
	}
	if !strings.Contains(readFile(t, f.audit), `"agent":"a1"`) {
		t.Errorf("audit events lack the agent id:\n%s", readFile(t, f.audit))
	}
	for _, l := range o.requests() {
		if strings.Contains(l, "/admin") {
			t.Errorf("the origin got the denied request %q", l)
		}
	}
}

// TestPolicyCheck: check --policy answers with both sides; confirm exits 2
// and --no-confirm turns it into a deny.
func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	pol := writePolicy(t, newDir(t, asSelf, "policy"), `
url:
  default: deny
  allow: ["https://api.example.com/*"]
  deny_override: ["preset:cloud_metadata"]
permissions:
  deny: [{command: "git push"}]
  allow: [{tool: web_fetch}]
caps:
  network: ["api.example.com:443"]
`)
	skills := sharedSkill(t, "web-fetch")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"url", "https://api.example.com/v1"}, 0},
		{[]string{"url", "https://example.org/"}, 1},
		{[]string{"net", "example.org:443"}, 1},
		{[]string{"tool", "web_fetch"}, 0},
		{[]string{"tool", "write"}, 2},
		{[]string{"--no-confirm", "tool", "write"}, 1},
		{[]string{"tool", "bash", "git push"}, 1},
	} {
		args := append([]string{"check", "--work-dir", work, "--skill", skills, "--policy", pol, "--global-policy", ""}, c.args...)
		if r := asSelf.run(t, runOpts{args: args, dir: work}); r.code != c.code {
			t.Errorf("check %q: exit %d, want %d:\n%s", c.args, r.code, c.code, r)
		}
	}
	bad := writePolicy(t, newDir(t, asSelf, "bad"), "url:\n  allow: [\"preset:nope\"]\n")
	if r := asSelf.run(t, runOpts{args: []string{"check", "--work-dir", work, "--policy", bad, "--global-policy", "", "url", "https://a.b/"}, dir: work}); r.code != 125 || !strings.Contains(r.stderr, "unknown preset") {
		t.Errorf("invalid preset: exit %d, want 125 naming it:\n%s", r.code, r)
	}
}
