package skill

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: d\npermissions:\n  fs:\n    read: ['$WORK_DIR/**']\n  network:\n    allow: ['*:443']\n  exec: [sh]\n  limits: {memory: 256Mi, pids: 4, timeout: 5s}\n---\nbody\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\na: &x [*x]\n---\n"))
	f.Add([]byte("\xef\xbb\xbf---\r\nname: x\r\n---\r\n"))
	f.Add([]byte("---\nname: x--y\ndescription: ' '\n---\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nlicense: MIT\ncompatibility: git\nmetadata: {a: b}\nallowed-tools: Bash(git add:*) Read\n---\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nallowed-tools:\n  - Bash(npm run test)\n  - 'Bash(x'\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The folder is x, so only a skill named x can load.
		s, err := Parse("skills/x/SKILL.md", data)
		if err != nil {
			return
		}
		if s.Name != "x" || s.Description == "" {
			t.Fatalf("a skill breaking the Agent Skills format was accepted: name %q, description %q", s.Name, s.Description)
		}
	})
}

// FuzzAllowedTools: an allowed-tools string splits into entries or is one
// error, and a mapped entry never says more than it was written with.
func FuzzAllowedTools(f *testing.F) {
	for _, s := range []string{
		"Bash(git add:*) Bash(jq:*) Read", "Read, Grep, Glob", "Bash(npm run test)", "Bash(git * main)",
		`Bash(git commit -m "x (y)":*)`, "Bash(a)(b)", "Bash(", ")", "mcp__x__y WebFetch(domain:a.com)",
		"Bash(FOO=1 make:*)", "Bash(cd x && make:*)", "Bash( :*)", "Bash(git add *)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := splitTools(s)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e == "" || strings.ContainsAny(e[:1], " \t\r\n,") {
				t.Fatalf("%q: entry %q", s, e)
			}
			tool, err := parseTool(e)
			if err != nil || tool.Command == nil {
				continue
			}
			c := tool.Command
			if len(c.Words) == 0 || strings.Contains(c.Words[0], "=") || c.Prefix && !strings.Contains(e, "*") {
				t.Fatalf("%q mapped to %+v", e, c)
			}
			for _, w := range c.Words {
				if !allBytes(w, isPlainWordByte) || !strings.Contains(tool.Arg, w) {
					t.Fatalf("%q mapped to %+v: word %q", e, c, w)
				}
			}
		}
	})
}
