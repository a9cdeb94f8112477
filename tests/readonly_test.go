//go:build linux

package tests

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// readOnlyEscapes are lines that the built-in read-only list must not
// allow without a rule (issue 15, item 7): option abbreviations getopt
// and git accept, bundles, values, assignments before the command, and
// words the shell expands into options.
var readOnlyEscapes = []string{
	"git grep --open-files-in=sh touch",
	"git grep --open-files-in-pager=sh touch",
	"git grep -Osh touch",
	"sort --compress-p=sh a",
	"sort --comp sh a",
	"sort -uo x a",
	"sort a --out=x",
	"date --se=2020-01-01",
	"git diff --ext-diff",
	"git diff --textc",
	"git -c core.pager=sh log",
	"git --exec-path=. status",
	"GIT_EXTERNAL_DIFF=./x git diff",
	"GIT_PAGER=sh git log",
	"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=sh git log",
	"LD_PRELOAD=./x.so ls",
	"rg --pre=sh x",
	"find . -execdir sh x \\;",
	"sort * a",
	"sort a$X",
	"ls --frobnicate",
	"bash -i -c ls",
}

// TestReadOnlyListRunsNothing: check asks (exit 2) for each line, and
// corral exec under the same policy refuses the one that would run a
// program (git grep -O runs sh on every matching file) instead of letting
// sh create a file in the work dir.
func TestReadOnlyListRunsNothing(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	pol := writePolicy(t, newDir(t, asSelf, "policy"), "version: 1\n")
	for _, line := range readOnlyEscapes {
		t.Run(line, func(t *testing.T) {
			attack(t, "policy", "the built-in read-only list runs a program: "+line)
			c := asSelf.run(t, runOpts{args: []string{"check", "--work-dir", work, "--policy", pol, "--global-policy", "", "tool", "bash", line}, dir: work})
			if c.code != 2 {
				t.Errorf("check tool bash %q: exit %d, want 2 (confirm)\n%s", line, c.code, c)
			}
		})
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	users(t, func(t *testing.T, u user) {
		attack(t, "policy", "git grep --open-files-in=sh through the read-only list")
		work := newDir(t, u, "repo")
		writeFile(t, filepath.Join(work, "a.sh"), "touch PWNED\n", 0o644)
		for _, args := range [][]string{{"init", "-q"}, {"add", "a.sh"}, {"-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "x"}} {
			if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", work}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %q: %v\n%s", args, err, out)
			}
		}
		own(t, u, work)
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--policy", pol, "--global-policy", "", "--",
			"git", "grep", "--open-files-in=sh", "touch"}, dir: work})
		if r.code != 126 {
			t.Errorf("git grep --open-files-in=sh under the read-only list: exit %d, want 126 (needs confirmation)\n%s", r.code, r)
		}
		if exists(filepath.Join(work, "PWNED")) {
			t.Errorf("git grep --open-files-in=sh ran sh on a.sh:\n%s", r)
		}
	})
}

// shellReadings are lines on which sh (dash) or bash runs touch although
// an older check read them as read-only commands (issue 15, shell
// reading): here-document bodies taken from inside $(...), line
// continuations, $'...', ((, ${x:=...}, ${x@P}, $((x)) and [[.
var shellReadings = []string{
	"cat <<'pwd' -- $(\ntouch PWNED\npwd\n)\npwd",
	"cat <<'pwd' -- \"$(\ntouch PWNED\npwd\n)\"\npwd",
	"cat <<'pwd' -- <(\ntouch PWNED\npwd\n)\npwd",
	"cat <<'pwd' -- ${x:-$(\ntouch PWNED\npwd\n)}\npwd",
	"cat -- \"$\\\n(touch PWNED)\"",
	"cat <<E\\\nOF\n$(touch PWNED)\nEOF",
	"case x in (a) pwd;; esa\\\nc; touch PWNED",
	"cat -- $\\\n'\\' '; touch PWNED; #'",
	"cat -- $'\\' ;touch PWNED; #'",
	"pwd; ((touch PWNED))",
	`cat -- "${x:=\$(touch PWNED)}" "${x@P}"`,
	`cat -- "${x:=a[\$(touch PWNED)]}" "$((x))"`,
	"[[ -f <(touch PWNED) ]]",
	"[[ a || touch PWNED ]]",
	"[[ a > PWNED ]]",
	"x='a[$(touch PWNED)]'; let x",
	"x='b[$(touch PWNED)]'; a[x]=1",
	"x='a[$(touch PWNED)]'; echo $[x]",
	"declare -n r='a[$(touch PWNED)]'; cat -- $r",
}

// bashReadsPlainly are the shellReadings in which bash runs no touch
// (a string comparison in [[, one $'...' word): bash -c, read with the
// bash grammar, runs them as the read-only commands they are to bash.
var bashReadsPlainly = map[string]bool{
	"cat -- $'\\' ;touch PWNED; #'": true,
	"[[ a > PWNED ]]":               true,
}

// TestReadOnlyShellReadings: under a policy with no rules, check tool
// bash does not allow any line, and corral exec of sh -c and bash -c with
// it refuses (126) instead of letting the shell run touch; bash -c runs
// the lines bash reads as read-only commands, and they create nothing.
func TestReadOnlyShellReadings(t *testing.T) {
	requireSandbox(t)
	pol := writePolicy(t, newDir(t, asSelf, "policy"), "version: 1\n")
	users(t, func(t *testing.T, u user) {
		for _, line := range shellReadings {
			t.Run(line, func(t *testing.T) {
				attack(t, "policy", "a line bash and dash read differently: "+line)
				work := newDir(t, u, "work")
				c := u.run(t, runOpts{args: []string{"check", "--work-dir", work, "--policy", pol, "--global-policy", "", "tool", "bash", line}, dir: work})
				// Deny (1) where corral cannot read the line for sure,
				// confirm (2) where it reads touch.
				if c.code != 1 && c.code != 2 {
					t.Errorf("check tool bash %q: exit %d, want 1 (deny) or 2 (confirm)\n%s", line, c.code, c)
				}
				for _, sh := range []string{"sh", "bash"} {
					r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--policy", pol, "--global-policy", "", "--", sh, "-c", line}, dir: work})
					if sh == "bash" && bashReadsPlainly[line] {
						if r.code == 126 || r.code == 125 {
							t.Errorf("exec bash -c %q: exit %d, want the line to run\n%s", line, r.code, r)
						}
					} else if r.code != 126 {
						t.Errorf("exec %s -c %q: exit %d, want 126 (needs confirmation)\n%s", sh, line, r.code, r)
					}
					if exists(filepath.Join(work, "PWNED")) {
						t.Fatalf("exec %s -c %q ran touch:\n%s", sh, line, r)
					}
				}
			})
		}
	})
}
