package corral

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunsNothing(t *testing.T) {
	for _, c := range []struct {
		name, text string
		inert      bool
	}{
		{"git init", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", true},
		{"git clone", "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://example.invalid/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", true},
		{"submodule", "[core]\n\tworktree = ../../../sm\n[submodule \"a.b\"]\n\turl = ../a\n\tactive = true\n", true},
		{"old subsection spelling", "[branch.main]\n\tremote = origin\n", true},
		{"comments and blanks", "# c\n; c\n\n[user] # c\n\tname = \"a b\" ; c\n\temail = a@b\n", true},
		{"ssh URL with an IPv6 address", "[remote \"o\"]\n\turl = ssh://git@[::1]/x\n", true},
		{"BOM and CRLF", "\xef\xbb\xbf[core]\r\n\tbare = false\r\n", true},
		{"fsmonitor", "[core]\n\tfsmonitor = touch x\n", false},
		{"fsmonitor in mixed case", "[CoRe]\n\tFSMonitor = touch x\n", false},
		{"hooksPath", "[core]\n\thooksPath = hk\n", false},
		{"alias", "[alias]\n\tst = !touch x\n", false},
		{"harmless-looking alias", "[alias]\n\tst = status\n", false},
		{"include", "[include]\n\tpath = x\n", false},
		{"includeIf", "[includeIf \"gitdir:/\"]\n\tpath = x\n", false},
		{"filter", "[filter \"x\"]\n\tclean = touch x\n", false},
		{"key on the header's line", "[user] name = a\n", false},
		{"key before any section", "name = a\n", false},
		{"continuation line, read as git does", "[user]\n\tname = a\\\n  b\n", true},
		{"continuation line in a key", "[core]\n\tfsmon\\\nitor = x\n", false},
		{"continuation line swallowing a section header, as git reads it", "[user]\n\tname = a\\\n[core]\n\tfsmonitor = x\n", false},
		{"unknown escape", "[user]\n\tname = \\x\n", false},
		{"unterminated quote", "[user]\n\tname = \"a\n", false},
		{"NUL byte", "[user]\n\tname = a\x00\n", false},
		{"core key in a subsection", "[core \"x\"]\n\tbare = true\n", false},
		{"transport URL", "[remote \"o\"]\n\turl = ext::sh -c touch% x\n", false},
		{"helper URL", "[remote \"o\"]\n\tpushurl = evil::x\n", false},
		{"submodule update command", "[submodule \"x\"]\n\tupdate = !touch x\n", false},
		{"sshCommand", "[core]\n\tsshCommand = touch x\n", false},
		{"uploadpack", "[remote \"o\"]\n\tuploadpack = touch x\n", false},
	} {
		why := runsNothing([]byte(c.text))
		if (why == "") != c.inert {
			t.Errorf("%s: runsNothing = %q, want inert %v", c.name, why, c.inert)
		}
	}
}

func FuzzParseGitConfig(f *testing.F) {
	f.Add([]byte("[core]\n\tbare = false\n[remote \"o\"]\n\turl = \"x\" # c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseGitConfig(data) // must not panic
	})
}

// TestParseGitConfigAgreesWithGit compares the keys the strict parser
// reads with git's own reading of the same text, wherever the parser
// takes it: a key git sees and the parser does not would pass the sweep.
func TestParseGitConfigAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, text := range []string{
		"[core]\n\tbare = false\n",
		"[user] # x\n\tname = \"a ; b\" # c\n",
		"[branch.Main]\n\tremote = o\n",
		"[remote \"a\\\"b\"]\n\turl = x\n",
		"[remote \"A.b\"]\n\turl = x\n",
		"\t [core]\n  bare\n",
		"[core]\n\tbare=\n",
		"[core]\n\tbare = \"\"\n",
		"[co-re]\n\tba-re = 1\n",
		"[core.]\n\tbare = 1\n",
		"[.core]\n\tbare = 1\n",
		"[core]\n\tbare = a\"b\"c\n",
		"[user]\n\tname = a \\t b\n",
		"[core]\r\n\tbare = 1\r\n",
		"[core]\n\tbare = 1\r\r\n",
		"[a \"\"]\n\tb = 1\n",
		"\xef\xbb\xbf[a]\n\tb = 1\n",
	} {
		entries, err := parseGitConfig([]byte(text))
		if err != nil {
			continue
		}
		file := filepath.Join(t.TempDir(), "config")
		os.WriteFile(file, []byte(text), 0o644)
		out, err := exec.Command(git, "config", "-f", file, "--list", "--null").Output()
		if err != nil {
			t.Errorf("%q: the parser takes it, git does not: %v", text, err)
			continue
		}
		var want, got []string
		for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			k, _, _ := strings.Cut(kv, "\n")
			want = append(want, k)
		}
		for _, e := range entries {
			k := e.Section + "." + e.Key
			if e.Sub != "" {
				k = e.Section + "." + e.Sub + "." + e.Key
			}
			got = append(got, k)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: parser reads %q, git %q", text, got, want)
		}
	}
}

func TestLooseGitEntries(t *testing.T) {
	got := looseGitEntries([]byte("[include] path = ../a.cfg\n[includeIf \"gitdir:/x/\"]\n\tpath = \"b.cfg\" # c\n[core]\n\thooksPath = h ; x\n[alias]\n\tx = y \\q\n"))
	want := []gitEntry{{Section: "include", Key: "path", Value: "../a.cfg"}, {Section: "includeif", Key: "path", Value: "b.cfg"},
		{Section: "core", Key: "hookspath", Value: "h"}, {Section: "alias", Key: "x", Value: "y \\q"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
