package policy

import (
	"slices"
	"testing"

	"corral/policyengine"
)

const builtinList = "the built-in read-only list"

// TestBuiltinReadOnly: the built-in list allows reading commands without a
// rule; flags and redirections that write or run other programs need
// confirmation.
func TestBuiltinReadOnly(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, line := range []string{
		"pwd", "ls", "ls -la /", "rg -n TODO", "grep -r x .", "find . -name '*.go'",
		"find . -type f -newer go.mod", "sort a.txt", "sort -u -k2 a.txt", "cat a b",
		"head -n 3 a", "tail -f log", "wc -l a", "stat a", "file a", "uname -a",
		"whoami", "date", "date +%s", "git status", "git status -s", "git diff HEAD~1",
		"git diff --stat", "git show HEAD", "git log --oneline -5", "git rev-parse HEAD",
		"git ls-files", "git grep -n foo", "cat < a", "grep x <<< \"$v\"",
		"cat a | grep x | sort | head", "ls && pwd; whoami", "ls $(pwd)", "cat \"$(git rev-parse --show-toplevel)/go.mod\"",
	} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Allow, "-", "")
		wantContains(t, line, d.Rule, builtinList)
	}
}

// TestBuiltinNotReadOnly: what the built-in list does not cover.
func TestBuiltinNotReadOnly(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, line := range []string{
		// Flags that write or run programs.
		"find . -delete", "find . -name x -exec rm {} ;", "find . -execdir sh -c x ;",
		"find . -ok rm {} ;", "find . -okdir rm {} ;", "find . -fprint out", "find . -fprint0 out",
		"find . -fprintf out %p", "find . -fls out",
		"sort -o x a", "sort --output x a", "sort --output=x a",
		"git diff --output=x", "git log --output x", "git show -o x", "git diff --ext-diff",
		"git log -p --textconv", "rg --pre cat x", "rg --pre=./decode x",
		// Redirections that write.
		"cat a > b", "cat a >> b", "cat a &> b", "ls >| b", "ls 2> errors", "ls >&2", "ls <> f",
		"cat a | sort > b",
		// Not on the list.
		"git push", "git commit -m x", "git", "git -C . status", "git -c core.pager=sh log",
		"/bin/ls", "./ls", "rm x", "cp a b", "tee out", "echo hi", "xargs cat", "env ls",
		"sh -c 'ls > x'", "ls; rm x", "ls $(rm x)", "cat `curl x`", "ls | sh",
	} {
		wantDecision(t, line, e.CheckExec(line), policyengine.Confirm, "", "")
	}
}

// TestBuiltinOnlyForShell: the built-in command list applies to shell
// tools (bash, shell, or none named), not to another tool's command.
func TestBuiltinOnlyForShell(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, tt := range []struct {
		tool string
		want policyengine.Action
	}{
		{"bash", policyengine.Allow},
		{"shell", policyengine.Allow},
		{"", policyengine.Allow},
		{"python", policyengine.Confirm},
		{"ssh", policyengine.Confirm},
	} {
		wantDecision(t, tt.tool, e.CheckTool(tt.tool, "ls -la"), tt.want, "-", "")
	}
}

// TestBuiltinWritingFlagsMissed guards a fixed bug: the built-in list lets
// through read-only commands whose options write files or run programs,
// because writingFlags only knows a few spellings:
//
//   - sort -oFILE and -uo FILE (short option with attached value, or
//     bundled), sort --compress-program=PROG (runs PROG);
//   - git grep -O / --open-files-in-pager (runs a pager program);
//   - rg --hostname-bin=PROG (runs PROG);
//   - file -C (compiles magic, writes FILE.mgc);
//   - date -s / --set (sets the clock).
func TestBuiltinWritingFlagsMissed(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, line := range []string{
		"sort -oout.txt in.txt", "sort -uo out.txt in.txt", "sort --compress-program=sh in.txt",
		"git grep -Osh x", "git grep --open-files-in-pager=sh x", "rg --hostname-bin=./x y",
		"file -C -m magic", "date -s 2020-01-01", "date --set=2020-01-01",
	} {
		wantDecision(t, line, e.CheckExec(line), policyengine.Confirm, "", "")
	}
}

// TestSystemLists: the lists the issue names are all there.
func TestSystemLists(t *testing.T) {
	for _, tool := range []string{"read", "grep", "glob", "search"} {
		if !slices.Contains(SystemTools, tool) {
			t.Errorf("SystemTools lacks %s", tool)
		}
	}
	for _, c := range []string{"pwd", "ls", "rg", "grep", "find", "sort", "cat", "head", "tail", "wc", "stat",
		"file", "uname", "whoami", "date", "git status", "git diff", "git show", "git log", "git rev-parse",
		"git ls-files", "git grep"} {
		if !slices.Contains(SystemCommands, c) {
			t.Errorf("SystemCommands lacks %s", c)
		}
	}
}

// TestToolsWithoutCommand: tool rules without a command line.
func TestToolsWithoutCommand(t *testing.T) {
	e := project(t, `permissions:
  allow:
    - tool: edit
    - command: make
    - tool: bash
      command: ls
  deny:
    - tool: grep
    - command: rm
`)
	for _, tt := range []struct {
		tool        string
		want        policyengine.Action
		rule, layer string
	}{
		{"read", policyengine.Allow, "built-in read-only tools", ""},
		{"glob", policyengine.Allow, "built-in read-only tools", ""},
		{"search", policyengine.Allow, "built-in read-only tools", ""},
		{"grep", policyengine.Deny, "permissions.deny {tool: grep}", projectLabel}, // deny beats the built-in list
		{"edit", policyengine.Allow, "permissions.allow {tool: edit}", projectLabel},
		{"web_fetch", policyengine.Confirm, "", ""},
		{"write", policyengine.Confirm, "", ""},
		{"bash", policyengine.Confirm, "", ""}, // {tool: bash, command: ls} needs a command
		{"rm", policyengine.Confirm, "", ""},   // a command rule is not a tool rule
	} {
		d := e.CheckTool(tt.tool, "")
		wantDecision(t, tt.tool, d, tt.want, tt.rule, tt.layer)
		if tt.want == policyengine.Confirm {
			wantContains(t, tt.tool, d.Reason, "{tool: "+tt.tool+"}")
		}
	}
	e = project(t, "permissions:\n  allow: [{tool: web_fetch}]\n")
	wantDecision(t, "web_fetch allowed", e.CheckTool("web_fetch", ""), policyengine.Allow, "permissions.allow {tool: web_fetch}", projectLabel)
	// A tool rule without command allows the tool's commands too.
	wantDecision(t, "web_fetch with a line", e.CheckTool("web_fetch", "anything"), policyengine.Allow, "-", "-")
}
