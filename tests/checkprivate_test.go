//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// varTmpDir makes a folder under /var/tmp for u, removed after the test:
// the same skill must get the same answers there as under /tmp.
func varTmpDir(t *testing.T, u user, name string) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "corral-e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	own(t, u, d)
	return d
}

// TestCheckWorkDirInPrivatePlace: the system baseline's /tmp/** is the
// sandbox's own /tmp, so it never answers for the host's files, also not
// in a work dir under /tmp, which the sandbox shows as the host's. With a
// skill granting only $WORK_DIR/**/*.md, check and exec's preflight
// answer the same under /tmp as under /var/tmp: secret.txt and hack.sh
// denied, notes.md allowed (issue 27, item 4). A new file in the host's
// /tmp outside the work dir is denied for the host; as a redirection it is
// the sandbox's own /tmp in the namespaces tier (the write succeeds and
// the host's /tmp never sees it) and nothing the landlock tier grants.
func TestCheckWorkDirInPrivatePlace(t *testing.T) {
	attack(t, "check", "check and exec's preflight of a work dir under /tmp")
	users(t, func(t *testing.T, u user) {
		skills := newDir(t, u, "skills")
		md := writeSkill(t, skills, "md", "  fs:\n    write: [\"$WORK_DIR/**/*.md\"]\n")
		for _, work := range []string{newDir(t, u, "work"), varTmpDir(t, u, "work")} {
			writeFile(t, filepath.Join(work, "secret.txt"), token("secret"), 0o644)
			writeFile(t, filepath.Join(work, "notes.md"), "notes", 0o644)
			own(t, u, work)
			for _, c := range []struct{ kind, arg, action, says string }{
				{"read", "secret.txt", "deny", "outside the fs.read globs"},
				{"write", "secret.txt", "deny", "outside the fs.write globs"},
				{"write", "hack.sh", "deny", "outside the fs.write globs"},
				{"write", "notes.md", "allow", "**/*.md"},
				{"exec", "echo x > hack.sh", "deny", "outside the fs.write globs"},
				{"exec", "echo x > notes.md", "allow", ""},
			} {
				a := askCheck(t, u, work, []string{md}, c.kind, c.arg)
				wantCheck(t, a, c.kind, c.arg+" in "+work, c.action, c.says, "")
			}
			// exec's preflight reads the redirections as check does.
			r := u.exec(t, work, []string{md}, "sh", "-c", "echo x > hack.sh")
			if r.code != 126 || exists(filepath.Join(work, "hack.sh")) {
				t.Errorf("work dir %s: exec of echo x > hack.sh: want 126 and no hack.sh, as check says:\n%s", work, r)
			}
			if r := u.exec(t, work, []string{md}, "sh", "-c", "echo x > notes.md"); r.code != 0 || readFile(t, filepath.Join(work, "notes.md")) != "x\n" {
				t.Errorf("work dir %s: exec of echo x > notes.md: want it written, as check says:\n%s", work, r)
			}
		}
		work := newDir(t, u, "work")
		// /proc/** too is the sandbox's own: the namespaces tier shows
		// a /proc of its own, the landlock tier the host's few files
		// about the machine, also under an agent policy's fs caps.
		want := map[bool]string{true: "allow", false: "deny"}[e2eTier == "landlock"]
		for _, extra := range [][]string{nil, {"--policy-json", `{"caps":{"fs":{"read":["$WORK_DIR/**"]}}}`}} {
			r := u.run(t, runOpts{args: append(append([]string{"check", "--work-dir", work, "--skill", md}, extra...), "read", "/proc/cpuinfo"), dir: work})
			if a := map[int]string{0: "allow", 1: "deny"}[r.code]; a != want {
				t.Errorf("check %q read /proc/cpuinfo: %s, want %s in this tier:\n%s", extra, a, want, r)
			}
		}
		host := filepath.Join(os.TempDir(), token("corral-private"))
		t.Cleanup(func() { os.Remove(host) })
		a := askCheck(t, u, work, []string{md}, "write", host)
		wantCheck(t, a, "write", host, "deny", "", "host")
		a = askCheck(t, u, work, []string{md}, "exec", "echo x > "+host)
		r := u.exec(t, work, []string{md}, "sh", "-c", "echo x > "+host)
		if exists(host) {
			t.Errorf("the sandbox wrote the host's %s:\n%s", host, r)
		}
		if checkAllows, ran := a.Action == "allow", r.code == 0; checkAllows != ran {
			t.Errorf("check exec 'echo x > %s' says %s (%s), exec exits %d:\n%s", host, a.Action, a.Reason, r.code, r)
		}
	})
}

// TestCheckWorkDirThroughSymlink: a work dir given as a symlink (here
// from /var/tmp into /tmp, the sandbox's own place, and back) is bound at
// its real path, where the command reads and writes its files: check
// answers the real path as the grant names it, not "outside the globs".
func TestCheckWorkDirThroughSymlink(t *testing.T) {
	attack(t, "check", "check of a work dir given through a symlink")
	users(t, func(t *testing.T, u user) {
		inTmp, inVarTmp := newDir(t, u, "real"), varTmpDir(t, u, "real")
		for _, pair := range [][2]string{{inTmp, varTmpDir(t, u, "link")}, {inVarTmp, newDir(t, u, "link")}} {
			real, link := pair[0], filepath.Join(pair[1], "work")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			tok := token("data")
			writeFile(t, filepath.Join(real, "f.txt"), tok, 0o644)
			own(t, u, real)
			plain := writeSkill(t, newDir(t, u, "skills"), "plain", "")
			for _, c := range []struct{ kind, arg string }{
				{"read", "f.txt"}, {"write", "f.txt"}, {"write", "new.txt"},
				{"read", filepath.Join(real, "f.txt")}, {"write", filepath.Join(real, "new.txt")},
			} {
				a := askCheck(t, u, link, []string{plain}, c.kind, c.arg)
				wantCheck(t, a, c.kind, c.arg+" in "+link, "allow", "", "host")
			}
			r := u.exec(t, link, []string{plain}, "sh", "-c", "cat f.txt && echo x > new.txt")
			if r.code != 0 || !strings.Contains(r.stdout, tok) || readFile(t, filepath.Join(real, "new.txt")) != "x\n" {
				t.Errorf("exec in the work dir %s -> %s: want f.txt read and new.txt written:\n%s", link, real, r)
			}
		}
	})
}
