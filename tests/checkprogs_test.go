//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// programPaths are programs named the ways an agent names them: through
// the symlinked folders of a merged-/usr host (/bin -> usr/bin, /lib64),
// as a symlinked program (python3 -> python3.11), by a name on PATH, and
// relative to the work dir, directly and through links there (one into
// the host's /tmp, which the sandbox does not show). Each prints RAN when
// it runs.
func programPaths(work, inTmp string) [][]string {
	progs := [][]string{
		{"/bin/sh", "-c", "echo RAN"},
		{"/usr/bin/sh", "-c", "echo RAN"},
		{"sh", "-c", "echo RAN"},
		{"/bin/echo", "RAN"},
		{"./tool", "echo", "RAN"},
		{"sub/../tool", "echo", "RAN"},
		{"./l-tool", "echo", "RAN"},
		{"./l-sh", "-c", "echo RAN"},
		{"./l-tmp", "echo", "RAN"},
		{filepath.Join(work, "l-bin", "sh"), "-c", "echo RAN"},
	}
	for _, py := range []string{"/usr/bin/python3", "/bin/python3", "python3"} {
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			progs = append(progs, []string{py, "-c", "print('RAN')"})
		}
	}
	ld := map[string]string{"amd64": "/lib64/ld-linux-x86-64.so.2", "arm64": "/lib/ld-linux-aarch64.so.1"}[runtime.GOARCH]
	if _, err := os.Stat(ld); err == nil {
		progs = append(progs, []string{ld, "/bin/echo", "RAN"})
	}
	return progs
}

// TestCheckProgramPathsAgree: check exec reads a program's path as exec's
// plan does, following the symlinked folders the sandbox makes again
// (/bin on a merged-/usr host used to be "not in the sandbox" to check,
// while exec ran /bin/sh; issue 27, item 4): for each program, check
// allows exactly when exec runs it, both as a shell line and as argv,
// without an exec list and with one (which the landlock tier refuses).
func TestCheckProgramPathsAgree(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "check exec and exec agree on program paths through symlinks")
		work := newDir(t, u, "work")
		installProbe(t, work)
		if err := os.Rename(filepath.Join(work, "probe"), filepath.Join(work, "tool")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(work, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		inTmp := filepath.Join(os.TempDir(), token("corral-progs"))
		writeFile(t, inTmp, readFile(t, probeBin), 0o755)
		t.Cleanup(func() { os.Remove(inTmp) })
		for link, target := range map[string]string{"l-tool": "tool", "l-sh": "/bin/sh", "l-tmp": inTmp, "l-bin": "/bin"} {
			if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
				t.Fatal(err)
			}
		}
		own(t, u, work, inTmp)
		skills := newDir(t, u, "skills")
		plain := writeSkill(t, skills, "plain", "")
		listed := writeSkill(t, skills, "listed", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh, echo, python3, "+filepath.Join(work, "tool")+"]\n")
		for _, sk := range []string{plain, listed} {
			for _, argv := range programPaths(work, inTmp) {
				line := shellQuote(argv)
				a := askCheck(t, u, work, []string{sk}, "exec", line)
				for _, run := range [][]string{{"sh", "-c", line}, argv} {
					r := u.exec(t, work, []string{sk}, run...)
					ran := r.code == 0 && strings.Contains(r.stdout, "RAN")
					if (a.Action == "allow") != ran {
						t.Errorf("skill %s: check exec %s says %s (%s), exec -- %q ran=%v:\n%s",
							filepath.Base(sk), line, a.Action, a.Reason, run, ran, r)
					}
					// The same class of refusal: not there (127) or
					// not permitted (126).
					if a.Action == "deny" && a.NotFound != (r.code == 127) {
						t.Errorf("skill %s: check exec %s says deny, not_found=%v (%s), exec -- %q exits %d:\n%s",
							filepath.Base(sk), line, a.NotFound, a.Reason, run, r.code, r)
					}
				}
			}
		}
	})
}
