package policyengine

import (
	"strings"
	"testing"
)

// FuzzCheckExecNested runs hostile lines through the nested reading of
// shells and wrappers: it must answer (never panic), and a line that runs
// touch inside any wrapper must not be allowed, since touch is not in the
// exec list.
func FuzzCheckExecNested(f *testing.F) {
	for _, line := range []string{
		"timeout -k 1 -s KILL 5 touch x", "env -S 'touch x'", "xargs -n1 -I{} touch {}", "sh -o errexit -c 'touch x'",
		"busybox sh -c 'touch x'", "find . -exec sh -c 'touch x' \\;", "nice -5 touch", "flock l -c 'touch x'",
		"command -v touch", "builtin eval touch", "f() { touch; }; f", "cd /etc && ls > x", "exec -a n touch",
	} {
		f.Add(line)
	}
	e, err := New(Permissions{Exec: NewEntries("s1", []string{"sh", "env", "timeout", "xargs", "nice", "busybox", "find", "flock", "ls"}),
		Write: NewEntries("s1", []string{"/ws/**"}), ExecDeclared: []string{"s1"}}, Options{WorkDir: "/ws"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		d := e.CheckExec(line)
		invs, err := Invocations(line)
		if d.Action != Allow || err != nil {
			return
		}
		for _, inv := range invs {
			if inv.Name == "touch" && !strings.Contains(inv.Words[0], "$") {
				t.Errorf("CheckExec(%q) allows a line that runs touch: %s", line, d.Reason)
			}
		}
	})
}

// FuzzOptSpecParse: any words give options and operands or an error, at
// most one option a byte (a cluster "-abc" is three) and never an operand
// that was not a word.
func FuzzOptSpecParse(f *testing.F) {
	f.Add("-ak1 --kill-a=2 x -- -y")
	f.Add("--rep --k -i")
	s := wrapperSpecs()["xargs"].spec
	f.Fuzz(func(t *testing.T, args string) {
		words := strings.Fields(args)
		opts, ops, err := s.Parse(words)
		if err != nil {
			return
		}
		if len(opts) > len(args) || len(ops) > len(words) {
			t.Errorf("Parse(%q) = %d options, %d operands", words, len(opts), len(ops))
		}
		for _, o := range ops {
			if !strings.Contains(args, o) {
				t.Errorf("Parse(%q) made up operand %q", words, o)
			}
		}
	})
}
