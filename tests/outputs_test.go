//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The attacks on corral's own output: the files it writes (--report,
// --audit-log), the terminal it shares with the command, and its stderr.

// outputsFixture is a work dir, a second folder a skill grants for
// writing, a folder beside them no grant covers (where the reports go),
// and a victim file outside everything that corral must never write.
type outputsFixture struct {
	work, granted, logs string
	skill               string
	victim, tok         string
}

func newOutputs(t *testing.T, u user) outputsFixture {
	t.Helper()
	f := outputsFixture{work: newDir(t, u, "work"), granted: newDir(t, u, "granted"), logs: newDir(t, u, "logs"), tok: token("VICTIM")}
	f.victim = filepath.Join(newDir(t, u, "outside"), "victim.txt")
	writeFile(t, f.victim, f.tok+"\n", 0o644)
	// The victim is the user's own: corral running as that user could
	// write it if it followed a link there.
	own(t, u, f.victim)
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "outputs", "  fs:\n    write: [\"$WORK_DIR/**\", \""+f.granted+"/**\"]\n  exec: [sh, ln, touch]\n")
	return f
}

func (f outputsFixture) victimUnchanged(t *testing.T, r result) {
	t.Helper()
	if got := readFile(t, f.victim); got != f.tok+"\n" {
		t.Errorf("corral wrote the victim through a link (%q):\n%s", got, r)
	}
}

// TestOutputsPlantedLinks plants symlinks and hard links where corral
// writes its report and audit log: inside the writable grants by the
// command itself, and outside them before the run (as an earlier run
// with other grants, or another local user, could). corral must refuse
// them with exit 125 and leave the file they point to alone.
func TestOutputsPlantedLinks(t *testing.T) {
	t.Parallel()
	type plant struct {
		name string
		// path is where the report or audit log goes; setup plants what
		// the host has there before the run; script is the command.
		path   func(f outputsFixture) string
		setup  func(t *testing.T, u user, f outputsFixture, path string)
		script func(f outputsFixture, path string) string
		want   string // in corral's refusal
	}
	symlinkNow := func(t *testing.T, u user, f outputsFixture, p string) {
		if err := os.Symlink(f.victim, p); err != nil {
			t.Fatal(err)
		}
		own(t, u, p)
	}
	plants := []plant{
		{"symlink the command makes in the work dir",
			func(f outputsFixture) string { return filepath.Join(f.work, "out.json") }, nil,
			func(f outputsFixture, p string) string { return "ln -sf " + f.victim + " " + p }, "which the sandboxed command can write"},
		{"symlink the command makes in a write grant",
			func(f outputsFixture) string { return filepath.Join(f.granted, "sub", "out.json") }, nil,
			func(f outputsFixture, p string) string {
				return "mkdir -p " + filepath.Dir(p) + "; ln -sf " + f.victim + " " + p
			}, "which the sandboxed command can write"},
		{"hard link the command makes in a write grant",
			func(f outputsFixture) string { return filepath.Join(f.granted, "out.json") }, nil,
			func(f outputsFixture, p string) string {
				return "ln -f " + f.victim + " " + p + " || ln -sf " + f.victim + " " + p
			},
			"which the sandboxed command can write"},
		{"symlink planted before the run outside the grants",
			func(f outputsFixture) string { return filepath.Join(f.logs, "out.json") }, symlinkNow,
			func(outputsFixture, string) string { return "true" }, "is a symlink"},
		{"dangling symlink planted before the run outside the grants",
			func(f outputsFixture) string { return filepath.Join(f.logs, "out.json") },
			func(t *testing.T, u user, f outputsFixture, p string) {
				os.Remove(f.victim)
				if err := os.Symlink(f.victim, p); err != nil {
					t.Fatal(err)
				}
				own(t, u, p)
				t.Cleanup(func() {
					if _, err := os.Lstat(f.victim); err == nil {
						t.Errorf("corral created %s through a dangling symlink", f.victim)
					}
				})
			},
			func(outputsFixture, string) string { return "true" }, "is a symlink"},
		{"hard link planted before the run outside the grants",
			func(f outputsFixture) string { return filepath.Join(f.logs, "out.json") },
			func(t *testing.T, u user, f outputsFixture, p string) {
				if err := os.Link(f.victim, p); err != nil {
					t.Fatal(err)
				}
			},
			func(outputsFixture, string) string { return "true" }, "hard links"},
		{"folder outside the grants that is a symlink into the work dir",
			func(f outputsFixture) string { return filepath.Join(f.logs, "into-work", "out.json") },
			func(t *testing.T, u user, f outputsFixture, p string) {
				if err := os.Symlink(f.work, filepath.Dir(p)); err != nil {
					t.Fatal(err)
				}
				own(t, u, filepath.Dir(p))
			},
			func(f outputsFixture, p string) string {
				return "ln -sf " + f.victim + " " + filepath.Join(f.work, "out.json")
			}, "through a symlink"},
	}
	users(t, func(t *testing.T, u user) {
		for _, which := range []string{"--report", "--audit-log"} {
			for _, c := range plants {
				t.Run(which+" "+c.name, func(t *testing.T) {
					attack(t, "outputs", which+": "+c.name)
					f := newOutputs(t, u)
					p := c.path(f)
					if c.setup != nil {
						c.setup(t, u, f, p)
					}
					ran := filepath.Join(f.work, "ran")
					// curl to a host no rule allows would give the audit
					// log an entry; the preflight denial of a second
					// command gives one without a network: the run
					// itself must write to the file.
					args := []string{"exec", "--work-dir", f.work, "--skill", f.skill, which, p, "--", "sh", "-c", c.script(f, p) + "; touch " + ran}
					r := u.run(t, runOpts{args: args, dir: f.work})
					if r.code != 125 || !strings.Contains(r.stderr, which+" ") || !strings.Contains(r.stderr, c.want) {
						t.Errorf("want exit 125 and one line refusing %s (%q):\n%s", which, c.want, r)
					}
					if exists(ran) {
						t.Errorf("the command ran although corral refused its %s", which)
					}
					if exists(f.victim) {
						f.victimUnchanged(t, r)
					}
					// The same with a command the preflight refuses,
					// which writes an audit entry and a report at once.
					args = []string{"exec", "--work-dir", f.work, "--skill", f.skill, which, p, "--", "curl", "http://x.test/"}
					r = u.run(t, runOpts{args: args, dir: f.work})
					if r.code != 125 {
						t.Errorf("a refused run: want exit 125 for the unsafe %s:\n%s", which, r)
					}
					if exists(f.victim) {
						f.victimUnchanged(t, r)
					}
				})
			}
		}
	})
}

// TestOutputsSafeReport: a report beside the work dir is written for a
// run that ran, one the preflight refused (126) and one whose program
// does not exist (127), and the command cannot reach it. (Not an attack:
// what must keep working.)
func TestOutputsSafeReport(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		f := newOutputs(t, u)
		for _, c := range []struct {
			skill bool
			argv  []string
			code  int
		}{
			{true, []string{"sh", "-c", "ln -sf " + f.victim + " " + f.logs + "/r.json; ln -sf " + f.victim + " " + f.logs + "/audit.jsonl; exit 3"}, 3},
			{true, []string{"curl", "http://x.test/"}, 126},
			{false, []string{"no-such-program-" + token("x")}, 127},
		} {
			report := filepath.Join(f.logs, "r.json")
			audit := filepath.Join(f.logs, "audit.jsonl")
			args := []string{"exec", "--work-dir", f.work, "--report", report, "--audit-log", audit}
			if c.skill {
				args = append(args, "--skill", f.skill)
			}
			args = append(append(args, "--"), c.argv...)
			r := u.run(t, runOpts{args: args, dir: f.work})
			var rep struct {
				ExitCode int `json:"exit_code"`
			}
			data, err := os.ReadFile(report)
			if r.code != c.code || err != nil || json.Unmarshal(data, &rep) != nil || rep.ExitCode != c.code {
				t.Errorf("%q: want exit %d and a report saying so, got %v %s:\n%s", c.argv, c.code, err, data, r)
			}
			if st, err := os.Lstat(report); err != nil || !st.Mode().IsRegular() {
				t.Errorf("the report is no longer a regular file: %v", err)
			}
			f.victimUnchanged(t, r)
		}
	})
}

// TestOutputsAuditCap sends a flood of refused requests through the
// proxy, one with a very long URL: the audit log stops at its cap and
// ends with one entry counting the dropped ones, and no entry carries the
// whole URL.
func TestOutputsAuditCap(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "outputs", "fill the disk through the audit log")
		o := newOrigin(t)
		f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port))
		// 60 refused requests of about 2.5 KiB each in the log pass a
		// cap of 64 KiB; every URL longer than 2 KiB must be clipped (one
		// of 30 KB, just under the proxy's limit on a request head).
		const n = 60
		f.run(t, fmt.Sprintf(`
curl -q -s -o /dev/null --max-time 20 http://other.test:%[1]d/%[2]s
curl -q -s -o /dev/null --max-time 60 'http://other.test:%[1]d/%[3]s[1-%[4]d]'
`, o.port, strings.Repeat("A", 30000), strings.Repeat("B", 2500), n), "--resolve", "api.test=127.0.0.1", "--resolve", "other.test=127.0.0.1", "--audit-log-max", "64Ki")
		o.untouched(t, result{})
		data := readFile(t, f.audit)
		if len(data) > 64<<10+1024 {
			t.Errorf("the audit log grew to %d bytes past a cap of 64 KiB", len(data))
		}
		lines := strings.Split(strings.TrimSpace(data), "\n")
		var last struct {
			Decision string `json:"decision"`
			Dropped  int    `json:"dropped"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Decision != "dropped" || last.Dropped == 0 {
			t.Fatalf("the log does not end with an entry counting the dropped ones (%v): %s", err, lines[len(lines)-1])
		}
		if kept := len(lines) - 1; kept+last.Dropped != n+1 {
			t.Errorf("%d entries kept and %d dropped, want %d in all", kept, last.Dropped, n+1)
		}
		long := 0
		for _, l := range lines {
			var e struct {
				URL string `json:"url"`
			}
			json.Unmarshal([]byte(l), &e)
			if len(e.URL) > 2100 {
				t.Fatalf("an audit entry with a URL of %d bytes: it was not clipped", len(e.URL))
			}
			if strings.Contains(e.URL, "AAAA") {
				long++
			}
		}
		if long != 1 {
			t.Errorf("%d entries for the request with the 30 KB URL, want 1", long)
		}
	})
}

// rawControl finds what a terminal would act on in s: C0 controls but
// newline and tab, ESC, DEL, C1 controls as runes and as raw bytes (0x9B
// is CSI to an 8-bit terminal), and bidi overrides, isolates and marks.
func rawControl(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1,
			r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return s[i : i+n]
		}
		i += n
	}
	return ""
}

const evilName = "x\x1b]0;pwned\a\x1b[2J\x9b31m\u009b32m\u202egnp.exe\u2066\n\rcorral exec: all good"

// TestOutputsEscapedNames names things with terminal controls, a raw
// 0x9B byte, C1 controls and bidi overrides: argv[0], a nested
// repository (as an earlier run could make one) in which the command
// creates a file corral removes and reports, and a host the proxy
// refuses. corral's stderr must carry none of them raw.
func TestOutputsEscapedNames(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		check := func(t *testing.T, r result, what string) {
			t.Helper()
			if c := rawControl(r.stderr); c != "" {
				t.Errorf("corral's stderr has %q raw, from %s:\n%q", c, what, r.stderr)
			}
			if strings.Contains(r.stderr, "\ncorral exec: all good") {
				t.Errorf("a name forged a line of corral's output:\n%q", r.stderr)
			}
		}
		t.Run("argv[0]", func(t *testing.T) {
			attack(t, "outputs", "terminal controls in argv[0], echoed as command not found")
			f := newOutputs(t, u)
			for _, argv0 := range []string{evilName, "./" + evilName, f.work + "/" + evilName} {
				r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", argv0}, dir: f.work})
				if r.code != 127 || !strings.Contains(r.stderr, `\x1b]0;pwned`) {
					t.Errorf("want exit 127 naming the program escaped:\n%s", r)
				}
				check(t, r, "argv[0]")
			}
		})
		t.Run("git folder", func(t *testing.T) {
			attack(t, "outputs", "terminal controls in the name of a nested repository corral warns about")
			f := newOutputs(t, u)
			repo := filepath.Join(f.work, "x\x1b[2J\x9b\u009b\u202e")
			writeFile(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
			writeFile(t, filepath.Join(repo, ".git", "config"), "[core]\n", 0o644)
			own(t, u, repo)
			r := runScript(t, u, f.work, nil, "for d in */.git; do echo ../x > \"$d/commondir\"; done")
			if !strings.Contains(r.stderr, "removed it") {
				t.Errorf("corral did not warn about the commondir it removed:\n%s", r)
			}
			check(t, r, "a nested repository's name")
		})
		t.Run("proxy host", func(t *testing.T) {
			attack(t, "outputs", "terminal controls in a host the proxy refuses, in its summary")
			o := newOrigin(t)
			f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port))
			r := f.run(t, `
for h in "$(printf 'evil\033[2J\233\302\233.test:443')" "$(printf '\342\200\256evil\342\201\246.test:443')" "$(printf 'evil\033]0;x\007.test:443')"; do
  "$probe" http "${HTTP_PROXY#http://}" CONNECT "$h" >/dev/null 2>&1
  "$probe" http "${HTTP_PROXY#http://}" GET "http://$h/" "$h" >/dev/null 2>&1
done`)
			if !strings.Contains(r.stderr, "request(s):") {
				t.Errorf("no denial summary:\n%s", r)
			}
			check(t, r, "a host name")
			data := readFile(t, f.audit)
			if c := rawControl(data); c != "" {
				t.Errorf("the audit log has %q raw:\n%q", c, data)
			}
			data = readFile(t, f.report)
			if c := rawControl(data); c != "" {
				t.Errorf("the report has %q raw:\n%q", c, data)
			}
		})
	})
}

// termState runs shell under script(1), in a real pseudo-terminal, with
// the terminal's settings and size printed before and after it; corral
// stands for the corral command (through setpriv for the unprivileged
// user). It returns both states and the output.
func termState(t *testing.T, u user, work, shell string) (before, after, out string) {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("util-linux script(1) is not installed: no way to give corral a real terminal")
	}
	corral := corralBin
	if u.unpriv {
		corral = shellQuote([]string{setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", corralBin})
	}
	inner := "stty sane cols 101 rows 41; echo \"BEFORE $(stty -g) $(stty size)\"\n" +
		strings.ReplaceAll(shell, "CORRAL", corral) +
		"\necho \"AFTER $(stty -g) $(stty size)\"\n"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", shellQuote([]string{"sh", "-c", inner}), "/dev/null")
	cmd.Dir = work
	cmd.Env = append(defaultEnv(), "TERM=xterm")
	b, _ := cmd.CombinedOutput()
	out = string(b)
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", "\n"), "\n") {
		if s, ok := strings.CutPrefix(l, "BEFORE "); ok {
			before = s
		}
		if s, ok := strings.CutPrefix(l, "AFTER "); ok {
			after = s
		}
	}
	if before == "" || after == "" {
		t.Skipf("script(1) gave no terminal whose settings stty could read:\n%q", out)
	}
	return before, after, out
}

// TestOutputsTerminalRestored: a command that puts the caller's terminal
// in raw mode without echo, or resizes it, leaves it as it was after
// corral returns: when it exits, when it is killed, when the timeout ends
// it, and when corral gets SIGTERM or SIGINT.
func TestOutputsTerminalRestored(t *testing.T) {
	t.Parallel()
	const raw = "stty raw -echo -icanon -isig -opost min 0 time 0 2>/dev/null"
	cases := []struct{ name, shell string }{
		{"exit", "CORRAL exec --work-dir . -- sh -c '" + raw + "; exit 0'"},
		{"killed by a signal", "CORRAL exec --work-dir . -- sh -c '" + raw + "; kill -9 $$'"},
		{"timeout", "CORRAL exec --work-dir . --timeout 1s --kill-grace 1s -- sh -c 'trap \"\" TERM; " + raw + "; while :; do sleep 1; done'"},
		// (Without job control a background job's stdin is /dev/null:
		// give it the terminal.)
		{"corral gets SIGTERM", "CORRAL exec --work-dir . -- sh -c '" + raw + "; exec sleep 8' </dev/tty & sleep 2; kill -TERM $!; wait"},
		// With job control the background corral gets SIGINT (not
		// ignored) and is not the terminal's foreground: it must set the
		// terminal back without being stopped by SIGTTOU.
		{"corral gets SIGINT in a background job", "set -m; CORRAL exec --work-dir . -- sh -c '" + raw + "; exec sleep 8' & sleep 2; kill -INT $!; wait"},
		{"window size", "CORRAL exec --work-dir . -- sh -c 'stty cols 7 rows 3; stty size'"},
		{"through stdout alone", "CORRAL exec --work-dir . -- sh -c '" + strings.ReplaceAll(raw, "2>", "<&1 2>") + "; stty cols 7 rows 3 <&1' </dev/null"},
	}
	users(t, func(t *testing.T, u user) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "terminal", "leave the caller's terminal changed: "+c.name)
				work := newDir(t, u, "work")
				before, after, out := termState(t, u, work, c.shell)
				if before != after {
					t.Errorf("the terminal changed: before %s, after %s:\n%q", before, after, out)
				}
			})
		}
	})
}
