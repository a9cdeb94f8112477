package skill

import (
	"slices"
	"strings"
	"testing"
)

func loadTools(t *testing.T, allowed string) ([]Tool, error) {
	t.Helper()
	s, err := Load(writeSkill(t, "---\nname: x\ndescription: d\nallowed-tools: "+allowed+"\n---\n"))
	if err != nil {
		return nil, err
	}
	return s.AllowedTools, nil
}

// TestAllowedToolsMapping: Bash entries that name a command in plain
// words become exactly that command; everything else is kept, not mapped,
// with the reason.
func TestAllowedToolsMapping(t *testing.T) {
	tests := []struct {
		entry  string
		words  string // the command's words; "" when not mapped
		prefix bool
		reason string // why it is not mapped
	}{
		{"Bash(git add:*)", "git add", true, ""},
		{"Bash(git add *)", "git add", true, ""},
		{"Bash(git:*)", "", false, "git -c alias"},
		{"Bash(git status:*)", "git status", true, ""},
		{"Bash(python3:*)", "", false, "runs the code its arguments give"},
		{"Bash(python3 -c:*)", "", false, "runs the code its arguments give"},
		{"Bash(sh -c:*)", "", false, "runs the code its arguments give"},
		{"Bash(python3 tools/lint.py:*)", "python3 tools/lint.py", true, ""},
		{"Bash(unshare:*)", "", false, "runs the command its arguments name"},
		{"Bash(strace -f:*)", "", false, "runs the command its arguments name"},
		{"Bash(timeout 5:*)", "", false, "runs the command its arguments name"},
		{"Bash(env FOO:*)", "", false, "runs the command its arguments name"},
		{"Bash(timeout 5 make test)", "timeout 5 make test", false, ""},
		{"Bash(npm run test)", "npm run test", false, ""},
		{"Bash(npm run test:unit:*)", "npm run test:unit", true, ""},
		{"Bash(./scripts/check.sh --all)", "./scripts/check.sh --all", false, ""},
		{"Bash(python3 -m pytest:*)", "python3 -m pytest", true, ""},
		{"Read", "", false, "only Bash(...) entries"},
		{"WebFetch(domain:example.com)", "", false, "only Bash(...) entries"},
		{"mcp__github__create_issue", "", false, "only Bash(...) entries"},
		{"bash(git add:*)", "", false, "only Bash(...) entries"},
		{"Bash", "", false, "every command line"},
		{"Bash(*)", "", false, "every command line"},
		{"Bash(:*)", "", false, "every command line"},
		{"Bash()", "", false, "every command line"},
		{"Bash(git * main)", "", false, "a '*' inside the command"},
		{"Bash(ls*)", "", false, "a '*' inside the command"},
		{"Bash(* install)", "", false, "a '*' inside the command"},
		{"Bash(git:*:*)", "", false, "a '*' inside the command"},
		{`Bash(git commit -m "wip":*)`, "", false, "shell syntax"},
		{"Bash(git commit -m 'wip')", "", false, "shell syntax"},
		{"Bash(echo $HOME)", "", false, "shell syntax"},
		{"Bash(cd src && make:*)", "", false, "shell syntax"},
		{"Bash(git log | head:*)", "", false, "shell syntax"},
		{"Bash(git add;rm:*)", "", false, "shell syntax"},
		{"Bash(cat ~/.netrc)", "", false, "shell syntax"},
		{"Bash(echo a{b,c})", "", false, "shell syntax"},
		{"Bash(git add\\ x)", "", false, "shell syntax"},
		{"Bash(make > out)", "", false, "shell syntax"},
		{"Bash(echo (x))", "", false, "shell syntax"},
		{"Bash(GIT_DIR=/x git add:*)", "", false, "variable assignment"},
	}
	for _, tt := range tests {
		got, err := parseTool(tt.entry)
		if err != nil {
			t.Errorf("%s: %v", tt.entry, err)
			continue
		}
		if got.Entry != tt.entry {
			t.Errorf("%s: entry kept as %q", tt.entry, got.Entry)
		}
		if tt.words == "" {
			if got.Command != nil || !strings.Contains(got.NotMapped, tt.reason) {
				t.Errorf("%s = %+v, want not mapped because %q", tt.entry, got, tt.reason)
			}
			continue
		}
		if got.Command == nil || strings.Join(got.Command.Words, " ") != tt.words || got.Command.Prefix != tt.prefix || got.NotMapped != "" {
			t.Errorf("%s = %+v (%s), want words %q prefix %v", tt.entry, got, got.Mapping(), tt.words, tt.prefix)
		}
	}
}

// TestAllowedToolsForms: the format's two forms, a string and a list,
// give the same entries in order; Claude Code's commas separate too.
func TestAllowedToolsForms(t *testing.T) {
	want := []string{"Bash(git add:*)", "Bash(jq:*)", "Read", "mcp__x__y"}
	for _, allowed := range []string{
		"Bash(git add:*) Bash(jq:*) Read mcp__x__y",
		"'Bash(git add:*), Bash(jq:*),Read  mcp__x__y'",
		">-\n  Bash(git add:*)\n  Bash(jq:*)\n  Read\n  mcp__x__y",
		"\n  - Bash(git add:*)\n  - Bash(jq:*)\n  - Read\n  - mcp__x__y",
		"['Bash(git add:*) Bash(jq:*)', 'Read, mcp__x__y']",
	} {
		tools, err := loadTools(t, allowed)
		if err != nil {
			t.Errorf("%q: %v", allowed, err)
			continue
		}
		var got []string
		for _, tl := range tools {
			got = append(got, tl.Entry)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q = %q, want %q", allowed, got, want)
		}
	}
	if tools, err := loadTools(t, ""); err != nil || tools != nil {
		t.Errorf("empty allowed-tools: %v, %v", tools, err)
	}
}

// TestAllowedToolsErrors: an entry that cannot be split or named is an
// error naming the field and the entry.
func TestAllowedToolsErrors(t *testing.T) {
	tests := []struct{ allowed, want string }{
		{"Read Bash(git add", `:4: allowed-tools: "Bash(git add" has a '(' that is not closed`},
		{"Read Bash)", `allowed-tools: "Bash)" has a ')' that closes nothing`},
		{"Bash(git add)x", `allowed-tools: "Bash(git add)x" has text after its closing ')'`},
		{"Bash(a)(b)", `"Bash(a)(b)" has text after its closing ')'`},
		{"(git add)", `"(git add)" is not a tool`},
		{"Bäsh", `"Bäsh" is not a tool`},
		{"['Read', 'Bash(x']", `allowed-tools[1]: "Bash(x" has a '(' that is not closed`},
		{"[Read, 1]", "allowed-tools[1]: must be a string"},
		{"{Bash: git}", "allowed-tools: must be a string of tools separated by spaces, or a list of them, not a mapping"},
		{"true", "allowed-tools: must be a string"},
	}
	for _, tt := range tests {
		_, err := loadTools(t, tt.allowed)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("allowed-tools: %s: error %v, want one line with %q", tt.allowed, err, tt.want)
		}
	}
}
