//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkExecSkill grants the wrappers and shells the lines below use, and
// ls; touch, the program the attacks try to reach, is not granted.
const checkExecSkill = `  fs:
    write: ["$WORK_DIR/**"]
  exec: [sh, bash, env, timeout, xargs, nice, nohup, stdbuf, setsid, find, flock, ls, echo]
`

// checkExecLines are command lines whose reading check and exec used to
// disagree on (issue 15, item 8). A deny line tries to run touch, which
// only an honest check denies; an allow line runs ls the same way.
var checkExecLines = []struct {
	line string
	deny bool
}{
	// Shell options before and after -c.
	{"sh -o errexit -c 'touch PWNED'", true},
	{"sh -o errexit -c 'ls'", false},
	{"sh -o nounset -c -- 'touch PWNED'", true},
	{"sh -c -- 'touch PWNED'", true},
	{"sh -c -- 'ls'", false},
	{"sh -ec 'touch PWNED'", true},
	{"sh +o errexit -c 'touch PWNED'", true},
	{"bash --norc -c 'touch PWNED'", true},
	{"bash --noprofile --norc -c 'ls'", false},
	{"bash -O extglob -c 'touch PWNED'", true},
	// env.
	{"env -S 'touch PWNED'", true},
	{"env --split-string='touch PWNED'", true},
	{"env -S 'ls -d .'", false},
	{"env -i touch PWNED", true},
	{"env -u HOME -- touch PWNED", true},
	{"env -i A=1 ls", false},
	// Wrapper options with values.
	{"timeout --kill-after 1 5 touch PWNED", true},
	{"timeout --kill 1 5 touch PWNED", true},
	{"timeout -k 1 -s KILL 5 touch PWNED", true},
	{"timeout -k 1 -s KILL 5 ls", false},
	{"timeout --kill-after 1 5 ls", false},
	{"echo PWNED | xargs --max-args 1 touch", true},
	{"echo PWNED | xargs -n1 -I{} touch {}", true},
	{"echo . | xargs --max-args 1 ls -d", false},
	{"echo . | xargs -n1 -I{} ls -d {}", false},
	{"nice -n 5 touch PWNED", true},
	{"nice -n 5 ls", false},
	{"nohup touch PWNED", true},
	{"stdbuf -o0 touch PWNED", true},
	{"stdbuf -o0 ls", false},
	{"setsid -w touch PWNED", true},
	{"setsid -w ls", false},
	{"flock -w 5 lock touch PWNED", true},
	{"flock lock -c 'touch PWNED'", true},
	{"flock -w 5 lock ls", false},
	// find runs its -exec command with arguments.
	{"find . -maxdepth 0 -execdir touch PWNED \\;", true},
	{"find . -maxdepth 0 -exec sh -c 'touch PWNED' \\;", true},
	{"find . -maxdepth 0 -exec sh -c 'ls' \\;", false},
	// Functions, command, exec, time.
	{"f() { touch PWNED; }; f", true},
	{"f() { ls; }; f", false},
	{"false && touch() { ls; }; touch PWNED", true},
	{"if false; then touch() { ls; }; fi; touch PWNED", true},
	{"touch() { ls; } | ls; touch PWNED", true},
	{"touch() { ls; }; unset -f touch; touch PWNED", true},
	{"touch() { ls; } && touch PWNED", false},
	{"command touch PWNED", true},
	{"command -v touch", false},
	{"command ls", false},
	{"exec touch PWNED", true},
	{"time -p ls", true}, // sh runs the time program, not granted
	// cd before a relative redirection.
	{"cd /etc && ls > PWNED", true},
	{"cd / && ls > PWNED", true},
	{"cd sub && ls > out", false},
	{"env -C /etc sh -c 'ls > PWNED'", true},
	{"env -C sub sh -c 'ls > out'", false},
	// Constructs bash and dash read differently, line continuations and
	// here-documents (issue 15, shell reading): check reads the
	// continuations as sh does, and leaves to the kernel what it cannot
	// read for sure.
	{"ls <<'ls' -- $(\ntouch PWNED\nls\n)\nls", true},
	{"ls <<'ls' -- \"$(\ntouch PWNED\nls\n)\"\nls", true},
	{"ls <<'ls' -- ${x:-$(\ntouch PWNED\nls\n)}\nls", true},
	{"ls -- $(cat <<'E')\ntouch PWNED\nE", true},
	{"ls -- \"$\\\n(touch PWNED)\"", true},
	{"ls <<E\\\nOF\n$(touch PWNED)\nEOF", true},
	{"case x in (a) ls;; esa\\\nc; touch PWNED", true},
	{"ls -- $\\\n'\\' '; touch PWNED; #'", true},
	{"ls -- $'\\' ;touch PWNED; #'", true},
	{"ls; ((touch PWNED))", true},
	{"ls -- \"${x:=\\$(touch PWNED)}\" \"${x@P}\"", true},
	{"ls -- \"${x:=a[\\$(touch PWNED)]}\" \"$((x))\"", true},
	{"[[ -f <(touch PWNED) ]]", true},
	{"[[ a || touch PWNED ]]", true},
	{"[[ a > /PWNED ]]", true},
	{"x='a[$(touch PWNED)]'; let x", true},
	{"x='b[$(touch PWNED)]'; a[x]=1; ls", true},
	{"x='a[$(touch PWNED)]'; ls $[x]", true},
	{"x='a[$(touch PWNED)]'; test -v \"$x\"", true},
	{"ls \\\n  -la \\\n  .", false},
	{"for f in .; do ls -d -- \"$f\"; done", false},
	{"if ls .; then ls -- \"$HOME\" ${HOME} $((1+2)) 2>/dev/null; fi; echo \"a\\\nb\"", false},
}

// checkExecUnread are the lines of checkExecLines that check cannot read
// for sure: it allows them and says so (issue 28: the preflight refuses
// nothing for syntax it cannot read), and the kernel refuses touch (or the
// write) as the line runs, so PWNED is never made.
var checkExecUnread = map[string]bool{
	"ls <<'ls' -- $(\ntouch PWNED\nls\n)\nls":        true,
	"ls <<'ls' -- \"$(\ntouch PWNED\nls\n)\"\nls":    true,
	"ls <<'ls' -- ${x:-$(\ntouch PWNED\nls\n)}\nls":  true,
	"ls -- $(cat <<'E')\ntouch PWNED\nE":             true,
	"ls <<E\\\nOF\n$(touch PWNED)\nEOF":              true,
	"ls -- $\\\n'\\' '; touch PWNED; #'":             true,
	"ls -- $'\\' ;touch PWNED; #'":                   true,
	"ls; ((touch PWNED))":                            true,
	"ls -- \"${x:=\\$(touch PWNED)}\" \"${x@P}\"":    true,
	"ls -- \"${x:=a[\\$(touch PWNED)]}\" \"$((x))\"": true,
	"[[ -f <(touch PWNED) ]]":                        true,
	"[[ a || touch PWNED ]]":                         true,
	"[[ a > /PWNED ]]":                               true,
	"x='a[$(touch PWNED)]'; let x":                   true,
	"x='b[$(touch PWNED)]'; a[x]=1; ls":              true,
	"x='a[$(touch PWNED)]'; ls $[x]":                 true,
	"x='a[$(touch PWNED)]'; test -v \"$x\"":          true,
}

// TestCheckAgreesWithExec: for each line, `corral check exec LINE` and
// `corral exec -- sh -c LINE` give the same answer: check denies exactly
// when exec refuses or the kernel does, and touch never runs.
func TestCheckAgreesWithExec(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		skills := newDir(t, u, "skills")
		sk := writeSkill(t, skills, "wrappers", checkExecSkill)
		for _, tt := range checkExecLines {
			t.Run(tt.line, func(t *testing.T) {
				attack(t, "exec", "check and exec agree on "+tt.line)
				work := newDir(t, u, "work")
				if err := os.Mkdir(filepath.Join(work, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				own(t, u, filepath.Join(work, "sub"))
				c := u.run(t, runOpts{args: []string{"check", "--skill", sk, "--work-dir", work, "exec", tt.line}, dir: work})
				if c.code != 0 && c.code != 1 {
					t.Fatalf("check exec %q:\n%s", tt.line, c)
				}
				checkDenies := c.code == 1
				if checkExecUnread[tt.line] {
					if checkDenies || !strings.Contains(c.stdout, "cannot read all of the command") {
						t.Errorf("check exec %q: want an allow that says it could not read the line\n%s", tt.line, c)
					}
				} else if checkDenies != tt.deny {
					t.Errorf("check exec %q: deny=%v, want %v\n%s", tt.line, checkDenies, tt.deny, c)
				}
				r := u.exec(t, work, []string{sk}, "sh", "-c", tt.line)
				if exists(filepath.Join(work, "PWNED")) || exists("/PWNED") {
					t.Errorf("%q ran touch inside the sandbox:\n%s", tt.line, r)
				}
				execRefuses := r.code != 0
				if checkExecUnread[tt.line] {
					return // PWNED was not made: the kernel held
				}
				if checkDenies != execRefuses {
					t.Errorf("check and exec disagree on %q: check deny=%v (%s), exec exit %d\n%s",
						tt.line, checkDenies, strings.TrimSpace(c.stdout), r.code, r)
				}
			})
		}
	})
}

// TestCheckKernelFilesAgreeWithExec: the kernel's exec rule is on files,
// so a program granted only as the #! interpreter of an allowed script
// runs directly too (the kernel must let it run to start the script), and
// so does another name of an allowed file (dash for sh, a symlink to ls):
// check and the exec preflight say so, and still refuse the rest.
func TestCheckKernelFilesAgreeWithExec(t *testing.T) {
	const python = "/usr/bin/python3"
	if !exists(python) {
		t.Skip(python + " is not installed: no #! interpreter to grant")
	}
	users(t, func(t *testing.T, u user) {
		skills := newDir(t, u, "skills")
		tool := filepath.Join(skills, "tool.py")
		writeFile(t, tool, "#!"+python+"\nprint('tool ran')\n", 0o755)
		sk := writeSkill(t, skills, "script", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh, ls, "+tool+"]\n")
		sh, err := filepath.EvalSymlinks("/bin/sh")
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			line string
			deny bool
		}{
			{tool, false},
			{"python3 -c 'print(42)'", false},
			{python + " -c 'print(42)'", false},
			{"touch PWNED", true},
			{"perl -e 'print 42'", true},
			{sh + " -c ls", false},
			{filepath.Base(sh) + " -c 'ls -d .'", false},
			{filepath.Base(sh) + " -c 'touch PWNED'", true},
			{"./myls -d .", false},
			{"./mytouch PWNED", true},
		} {
			t.Run(tt.line, func(t *testing.T) {
				attack(t, "exec", "check and exec agree on a #! interpreter: "+tt.line)
				work := newDir(t, u, "work")
				for name, target := range map[string]string{"myls": "/usr/bin/ls", "mytouch": "/usr/bin/touch"} {
					if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
						t.Fatal(err)
					}
				}
				c := u.run(t, runOpts{args: []string{"check", "--skill", sk, "--work-dir", work, "exec", tt.line}, dir: work})
				if checkDenies := c.code == 1; checkDenies != tt.deny || c.code > 1 {
					t.Errorf("check exec %q: want deny=%v\n%s", tt.line, tt.deny, c)
				}
				r := u.exec(t, work, []string{sk}, "sh", "-c", tt.line)
				if execRefuses := r.code != 0; execRefuses != tt.deny {
					t.Errorf("exec of %q: want refused=%v (as check says)\n%s", tt.line, tt.deny, r)
				}
				if exists(filepath.Join(work, "PWNED")) {
					t.Errorf("%q ran touch inside the sandbox", tt.line)
				}
			})
		}
	})
}
