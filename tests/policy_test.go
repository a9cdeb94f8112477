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

// TestPolicyReadsBashScripts: a bash -c or bash -lc script is read with
// bash's grammar, so the policy's allow rules cover its programs and it
// runs without --confirmed; sh -c's script is still read as dash reads
// it too, a deny rule inside bash syntax still denies, and bash code that
// would run a command hidden in a value (arithmetic on a file's content)
// is put to the user, so without --confirmed it does not run. check exec
// answers as exec does.
func TestPolicyReadsBashScripts(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "policy", "hide a command in a value bash evaluates as arithmetic, under an allow rule")
	work := newDir(t, asSelf, "work")
	writeFile(t, filepath.Join(work, "n.txt"), "a[$(touch PWNED)]\n", 0o644)
	pol := writePolicy(t, newDir(t, asSelf, "policy"), "permissions:\n  deny:\n    - {command: \"git push\"}\n  allow:\n    - {command: echo}\n    - {command: read}\n")
	policy := []string{"--work-dir", work, "--policy", pol, "--global-policy", ""}
	run := func(argv ...string) result {
		return asSelf.run(t, runOpts{args: append(append([]string{"exec"}, policy...), append([]string{"--"}, argv...)...), dir: work})
	}
	check := func(line string) result {
		return asSelf.run(t, runOpts{args: append(append([]string{"check"}, policy...), "exec", line), dir: work})
	}
	for _, argv := range [][]string{
		{"bash", "-lc", "[[ -f n.txt ]] && echo yes"},
		{"bash", "-c", "for ((i=0;i<2;i++)); do echo yes$i; done"},
	} {
		if r := run(argv...); r.code != 0 || !strings.Contains(r.stdout, "yes") {
			t.Errorf("%q: exit %d, want 0 without --confirmed:\n%s", argv, r.code, r)
		}
		if r := check(shellQuote(argv)); r.code != 0 {
			t.Errorf("check exec %q: exit %d, want 0 (allow):\n%s", argv, r.code, r)
		}
	}
	for _, argv := range [][]string{
		{"sh", "-c", "[[ -f n.txt ]] && echo yes"},
		{"bash", "-c", "read x < n.txt; echo $((x))"},
	} {
		if r := run(argv...); r.code != 126 || !strings.Contains(r.stderr, "--confirmed") {
			t.Errorf("%q: exit %d, want 126 naming --confirmed:\n%s", argv, r.code, r)
		}
		if r := check(shellQuote(argv)); r.code != 2 {
			t.Errorf("check exec %q: exit %d, want 2 (confirm):\n%s", argv, r.code, r)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
		t.Error("the command hidden in n.txt ran")
	}
	if r := run("bash", "-lc", "[[ -d . ]] && git push origin main"); r.code != 126 || !strings.Contains(r.stderr, "git push") {
		t.Errorf("denied command inside [[ ]] &&: exit %d, want 126:\n%s", r.code, r)
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

// TestPolicyRemember drives corral policy remember and check through the
// binary: a JSON policy stays JSON; what is stored allows exactly the
// approved command ("npm run lint", not "npm run build"; "git --no-pager
// push origin main", not "git push"); a line no rule can hold exactly
// (cd, $VAR as the program, sudo, a pipe into a program) exits 125 and
// leaves the file alone; a symbolic link is refused.
func TestPolicyRemember(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	dir := newDir(t, asSelf, "policy")
	pol := filepath.Join(dir, "policy.json")
	writeFile(t, pol, `{"version": 1, "permissions": {"deny": [{"command": "rm"}]}}`, 0o640)
	corral := func(args ...string) result {
		return asSelf.run(t, runOpts{args: args, dir: work})
	}
	check := func(line string) int {
		return corral("check", "--work-dir", work, "--global-policy", "", "--policy", pol, "tool", "bash", line).code
	}
	if c := check("npm run lint"); c != 2 {
		t.Fatalf("before remember: check exits %d, want 2 (confirm)", c)
	}
	for _, line := range []string{"npm run lint", "git --no-pager push origin main", "git commit -m 'fix bug'"} {
		if r := corral("policy", "remember", "--policy", pol, line); r.code != 0 || !strings.Contains(r.stdout, "command_glob") {
			t.Fatalf("remember %q:\n%s", line, r)
		}
	}
	data := readFile(t, pol)
	var doc map[string]any
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatalf("the policy is no longer JSON: %v\n%s", err, data)
	}
	if st, err := os.Stat(pol); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode not kept: %v %v", st.Mode(), err)
	}
	for line, want := range map[string]int{
		"npm run lint": 0, "npm run build": 2, "npm run lint --fix": 2, "npm 'run lint'": 2,
		"git --no-pager push origin main": 0, "git push": 2, "git push origin main": 2,
		"git commit -m 'fix bug'": 0, "git commit -m fix bug": 2, "rm -rf x": 1,
	} {
		if c := check(line); c != want {
			t.Errorf("check %q after remember: exit %d, want %d", line, c, want)
		}
	}

	for _, tt := range []struct{ line, why string }{
		{"cd sub && npm ci", "cd changes the folder"},
		{"$CMD build", "$ expands"},
		{"sudo apt update", "sudo runs another program"},
		{"cat x.py | python3", "python3 reads the output"},
		{"npm test > out.txt", "writes to a file"},
	} {
		r := corral("policy", "remember", "--policy", pol, tt.line)
		if r.code != 125 || !strings.Contains(r.stderr, tt.why) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("remember %q: want exit 125 and one line saying %q:\n%s", tt.line, tt.why, r)
		}
	}
	if after := readFile(t, pol); after != data {
		t.Errorf("a refused remember changed the file:\n%s", after)
	}

	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(pol, link); err != nil {
		t.Fatal(err)
	}
	if r := corral("policy", "remember", "--policy", link, "make build"); r.code != 125 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("remember through a link:\n%s", r)
	}
	if after := readFile(t, pol); after != data {
		t.Errorf("remember through a link changed its target:\n%s", after)
	}
}

// TestPolicySeedKeys: a policy written as the seeds write it works: its
// URL policy under url_policy, and skill_name in a skill_load rule naming
// the skill being loaded, whatever skill is active.
func TestPolicySeedKeys(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	skills := newDir(t, asSelf, "skills")
	trusted := writeSkill(t, skills, "trusted", "")
	pol := writePolicy(t, newDir(t, asSelf, "policy"), `
permissions:
  allow: [{tool: skill_load, skill_name: trusted}]
  deny: [{tool: skill_load, skill_name: untrusted}]
`)
	urlPol := writePolicy(t, newDir(t, asSelf, "urlpolicy"), "url_policy:\n  allow: [\"https://api.example.com/*\"]\n")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"tool", "skill_load", "trusted"}, 0},
		{[]string{"tool", "skill_load", "untrusted"}, 1},
		{[]string{"--skill", trusted, "tool", "skill_load", "untrusted"}, 1},
		{[]string{"--skill", trusted, "tool", "skill_load", "other"}, 2},
		{[]string{"tool", "skill_load"}, 125},
		{[]string{"--policy-json", `{"url_policy": {"default": "allow"}, "url": {}}`, "url", "https://x.example/"}, 125},
	} {
		args := append([]string{"check", "--work-dir", work, "--policy", pol, "--global-policy", ""}, c.args...)
		if r := asSelf.run(t, runOpts{args: args, dir: work}); r.code != c.code {
			t.Errorf("check %q: exit %d, want %d:\n%s", c.args, r.code, c.code, r)
		}
	}
	// The URL policy under url_policy decides: with a skill that may reach
	// any host on 443, a URL it allows is allowed, another denied by its
	// default (deny).
	net := writeSkill(t, skills, "net", "  network:\n    allow: [\"*:443\"]\n")
	for url, code := range map[string]int{"https://api.example.com/v1": 0, "https://x.example/": 1} {
		r := asSelf.run(t, runOpts{args: []string{"check", "--work-dir", work, "--skill", net, "--policy", urlPol, "--global-policy", "", "url", url}, dir: work})
		if r.code != code || code == 1 && !strings.Contains(r.stdout, "url.default: deny") {
			t.Errorf("check url %s: exit %d, want %d by the url_policy:\n%s", url, r.code, code, r)
		}
	}
	r := asSelf.run(t, runOpts{args: []string{"explain", "--work-dir", work, "--policy", urlPol, "--global-policy", "", "--json"}, dir: work})
	if r.code != 0 || !strings.Contains(r.stdout, "default deny") {
		t.Errorf("explain does not show the url_policy layer with default deny:\n%s", r)
	}
}
