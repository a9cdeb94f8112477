package agentpolicy

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// globsOf are the command_glob texts of rules.
func globsOf(rules []Rule) []string {
	out := []string{}
	for _, r := range rules {
		out = append(out, r.CommandGlob)
	}
	return out
}

// TestRememberRulesExact: each command that needs a rule is stored whole,
// as written once the shell has read its quotes: the program with its
// subcommand, leading options and assignments, every argument. A
// command the built-in read-only list allows needs none.
//
// It guards a fixed bug: remember kept the first one or two words, so
// "npm run lint" became {command: npm run} (every npm script), "git
// --no-pager push" became {command: git} (every git command), "git 'log
// -p'" and "git -c x=y log" became {command: git}.
func TestRememberRulesExact(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"npm run lint", []string{"npm run lint"}},
		{"git --no-pager push origin main", []string{"git --no-pager push origin main"}},
		{"git -c core.pager=less log -p", []string{"git -c core.pager=less log -p"}},
		{"git --no-pager log", []string{}}, // the built-in list allows it
		{"git rev-parse --abbrev-ref HEAD", []string{}},
		{"git cherry-pick abc123", []string{"git cherry-pick abc123"}},
		{"go -C dir build ./...", []string{"go -C dir build ./..."}},
		{"ls -la", []string{}},
		{"npm test && make build", []string{"npm test", "make build"}},
		{"npm test; make build; npm test", []string{"npm test", "make build"}},
		{"make build || make clean", []string{"make build", "make clean"}},
		{"npm test\nmake build\n", []string{"npm test", "make build"}},
		// Quoting is read away where it changes nothing, kept where a
		// word holds a space or a quote.
		{`"git" push origin`, []string{"git push origin"}},
		{`g'i't push`, []string{"git push"}},
		{`git 'log' -p`, []string{}},
		{`git 'log -p'`, []string{"git 'log -p'"}},
		{`git commit -m 'fix bug'`, []string{"git commit -m 'fix bug'"}},
		{`git commit -m "fix bug"`, []string{"git commit -m 'fix bug'"}},
		{`git commit -m "it's"`, []string{`git commit -m 'it'\\''s'`}},
		{`git commit -m ''`, []string{`git commit -m ''`}},
		{`make 'a\b'`, []string{`make a\\b`}},
		{`python3 -c 'print(1)'`, []string{"python3 -c print(1)"}},
		// Assignments stay in the rule.
		{"FOO=1 git log", []string{"FOO=1 git log"}},
		{"FOO='a b' make", []string{"FOO='a b' make"}},
		{"CC=clang CFLAGS=-O2 make build", []string{"CC=clang CFLAGS=-O2 make build"}},
		{"make CFLAGS=-O2", []string{"make CFLAGS=-O2"}},
		// Redirections that write nothing stay out of the rule; a
		// pipe into a read-only command needs no rule for it.
		{"npm test 2>&1 | tail -20", []string{"npm test"}},
		{"npm test >/dev/null 2>&1", []string{"npm test"}},
		{"npm test &>/dev/null", []string{"npm test"}},
		{"make 2>/dev/null | grep -c error", []string{"make"}},
		{"./target/release/app --flag", []string{"./target/release/app --flag"}},
		{"/usr/bin/make", []string{"/usr/bin/make"}},
		{"true", []string{"true"}},
		{"git reset --soft HEAD~1", []string{"git reset --soft HEAD~1"}},
		{"git rebase -i HEAD^", []string{"git rebase -i HEAD^"}},
		{"./tool --name=café", []string{"./tool --name=café"}},
	} {
		got, err := RememberRules(tt.line)
		if err != nil || !slices.Equal(globsOf(got), tt.want) {
			t.Errorf("RememberRules(%q) = %q, %v; want %q", tt.line, globsOf(got), err, tt.want)
			continue
		}
		for _, r := range got {
			if compileGlob(r.CommandGlob).wild() {
				t.Errorf("%q: %q has a wildcard", tt.line, r.CommandGlob)
			}
		}
	}
}

// TestRememberRulesRefused: a line holding a command that no rule can
// allow exactly is refused whole, saying why. It guards fixed bugs:
// remember stored {command: cd} (which the rule says never), {command:
// $CMD} for "$CMD build", and for a wrapper, a pipe, an expansion or a
// redirection a rule wider than the line ("make $TARGET" became {command:
// make}, "python3 < x.py" {command: python3}, "sudo apt update" {command:
// apt update}).
func TestRememberRulesRefused(t *testing.T) {
	for _, tt := range []struct{ line, why string }{
		// Builtins that change the shell for the rest of the line, or
		// run code.
		{"cd sub && npm ci", "cd changes the folder"},
		{"cd sub", "cd changes the folder"},
		{"'cd' sub; make", "cd changes the folder"},
		{"pushd sub && make", "pushd changes the folder"},
		{"export A=1; make", "export changes the shell's variables"},
		{"set -e; make", "set changes"},
		{"alias ls=rm; ls", "alias changes what the names"},
		{"umask 0; make", "umask changes"},
		{"source env.sh && make", "source runs code"},
		{". ./env.sh", ". runs code"},
		{"eval make", "eval runs code"},
		{"exec make", "exec runs code"},
		{"command make", "command runs code"},
		{"builtin cd x", "builtin runs code"},
		{"printf -v PATH /tmp/x; make", "printf -v sets"},
		{"find . -name x -exec rm ';'", "runs another program"},
		// Wrappers: the program they run would need a rule of its own.
		{"sudo apt update", "sudo runs another program"},
		{"env FOO=1 make", "env runs another program"},
		{"/usr/bin/env make", "env runs another program"},
		{"timeout 10 make", "timeout runs another program"},
		{"nice -n 5 make", "nice runs another program"},
		{"sh -c make", "sh runs another program"},
		{"bash -lc 'npm test'", "bash runs another program"},
		{"time make", "time runs another program"},
		// Expansions, quoted or not: corral cannot tell them apart.
		{"$CMD build", "$ expands"},
		{"${CMD} build", "$ expands"},
		{"$(which git) push", "$ expands"},
		{"`which git` push", "backquotes"},
		{"make $TARGET", "$ expands"},
		{`make "$TARGET"`, "$ inside double quotes"},
		{`make "a$X"`, "$ inside double quotes"},
		{`make '$TARGET'`, `holds $`},
		{"FOO=$BAR make", "$ expands"},
		{"rm *.o", "pattern the shell expands"},
		{"rm '*.o'", "holds *"},
		{"rm x?", "pattern"},
		{"cp x{,.bak}", "braces"},
		{"cat ~/.netrc | wc -l", "~ expands"},
		{"make PREFIX=~/x", "~ expands"},
		{"PATH=/a:~/bin make", "~ expands"},
		{"cat '~/.netrc' | wc -l", "holds ~"},
		{`make a\ b`, "backslash"},
		// Input: a rule would allow any.
		{"cat x.py | python3", "python3 reads the output"},
		{"npm test | tee out.txt", "tee out.txt reads the output"},
		{"ls | xargs rm", "xargs runs another program"},
		{"curl -s x | sh", "sh runs another program"},
		{"python3 < x.py", "< gives the command input"},
		{"python3 <<< 'print(1)'", "<<< gives the command input"},
		{"cat <<EOF\nx\nEOF", "<< gives"},
		// Output to a file: a rule names the command, not the file.
		{"npm test > out.txt", "writes to a file"},
		{"npm test >> log.txt", "writes to a file"},
		{"make 2> err.txt", "writes to a file"},
		{"make >& out.txt", "writes to a file"},
		// Structure a rule cannot hold.
		{"(make)", "parentheses"},
		{"{ make; }", "braces"},
		{"if true; then make; fi", "compound command"},
		{"for f in a b; do make; done", "compound command"},
		{"while make; do sleep 1; done", "compound command"},
		{"make &", "background"},
		{"make & npm test", "background"},
		{"f() { make; }; f", "parentheses"},
		{"make # build it", "comment"},
		{"! make", "negates"},
		{"FOO=1", "only sets shell variables"},
		{"FOO=1; make", "only sets shell variables"},
		{`'FOO=1' make`, "a program named"},
	} {
		got, err := RememberRules(tt.line)
		if err == nil {
			t.Errorf("RememberRules(%q) = %q, want a refusal (%s)", tt.line, globsOf(got), tt.why)
			continue
		}
		if !errors.Is(err, ErrNotExact) || !strings.Contains(err.Error(), tt.why) || !strings.HasPrefix(err.Error(), "cannot remember ") {
			t.Errorf("RememberRules(%q): %v; want ErrNotExact saying %q", tt.line, err, tt.why)
		}
		// And the file is left alone.
		file := writeFile(t, t.TempDir(), "p.yaml", "version: 1\n")
		if _, err := Remember(file, tt.line); err == nil {
			t.Errorf("Remember(%q) stored it", tt.line)
		}
		if data, _ := os.ReadFile(file); string(data) != "version: 1\n" {
			t.Errorf("Remember(%q) changed the file to %q", tt.line, data)
		}
	}
	// A line corral cannot read is an error, not a refusal.
	for _, line := range []string{"", "   ", "echo 'unterminated", "make &&"} {
		if got, err := RememberRules(line); err == nil {
			t.Errorf("RememberRules(%q) = %q, want an error", line, globsOf(got))
		}
	}
}

// TestRememberRoundTrip: what remember stores allows the line it was given
// and no wider command: the same program with another subcommand,
// another argument, one more argument, the words split otherwise, or
// without the assignment.
func TestRememberRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		line  string
		wider []string
	}{
		{"npm run lint", []string{"npm run build", "npm run", "npm run lint --fix", "npm 'run lint'", "npm run lint extra",
			"npm", "npm run lint; curl evil", "npm run lint:fix"}},
		{"git --no-pager push origin main", []string{"git push", "git push origin main", "git --no-pager push origin main --force",
			"git --no-pager push", "git --no-pager push origin main2"}},
		{"git --no-pager log", []string{"git push", "git --no-pager push", "git --no-pager log --output=x"}},
		{"git -c core.pager=less log -p", []string{"git -c core.pager=sh log -p", "git log -p --output=x", "git -c core.pager=less push"}},
		{"git commit -m 'fix bug'", []string{"git commit -m fix bug", "git commit -m 'fix bug' --amend", "git commit -m fix", "git commit"}},
		{"FOO=1 make build", []string{"make build", "FOO=2 make build", "FOO=1 make build2", "FOO=1 BAR=2 make build"}},
		{"python3 -c 'print(1)'", []string{"python3 -c 'print(2)'", "python3", "python3 -c 'print(1)' x"}},
		{"npm test 2>&1 | tail -20", []string{"npm test --watch", "npm", "npm test | sh"}},
		{"make build && npm test", []string{"make clean", "make", "npm test x"}},
		{`g'i't push`, []string{"git push --force", "git"}},
	} {
		t.Run(tt.line, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "p.yaml", "version: 1\n")
			if _, err := Remember(file, tt.line); err != nil {
				t.Fatal(err)
			}
			p, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Permissions.Allow {
				if r.Command != "" || compileGlob(r.CommandGlob).wild() {
					t.Errorf("stored %s: not an exact rule", r)
				}
			}
			e := evaluator(t, nil, Layer{Name: "project", Source: file, Policy: p})
			wantDecision(t, tt.line, e.CheckExec(tt.line), policyengine.Allow, "-", "-")
			for _, w := range tt.wider {
				if d := e.CheckExec(w); d.Action == policyengine.Allow {
					t.Errorf("remembering %q allows %q: %s", tt.line, w, d.Reason)
				}
			}
		})
	}
}

// TestAllowGlobSeesQuotedWords: an allow command_glob sees a word that
// holds a space or a quote in single quotes, so "echo hello world" does
// not allow echo 'hello world' (other words), while a star still spans
// them; deny globs see the bare words, as before.
func TestAllowGlobSeesQuotedWords(t *testing.T) {
	e := project(t, `permissions:
  allow:
    - command_glob: "echo hello world"
    - command_glob: "git commit -m *"
    - command_glob: 'printf \*'
  deny:
    - command_glob: "rm -rf a b"
`)
	checkLines(t, e, []lineCase{
		{"echo hello world", policyengine.Allow, "-"},
		{"echo 'hello world'", policyengine.Confirm, ""},
		{"echo hello 'world'", policyengine.Allow, "-"},
		{"git commit -m 'fix the bug'", policyengine.Allow, "-"},
		{"printf '*'", policyengine.Allow, "-"},
		{"rm -rf 'a b'", policyengine.Deny, "permissions.deny {command_glob: rm -rf a b}"},
	})
}
