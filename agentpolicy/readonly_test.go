package agentpolicy

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
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
		"cat a | grep x | sort | head", "ls && pwd; whoami", "ls -- $(pwd)", "cat -- \"$(git rev-parse --show-toplevel)/go.mod\"",
		"cat ./*.go", "ls a*", "grep -n x -- *.go", "cat \"a$X\"", "git diff -- $F",
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

// TestBuiltinCannotRunPrograms: no spelling of an option that writes or
// runs a program, no assignment before the command and no option corral
// does not know gets a command through the built-in list (issue 15, 7).
func TestBuiltinCannotRunPrograms(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, line := range []string{
		// getopt_long abbreviations of unsafe long options.
		"sort --compress-p=sh a", "sort --compress-prog sh a", "sort --compress-program=sh a",
		"sort --comp=sh a", "sort --out=x a", "sort --o=x a", "sort --outp x a", "sort --temp=/tmp a",
		"sort a --compress-program=sh", "sort -u a -o x", "sort -T /tmp a", "sort -Tx a",
		"date --se=2020-01-01", "date --s=2020", "date -us 2020", "grep --dev=read x f", "grep -Dread x f",
		"file --comp -m m", "file --unc x", "file -z x", "file -Zb x", "file --no-s x", "file --pre x",
		// git's pagers, external diffs, output files and exec path.
		"git grep --open-files-in-pager=sh x", "git grep --open-files-in=sh x", "git grep --open x",
		"git grep -O x", "git grep -Osh x", "git grep -nO x", "git grep --textconv x",
		"git diff --ext-diff", "git diff --textconv", "git diff --output=x", "git diff --out=x",
		"git log --output x", "git show --output=x", "git show -ox", "git log --show-signature",
		"git diff --no-index /etc/passwd x", "git --exec-path=/tmp status", "git -c core.pager=sh log",
		"git -c diff.external=sh diff", "git --config-env=core.pager=X log", "git -C / status",
		"git --no-pager -c core.pager=sh log", "git -P --exec-path=. log", "git --no-pager", "git log --ext", "git diff --ext", "git status --porc=x --output=y",
		// rg runs preprocessors and decompressors; it takes no
		// abbreviations, so prefixes are unknown, not safe.
		"rg --pre cat x", "rg --pre=./d x", "rg --pre-glob '*' x", "rg --hostname-bin=./x y",
		"rg -z x", "rg --search-zip x", "rg -zn x", "rg --pr cat x", "rg --line-n x",
		// find's actions that run or write.
		"find . -exec rm {} ;", "find . -execdir sh -c x ;", "find . -ok rm {} ;", "find . -okdir rm {} ;",
		"find . -delete", "find . -fprint x", "find . -fprint0 x", "find . -fprintf x %p", "find . -fls x",
		"find . -name x -o -delete", "find . -newer -exec rm {} ;", "find . -D exec", "find . -unknownprimary",
		// Assignments before an allowed command change what it runs.
		"GIT_EXTERNAL_DIFF=./x git diff", "GIT_PAGER=sh git log", "PAGER='sh -c x' git log",
		"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=sh git log",
		"GIT_CONFIG_PARAMETERS=\"'core.pager'='sh'\" git show", "LESSOPEN='|sh x' cat a",
		"LD_PRELOAD=./x.so ls", "BASH_ENV=./x ls", "GIT_DIR=/tmp/x git status", "X=1 cat a",
		"GIT_PAGER=sh; export GIT_PAGER; git log", "X=1", "a=$(cat x)",
		"sh -c 'GIT_EXTERNAL_DIFF=./x git diff'", "bash -c 'LD_PRELOAD=x ls'",
		// Options corral does not know, and values that look like options.
		"ls --frobnicate", "cat --zzz a", "head --lines --output=x a", "git log --author --output=x",
		"git log --frobnicate", "grep -e -x --devices=read f", "stat --format --printf=x a",
		// Words the shell expands may be options: a file named
		// --compress-program=sh, or $X holding "-o x".
		"sort *", "sort * a", "cat $X", "sort a$X", "sort -k$X a", "sort \"$X\" a", "sort $(cat opts) a",
		"sort `cat opts` a", "ls {-o,x}", "find * -name x", "find . -name x -- *", "git diff $X", "git log *",
		"grep x *", "sort ?x", "sh -c 'sort *'",
		// Shells that read startup files before the script.
		"bash -i -c ls", "bash --rcfile x -c ls", "sh -o vi -c ls",
		// Pagers and programs not on the list.
		"less a", "LESSOPEN='|sh x' less a", "man -P sh ls", "xargs ls", "tar --to-command=sh -xf a",
		"tar -I sh -xf a", "time ls", "timeout 5 ls", "env ls", "busybox ls",
	} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Confirm, "", "")
	}
}

// TestBuiltinOptionsRead: the options a read-only command takes are read
// as its getopt does, so safe spellings (abbreviated, bundled, with
// values) still need no rule.
func TestBuiltinOptionsRead(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, line := range []string{
		"sort --rev a", "sort --key=2 a", "sort --key 2 a", "sort -k2,2n -t, a", "sort -ru -k 3 a",
		"sort -- -o", "ls --almost a", "ls -la --color=never", "ls --sort=time -r", "ls -I '*.o' .",
		"head -5 a", "head -n5 a", "head --lines=5 a", "tail -n +2 a", "tail -f -n 5 log", "grep -rn --include='*.go' x .",
		"grep -A3 -B 2 x f", "grep -3 x f", "grep --ignore x f", "grep -e x -e y f", "wc --lines a", "stat -c %s a",
		"date -u +%s", "date --iso-8601=seconds", "date -d yesterday", "uname -srm", "pwd -P", "cat -n a",
		"file -b --mime-type a", "find . -type f -name '*.go' -mtime -3", "find . -newermt 2020-01-01 -print0",
		"find . \\( -name a -o -name b \\) -prune", "find -L . -maxdepth 2 -printf '%p\\n'",
		"git status -sb", "git status --porcelain=v1 -uno", "git diff --cached --stat", "git diff -U5 HEAD~1",
		"git diff --word-diff=color --no-ext-diff", "git log -5 --oneline", "git log -n 3 --format=%H",
		"git log --author=me --since=2.weeks", "git show --stat HEAD", "git rev-parse --abbrev-ref HEAD",
		"git ls-files -z --others --exclude-standard", "git grep -n -e foo -- '*.go'",
		"sh -c 'git status'", "bash -euo pipefail -c 'ls -la'", "sh -ec 'cat a | wc -l'",
		"rg -n --hidden TODO", "rg --type go -w x", "git --no-pager log -3", "git -P diff --stat",
		"git --no-pager --no-optional-locks status -s",
	} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Allow, "-", "")
		wantContains(t, line, d.Rule, builtinList)
	}
}

// TestAssignmentRules: a command rule covers a segment with assignments
// only when it names them; deny rules still match the program.
func TestAssignmentRules(t *testing.T) {
	e := project(t, "permissions:\n  allow:\n    - command: make\n    - command: CC=clang make\n  deny:\n    - command: rm\n")
	checkLines(t, e, []lineCase{
		{"make", policyengine.Allow, "{command: make}"},
		{"CC=clang make", policyengine.Allow, "{command: CC=clang make}"},
		{"CC=clang make all", policyengine.Allow, "{command: CC=clang make}"},
		{"CC=gcc make", policyengine.Confirm, ""},
		{"LD_PRELOAD=x make", policyengine.Confirm, ""},
		{"X=1 rm -rf /", policyengine.Deny, "-"},
		{"env X=1 rm -rf /", policyengine.Deny, "-"},
	})
}

// TestUnclearProgramConfirms: where the words do not say which program a
// wrapper runs, no rule can match it: the answer is confirm, never allow.
func TestUnclearProgramConfirms(t *testing.T) {
	e := project(t, "permissions:\n  allow:\n    - command: timeout\n    - command: ls\n  deny:\n    - command: rm\n")
	checkLines(t, e, []lineCase{
		{"timeout 5 ls", policyengine.Allow, "-"},
		{"timeout --frob 5 ls", policyengine.Confirm, ""},
		{"timeout $OPTS 5 ls", policyengine.Confirm, ""},
		{"timeout --frob 5 rm -rf /", policyengine.Confirm, ""},
		{"env -S '\"ls\"'", policyengine.Confirm, ""},
		{"timeout 5 rm -rf /", policyengine.Deny, "-"},
	})
}

// TestReadOnlyKnowsEveryLongOption: a GNU tool takes a unique prefix of a
// long option for the option, and an exact name before a prefix; so the
// list must know every long option the installed tool has, or a word
// corral resolves to a safe option by prefix could be another, unsafe
// option's exact name there.
func TestReadOnlyKnowsEveryLongOption(t *testing.T) {
	longOpt := regexp.MustCompile(`(?m)(?:^|[\s,\[])--([a-z0-9][a-z0-9-]*)`)
	checked := 0
	for name, c := range readOnlyCommands() {
		if c.check != nil || c.spec.Exact || strings.Contains(name, " ") {
			continue
		}
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, _ := exec.Command(bin, "--help").CombinedOutput()
		for _, m := range longOpt.FindAllStringSubmatch(string(out), -1) {
			checked++
			if _, ok := c.spec.Long[m[1]]; !ok {
				t.Errorf("%s --help lists --%s, which the read-only list does not know", bin, m[1])
			}
		}
	}
	t.Logf("%d long options of the installed tools checked", checked)
}

// TestBuiltinShellsReadDifferently: lines that bash and dash read
// differently, or whose line continuations and here-documents corral
// cannot place for sure, are never allowed by the built-in list: the user
// is asked, with the construct named. Each made a shell run touch where
// check had said allow.
func TestBuiltinShellsReadDifferently(t *testing.T) {
	e := project(t, "version: 1\n")
	for _, tt := range []struct{ line, why string }{
		{"cat <<'pwd' -- $(\ntouch PWNED\npwd\n)\npwd", "here-document"},
		{"cat <<'pwd' -- \"$(\ntouch PWNED\npwd\n)\"\npwd", "here-document"},
		{"cat <<'pwd' -- <(\ntouch PWNED\npwd\n)\npwd", "here-document"},
		{"cat <<'pwd' -- ${x:-$(\ntouch PWNED\npwd\n)}\npwd", "here-document"},
		{"cat -- $(cat <<'E')\ntouch PWNED\nE", "here-document"},
		{"cat <<E\\\nOF\n$(touch PWNED)\nEOF", "here-document"},
		{"cat -- $\\\n'\\' '; touch PWNED; #'", "$'"},
		{"cat -- $'\\' ;touch PWNED; #'", "$'"},
		{"pwd; ((touch PWNED))", "(("},
		{`cat -- "${x:=\$(touch PWNED)}" "${x@P}"`, "${x:="},
		{`cat -- "${x:=a[\$(touch PWNED)]}" "$((x))"`, "${x:="},
		{`cat -- "${x@P}"`, "@"},
		{`cat -- $((x))`, "arithmetic"},
		{"[[ -f <(touch PWNED) ]]", "[["},
		{"[[ a || touch PWNED ]]", "[["},
		{"[[ a > PWNED ]]", "[["},
	} {
		d := e.CheckExec(tt.line)
		wantDecision(t, tt.line, d, policyengine.Confirm, "", "")
		wantContains(t, tt.line, d.Reason, tt.why)
	}
	// Line continuations are removed before the line is read: what they
	// join is what is checked.
	for _, line := range []string{
		"cat -- \"$\\\n(touch PWNED)\"",
		"case x in (a) pwd;; esa\\\nc; touch PWNED",
		"ls \\\n-l; t\\\nouch PWNED",
	} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Confirm, "", "")
		wantContains(t, line, d.Reason, "touch")
	}
	for _, line := range []string{
		"cat a b", "grep -r x .", "for f in *.go; do wc -l -- \"$f\"; done", "if ls x; then cat x; fi",
		"ls \\\n  -l \\\n  -a", "cat \"a\\\nb\" c", "grep -n x -- \\\n  a.go | sort", "cat <<EOF\nhi\nEOF",
		"cat -- $((1+2)) ${HOME}/a \"${D:-.}/b\"",
	} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Allow, "-", "")
	}
	// Understood, though not read-only: the answer names the program.
	for _, line := range []string{"if [ -f x ]; then cat x; fi", "curl \\\n -s https://x", "echo \"$HOME\""} {
		d := e.CheckExec(line)
		wantDecision(t, line, d, policyengine.Confirm, "", "")
		wantContains(t, line, d.Reason, "no rule allows")
	}
}

// TestLoginShellIsPlain: bash -lc is bash -c to the policy (the sandbox
// gives a login shell no startup files), so the usual call shape of
// Codex-style agents needs no rule of its own.
func TestLoginShellIsPlain(t *testing.T) {
	e := evaluator(t, nil)
	for _, line := range []string{"bash -lc 'git status --short'", "bash -l -c ls", "bash --login -c 'ls -la'"} {
		wantDecision(t, line, e.CheckExec(line), policyengine.Allow, "the built-in read-only list", "")
	}
}
