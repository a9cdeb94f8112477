package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpConventions: help goes to stdout wherever it is asked for, a
// mistake is one line on stderr with what was probably meant, and every
// mistake exits 125.
func TestHelpConventions(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "exec"}, {"exec", "-h"}, {"exec", "--help"}, {"check", "-h"}, {"setup", "apparmor", "-h"}} {
		code, out, errOut := runCaptured(t, args...)
		if code != 0 || !strings.Contains(out, "usage: corral") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the usage on stdout", args, code, firstLine(out), errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nosuch"}, `corral help: unknown command "nosuch" (see 'corral help')`},
		{[]string{"help", "chek"}, `did you mean check?`},
		{[]string{"exce"}, `corral: unknown command "exce"; did you mean exec?`},
		{[]string{"exec", "--skil", "x", "--", "true"}, `corral exec: unknown flag --skil; did you mean --skill? (see 'corral exec -h')`},
		{[]string{"exec", "--workdir", "x", "--", "true"}, `did you mean --work-dir?`},
		{[]string{"exec", "--zzzzzz", "--", "true"}, `corral exec: unknown flag --zzzzzz (see 'corral exec -h')`},
		{[]string{"exec", "--memory", "5x", "--", "true"}, `corral exec: --memory "5x": "5x" is not a size`},
		{[]string{"exec", "--report"}, `corral exec: --report needs a value`},
		{[]string{"setup", "apparmor", "--prnt"}, `did you mean --print?`},
	} {
		code, out, errOut := runCaptured(t, c.args...)
		if code != 125 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestCommandList: the command list shows each summary's first sentence
// whole, not its first line cut where the summary was wrapped.
func TestCommandList(t *testing.T) {
	_, out, _ := runCaptured(t, "help")
	text := strings.Join(strings.Fields(out), " ")
	for _, c := range commands {
		if s := firstSentence(c.summary); !strings.Contains(text, s) || !strings.HasSuffix(s, ".") {
			t.Errorf("help lists %s without its whole first sentence %q", c.name, s)
		}
	}
}

// TestREADMESynopses: each command's synopsis in the README is the one
// -h prints, which is made from the flags themselves. Run with
// -update-readme to rewrite them.
func TestREADMESynopses(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	changed := readme
	for _, c := range commands {
		if c.name == "version" {
			continue
		}
		fs := newFlagSet(c, nil)
		c.setup(fs)
		want := "    " + strings.ReplaceAll(synopsis(c, fs, 76), "\n", "\n    ") + "\n"
		// The synopsis: the first code block line "corral NAME [" and the
		// lines after it indented further or naming the command again.
		re := regexp.MustCompile("(?m)^(    corral " + c.name + " \\[[^\n]*\n(?:     +[^\n]*\n|    corral " + c.name + " [^\n]*\n)*)")
		m := re.FindStringSubmatchIndex(changed)
		if m == nil {
			t.Errorf("README: no synopsis (an indented line \"corral %s [\")", c.name)
			continue
		}
		if got := changed[m[2]:m[3]]; got != want {
			if !*updateREADME {
				t.Errorf("README's synopsis of %s is not what -h says; want:\n%s\ngot:\n%s\n(go test ./cmd/corral -run READMESynopses -update-readme rewrites it)", c.name, want, got)
			}
			changed = changed[:m[2]] + want + changed[m[3]:]
		}
	}
	if *updateREADME && changed != readme {
		if err := os.WriteFile("../../README.md", []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's synopses from the flags")
