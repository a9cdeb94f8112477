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

// checkAnswer is one answer of corral check, with the view it is for.
type checkAnswer struct {
	decision
	View  string `json:"view"`
	Path  string `json:"path"`
	code  int
	skill string // the skill asked with, where the caller keeps it
}

// askCheck asks corral check one question about work with skills.
func askCheck(t *testing.T, u user, work string, skills []string, kind, arg string) checkAnswer {
	t.Helper()
	args := []string{"check", "--work-dir", work}
	for _, s := range skills {
		args = append(args, "--skill", s)
	}
	r := u.run(t, runOpts{args: append(args, kind, arg), dir: work})
	var a checkAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || r.code < 0 || r.code > 2 {
		t.Fatalf("check %s %q: not one JSON decision (%v):\n%s", kind, arg, err, r)
	}
	a.code = r.code
	return a
}

// wantCheck fails t unless check answers kind arg with action, a reason
// mentioning says, for the view.
func wantCheck(t *testing.T, a checkAnswer, kind, arg, action, says, view string) {
	t.Helper()
	if a.Action != action || !strings.Contains(a.Reason, says) || (view != "" && a.View != view) {
		t.Errorf("check %s %s = %s (view %q): %s\nwant %s (view %q) mentioning %q", kind, arg, a.Action, a.View, a.Reason, action, view, says)
	}
}

// gitRepo makes a git folder at dir/.git with a config and, unless
// noHooks, a hooks folder, without running git.
func gitRepo(t *testing.T, dir string, noHooks bool) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n", 0o644)
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	if !noHooks {
		if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckFSProtected: check write of a protected path inside a write
// grant says deny, as exec's read-only binds enforce, for every kind of
// protected path: top-level git hooks and config, shell start-up files,
// a nested repository's config, and the hooks folder exec creates for a
// repository that has none.
func TestCheckFSProtected(t *testing.T) {
	attack(t, "check", "check write of protected paths answers what exec enforces")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		gitRepo(t, work, false)
		gitRepo(t, filepath.Join(work, "vendor", "lib"), false)
		gitRepo(t, filepath.Join(work, "sub"), true)
		writeFile(t, filepath.Join(work, ".bashrc"), "# rc\n", 0o644)
		writeFile(t, filepath.Join(work, ".git", "hooks", "pre-push"), "#!/bin/sh\n", 0o755)
		probe := installProbe(t, work)
		skill := writeSkill(t, newDir(t, u, "skills"), "plain", "")
		own(t, u, work)
		for _, target := range []string{".git/hooks/pre-commit", ".git/hooks/pre-push", ".git/config", ".bashrc", "vendor/lib/.git/config", "vendor/lib/.git/hooks/pre-commit", "sub/.git/hooks/post-checkout"} {
			a := askCheck(t, u, work, []string{skill}, "write", target)
			wantCheck(t, a, "write", target, "deny", "protected", "host")
			tok := token("hook")
			r := u.exec(t, work, []string{skill}, probe, "write", filepath.Join(work, target), tok)
			// The landlock tier lets the write happen and quarantines it
			// after the run: what matters is what the host has then.
			refused := strings.HasPrefix(r.stdout, "ERR ") || e2eTier == "landlock"
			if b, _ := os.ReadFile(filepath.Join(work, target)); strings.Contains(string(b), tok) || !refused {
				t.Errorf("exec wrote %s although check said deny:\n%s", target, r)
			}
			if e2eTier == "landlock" {
				// The quarantine moved the file: put back what the
				// questions below are about.
				restoreQuarantined(t, filepath.Join(work, target))
			}
		}
		// Control: a plain file in the same grant is allowed by both.
		a := askCheck(t, u, work, []string{skill}, "write", "notes.txt")
		wantCheck(t, a, "write", "notes.txt", "allow", "", "host")
		tok := token("notes")
		u.exec(t, work, []string{skill}, probe, "write", filepath.Join(work, "notes.txt"), tok)
		if b, _ := os.ReadFile(filepath.Join(work, "notes.txt")); string(b) != tok {
			t.Errorf("exec did not write notes.txt, which check allowed")
		}
		// A redirection of a command line is answered in the sandbox's
		// view, from the same plan.
		a = askCheck(t, u, work, []string{skill}, "exec", "echo x > .git/config")
		wantCheck(t, a, "exec", "echo x > .git/config", "deny", "protected", "sandbox")
	})
}

// restoreQuarantined renames the quarantined files in p's folder back to
// their names (the sweep quarantines a whole hooks folder that gained a
// hook: it cannot tell it from one moved into place), and fails unless p
// is back.
func restoreQuarantined(t *testing.T, p string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "*.corral-quarantined-*"))
	for _, q := range m {
		orig := q[:strings.LastIndex(q, ".corral-quarantined-")]
		if !exists(orig) {
			if err := os.Rename(q, orig); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !exists(p) {
		t.Fatalf("%s is gone, and not quarantined", p)
	}
}

// TestCheckFSPrivate: host paths in /tmp (outside the work dir), /var/tmp,
// /dev/shm and /proc are not reachable from the sandbox, which has
// private ones or none: check says so for the host's file, and the work
// dir under /tmp stays reachable.
func TestCheckFSPrivate(t *testing.T) {
	namespacesOnly(t, "the private /tmp, /var/tmp, /dev/shm and /proc it answers about (the landlock tier denies those paths as ungranted)")
	attack(t, "check", "check of host paths in the sandbox's private folders")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work") // in /tmp, like baseDir
		outside := newDir(t, u, "outside")
		secret := token("secret")
		writeFile(t, filepath.Join(outside, "s.txt"), secret, 0o644)
		inTmp := filepath.Join(os.TempDir(), token("corral-checkfs"))
		t.Cleanup(func() { os.Remove(inTmp) })
		varTmp := filepath.Join("/var/tmp", token("corral-checkfs"))
		writeFile(t, varTmp, secret, 0o644)
		t.Cleanup(func() { os.Remove(varTmp) })
		shm := filepath.Join("/dev/shm", token("corral-checkfs"))
		writeFile(t, shm, secret, 0o644)
		t.Cleanup(func() { os.Remove(shm) })
		own(t, u, varTmp, shm)
		probe := installProbe(t, work)
		skill := writeSkill(t, newDir(t, u, "skills"), "plain", "")
		own(t, u, work)
		for _, p := range []string{filepath.Join(outside, "s.txt"), varTmp, shm} {
			a := askCheck(t, u, work, []string{skill}, "read", p)
			wantCheck(t, a, "read", p, "deny", "not reachable", "host")
			r := u.exec(t, work, []string{skill}, probe, "read", p)
			noSecret(t, r, secret, "the host's "+p)
			a = askCheck(t, u, work, []string{skill}, "write", p)
			wantCheck(t, a, "write", p, "deny", "not reachable", "host")
		}
		// A new file in the host's /tmp: the write succeeds in the
		// sandbox's own /tmp, and the host's never sees it.
		a := askCheck(t, u, work, []string{skill}, "write", inTmp)
		wantCheck(t, a, "write", inTmp, "deny", "/tmp is private to the sandbox", "host")
		u.exec(t, work, []string{skill}, probe, "write", inTmp, secret)
		if exists(inTmp) {
			t.Errorf("the sandbox wrote the host's %s", inTmp)
		}
		// The host's /proc: this test's own process is not in the
		// sandbox's PID namespace.
		self := fmt.Sprintf("/proc/%d/cmdline", os.Getpid())
		a = askCheck(t, u, work, []string{skill}, "read", self)
		wantCheck(t, a, "read", self, "deny", "/proc is private", "host")
		if r := u.exec(t, work, []string{skill}, probe, "read", self); strings.Contains(r.stdout, "tests") {
			t.Errorf("the sandbox read the host's %s:\n%s", self, r)
		}
		// The work dir under /tmp is bound: reachable.
		a = askCheck(t, u, work, []string{skill}, "write", filepath.Join(work, "out.txt"))
		wantCheck(t, a, "write", "out.txt", "allow", "reaches the host's file", "host")
	})
}

// TestCheckFSSymlinks: a path is answered for the file the kernel
// reaches, following symlinks where they stand (also before ".."), not
// for the path as written.
func TestCheckFSSymlinks(t *testing.T) {
	namespacesOnly(t, "the private folders' wording of its answers (the landlock tier denies the same paths as ungranted)")
	attack(t, "check", "check of paths through symlinks")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		outside := newDir(t, u, "outside")
		secret := token("secret")
		writeFile(t, filepath.Join(outside, "s.txt"), secret, 0o644)
		writeFile(t, filepath.Join(outside, "a", "s.txt"), secret, 0o644)
		if err := os.MkdirAll(filepath.Join(outside, "a", "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		gitRepo(t, work, false)
		writeFile(t, filepath.Join(work, "data.txt"), "data", 0o644)
		inTmp := filepath.Join(os.TempDir(), token("corral-checkfs"))
		t.Cleanup(func() { os.Remove(inTmp) })
		for link, target := range map[string]string{
			"secret.lnk": filepath.Join(outside, "s.txt"),
			"config.lnk": filepath.Join(work, ".git", "config"),
			"hooks.lnk":  filepath.Join(work, ".git", "hooks"),
			"tmp.lnk":    inTmp,
			"deep":       filepath.Join(outside, "a", "b"),
			"data.lnk":   "data.txt",
		} {
			if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
				t.Fatal(err)
			}
		}
		probe := installProbe(t, work)
		skill := writeSkill(t, newDir(t, u, "skills"), "plain", "")
		own(t, u, work, outside)
		for _, c := range []struct{ kind, path, says string }{
			{"read", "secret.lnk", "not reachable"},
			{"read", "deep/../s.txt", "not reachable"},
			{"write", "config.lnk", "protected"},
			{"write", "hooks.lnk/pre-commit", "protected"},
			{"write", "tmp.lnk", "/tmp is private"},
		} {
			a := askCheck(t, u, work, []string{skill}, c.kind, c.path)
			wantCheck(t, a, c.kind, c.path, "deny", c.says, "host")
			tok := token("w")
			r := u.exec(t, work, []string{skill}, probe, c.kind, filepath.Join(work, c.path), tok)
			noSecret(t, r, secret, c.path)
			if c.kind == "write" {
				real, _ := filepath.EvalSymlinks(filepath.Join(work, c.path))
				if b, _ := os.ReadFile(real); strings.Contains(string(b), tok) {
					t.Errorf("exec wrote through %s although check said deny:\n%s", c.path, r)
				}
			}
		}
		a := askCheck(t, u, work, []string{skill}, "read", "data.lnk")
		wantCheck(t, a, "read", "data.lnk", "allow", "symlink", "host")
		if a.Path != filepath.Join(work, "data.txt") {
			t.Errorf("check read data.lnk names %q, not the real path", a.Path)
		}
	})
}

// TestCheckFSBaseline: the system baseline as the kernel has it: the
// sandbox gets its own /etc/passwd and /etc/hosts, and with an exec
// allowlist the programs in /usr/bin that are not allowed cannot even be
// read.
func TestCheckFSBaseline(t *testing.T) {
	namespacesOnly(t, "the sandbox's own /etc/passwd, hosts and resolv.conf (the landlock tier shows the host's, as README says)")
	attack(t, "check", "check of system files answers from the baseline exec builds")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		probe := installProbe(t, work)
		skills := newDir(t, u, "skills")
		plain := writeSkill(t, skills, "plain", "")
		strict := writeSkill(t, skills, "strict", "  exec: ["+probe+"]\n")
		own(t, u, work)
		hostPasswd := readFile(t, "/etc/passwd")
		for _, p := range []string{"/etc/passwd", "/etc/hosts"} {
			a := askCheck(t, u, work, []string{plain}, "read", p)
			wantCheck(t, a, "read", p, "deny", "its own", "host")
		}
		r := u.exec(t, work, []string{plain}, probe, "read", "/etc/passwd")
		if line := strings.SplitN(hostPasswd, "\n", 3)[1]; line != "" && strings.Contains(r.stdout, line) {
			t.Errorf("the sandbox read the host's /etc/passwd (%q):\n%s", line, r)
		}
		ls := "/usr/bin/ls"
		if !exists(ls) {
			t.Skip("no " + ls)
		}
		a := askCheck(t, u, work, []string{strict}, "read", ls)
		wantCheck(t, a, "read", ls, "deny", "exec allowlist", "host")
		if r := u.exec(t, work, []string{strict}, probe, "read", ls); !strings.HasPrefix(r.stdout, "ERR ") {
			t.Errorf("the sandbox read %s although check said deny:\n%.300s", ls, r.stdout)
		}
		a = askCheck(t, u, work, []string{strict}, "read", "/usr/lib/os-release")
		wantCheck(t, a, "read", "/usr/lib/os-release", "allow", "", "host")
	})
}

// TestCheckFSExecPaths: check exec of a program named by its path answers
// whether the sandbox has that program to run: not one outside every
// grant, not one an exec list names that does not exist at launch (it
// would be written into a noexec folder), not the host's copy in /tmp.
func TestCheckFSExecPaths(t *testing.T) {
	namespacesOnly(t, "the private /tmp's wording of its answers (the landlock tier denies the same runs as ungranted)")
	attack(t, "check", "check exec of program paths answers what exec runs")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		outside := newDir(t, u, "outside")
		probe := installProbe(t, work)
		tool := installProbe(t, outside)
		inTmp := filepath.Join(os.TempDir(), token("corral-checkfs"))
		writeFile(t, inTmp, readFile(t, probeBin), 0o755)
		t.Cleanup(func() { os.Remove(inTmp) })
		skills := newDir(t, u, "skills")
		plain := writeSkill(t, skills, "plain", "")
		strict := writeSkill(t, skills, "strict", "  fs:\n    write: [\"$WORK_DIR/out/**\"]\n  exec: ["+probe+", "+filepath.Join(work, "out", "tool")+"]\n")
		own(t, u, work, outside, inTmp)
		tok := token("ran")
		for _, c := range []struct {
			skill, prog, says string
		}{
			{plain, tool, "not reachable"},
			{plain, inTmp, "/tmp is private"},
			{strict, filepath.Join(work, "out", "tool"), "no file"},
		} {
			a := askCheck(t, u, work, []string{c.skill}, "exec", c.prog+" echo "+tok)
			wantCheck(t, a, "exec", c.prog, "deny", c.says, "")
			if r := u.exec(t, work, []string{c.skill}, c.prog, "echo", tok); strings.Contains(r.stdout, "OK "+tok) || r.code == 0 {
				t.Errorf("exec ran %s although check said deny:\n%s", c.prog, r)
			}
		}
		// Control: the probe in the work dir runs in both.
		a := askCheck(t, u, work, []string{plain}, "exec", probe+" echo "+tok)
		wantCheck(t, a, "exec", probe, "allow", "", "")
	})
}

// TestCheckFSRefusedPlan: where exec refuses to build the sandbox (a
// grant resolves through a symlink an earlier run could have planted in
// the work dir), nothing is reached, and check says deny rather than
// answering from the glob.
func TestCheckFSRefusedPlan(t *testing.T) {
	attack(t, "check", "check of a grant exec refuses")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		outside := newDir(t, u, "outside")
		secret := token("secret")
		writeFile(t, filepath.Join(outside, "s.txt"), secret, 0o644)
		if err := os.Symlink(outside, filepath.Join(work, "planted")); err != nil {
			t.Fatal(err)
		}
		skill := writeSkill(t, newDir(t, u, "skills"), "planted", "  fs:\n    read: [\"$WORK_DIR/planted/**\"]\n")
		own(t, u, work, outside)
		p := filepath.Join(work, "planted", "s.txt")
		a := askCheck(t, u, work, []string{skill}, "read", p)
		wantCheck(t, a, "read", p, "deny", "exec would refuse", "")
		r := u.exec(t, work, []string{skill}, "cat", p)
		noSecret(t, r, secret, p)
		if r.code != 125 {
			t.Errorf("exec with a grant through a planted link: want 125, got\n%s", r)
		}
	})
}

// TestCheckFSStdin: check --stdin answers file questions from the same
// plan, built once for the stream.
func TestCheckFSStdin(t *testing.T) {
	namespacesOnly(t, "the private folders' wording of its answers")
	attack(t, "check", "check --stdin answers file questions from the plan")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		gitRepo(t, work, false)
		skill := writeSkill(t, newDir(t, u, "skills"), "plain", "")
		own(t, u, work)
		inTmp := filepath.Join(os.TempDir(), token("corral-checkfs"))
		in := `{"kind":"write","arg":".git/config"}` + "\n" + `{"kind":"net","arg":"a.com:443"}` + "\n" +
			`{"kind":"write","arg":"` + inTmp + `"}` + "\n" + `{"kind":"write","arg":"notes.txt"}` + "\n"
		r := u.run(t, runOpts{args: []string{"check", "--work-dir", work, "--skill", skill, "--stdin"}, stdin: in, dir: work})
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		want := []struct{ action, view, says string }{{"deny", "host", "protected"}, {"deny", "", ""}, {"deny", "host", "private"}, {"allow", "host", ""}}
		if r.code != 0 || len(lines) != len(want) {
			t.Fatalf("check --stdin: %d answers for %d questions:\n%s", len(lines), len(want), r)
		}
		for i, l := range lines {
			var a checkAnswer
			if err := json.Unmarshal([]byte(l), &a); err != nil || a.Action != want[i].action || a.View != want[i].view || !strings.Contains(a.Reason, want[i].says) {
				t.Errorf("answer %d = %s, want %s (view %q) mentioning %q", i, l, want[i].action, want[i].view, want[i].says)
			}
		}
	})
}

// TestCheckFSHomeAndSkills: with the home folder as the work dir, check
// answers for the home-relative protected paths and the active skill's
// files as exec enforces them (quarantined, read-only), not from the globs.
func TestCheckFSHomeAndSkills(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "read-only binds in a writable home (the landlock tier refuses such a run, and check says so)")
	users(t, func(t *testing.T, u user) {
		attack(t, "check", "check allows a home start-up file or the skill's own SKILL.md that exec protects")
		home := newDir(t, u, "home")
		skill := writeSkill(t, filepath.Join(home, "skills"), "mine", "")
		own(t, u, home)
		args := []string{"check", "--work-dir", home, "--skill", skill, "write"}
		env := append(defaultEnv()[:2:2], "HOME="+home)
		for _, p := range []string{".lesskey", ".config/go/env", filepath.Join(skill, "SKILL.md")} {
			r := u.run(t, runOpts{args: append(args, p), dir: home, env: env})
			var a checkAnswer
			if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || a.Action != "deny" || !strings.Contains(a.Reason, "protected") {
				t.Errorf("check write %s with the home folder as the work dir: %s (%v), want a protected deny", p, r, err)
			}
		}
	})
}
