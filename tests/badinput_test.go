//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput feeds corral broken skills and arguments: each must end
// with exit 125 and exactly one line on stderr, never a panic, and must
// run nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	const head = "---\nname: bad\ndescription: bad input\n"
	bigBody := strings.Repeat("lorem ipsum dolor sit amet\n", 10<<20/27+1)
	cases := []struct {
		name    string
		skillMD string // SKILL.md content; "" for no skill
		args    func(skill, work string) []string
	}{
		{"malformed YAML", head + "permissions: [\n---\n", nil},
		{"unterminated frontmatter", head + "permissions: {}\n", nil},
		{"unknown key", head + "permissions:\n  fs:\n    raed: [\"$WORK_DIR/**\"]\n---\n", nil},
		{"port 70000", head + "permissions:\n  network:\n    allow: [\"example.com:70000\"]\n---\n", nil},
		{"glob with unclosed [", head + "permissions:\n  fs:\n    read: [\"$WORK_DIR/[abc\"]\n---\n", nil},
		{"unknown path variable", head + "permissions:\n  fs:\n    read: [\"$SECRETS/**\"]\n---\n", nil},
		{"bad size", head + "permissions:\n  limits: {memory: 12XB}\n---\n", nil},
		{"10 MB SKILL.md", head + "---\n" + bigBody, nil},
		{"10 MB frontmatter", head + "# " + bigBody[:10<<20] + "\n---\n", nil},
		{"YAML alias bomb", head + `permissions:
  env: &a ["A","A","A","A","A","A","A","A","A"]
  x1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  x2: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  x3: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  x4: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  x5: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  x6: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  x7: [*g,*g,*g,*g,*g,*g,*g,*g,*g]
---
`, nil},
		{"binary garbage", "\x00\xff\xfe---\x00\n\x01\x02", nil},
		{"missing skill dir", "", func(_, work string) []string {
			return []string{"exec", "--work-dir", work, "--skill", filepath.Join(work, "no-such-skill"), "--", "touch", "ran"}
		}},
		{"missing work dir", "", func(_, work string) []string {
			return []string{"exec", "--work-dir", filepath.Join(work, "no-such-dir"), "--", "touch", filepath.Join(work, "ran")}
		}},
		{"empty command line for check exec", "", func(_, _ string) []string {
			return []string{"check", "exec", ""}
		}},
		{"bad skill in check", head + "permissions:\n  network:\n    allow: [\"example.com:70000\"]\n---\n", func(skill, _ string) []string {
			return []string{"check", "--skill", skill, "net", "example.com:443"}
		}},
		{"no command", "", func(_, work string) []string {
			return []string{"exec", "--work-dir", work, "--"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			attack(t, "bad-input", c.name)
			work := newDir(t, asSelf, "work")
			skill := filepath.Join(newDir(t, asSelf, "skills"), "bad")
			if c.skillMD != "" {
				writeFile(t, filepath.Join(skill, "SKILL.md"), c.skillMD, 0o644)
			}
			args := []string{"exec", "--work-dir", work, "--skill", skill, "--", "touch", "ran"}
			if c.args != nil {
				args = c.args(skill, work)
			}
			r := asSelf.run(t, runOpts{args: args, dir: work})
			if r.code != 125 {
				t.Errorf("exit %d, want 125:\n%s", r.code, r)
			}
			stderr := strings.TrimSuffix(r.stderr, "\n")
			if stderr == "" || strings.Contains(stderr, "\n") {
				t.Errorf("want exactly one line on stderr:\n%s", r)
			}
			for _, bad := range []string{"panic", "goroutine "} {
				if strings.Contains(r.output(), bad) {
					t.Errorf("output holds %q:\n%s", bad, r)
				}
			}
			if exists(filepath.Join(work, "ran")) {
				t.Errorf("the command ran despite the bad input")
			}
			if len(r.stderr) > 4096 {
				t.Errorf("stderr is %d bytes long, want one short line", len(r.stderr))
			}
			os.RemoveAll(skill)
		})
	}
}

// TestDataDirHint: a skill's $DATA_DIR that cannot be made (a home the
// user cannot write, or no HOME at all) stops the run with one line that
// says where it was to be and how to choose another place.
func TestDataDirHint(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "keeps-data", "  fs:\n    write: [\"$DATA_DIR/**\"]\n")
		home := newDir(t, asSelf, "home") // not the user's: root-owned, 0755
		for _, env := range [][]string{homeEnv(home + "/sub"), append(homeEnv(home), "XDG_DATA_HOME="+home+"/xdg")} {
			r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", sk, "--", "true"}, dir: work, env: env})
			if !u.unpriv {
				continue // root can make it anywhere
			}
			if r.code != 125 || !strings.Contains(r.stderr, "pass --data-dir DIR (or set XDG_DATA_HOME)") {
				t.Errorf("an unwritable data dir: exit %d, want 125 and the hint:\n%s", r.code, r)
			}
		}
		if !u.unpriv {
			return
		}
		data := newDir(t, u, "data")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--data-dir", data, "--skill", sk, "--", "true"}, dir: work, env: homeEnv(home + "/sub")})
		if r.code != 0 {
			t.Errorf("with --data-dir: exit %d:\n%s", r.code, r)
		}
	})
}
