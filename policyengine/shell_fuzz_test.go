package policyengine

import (
	"errors"
	"reflect"
	"testing"
)

// shellFuzzRedirectOps are the redirection operators Redirect documents.
var shellFuzzRedirectOps = map[string]bool{
	">": true, ">>": true, "<": true, ">|": true, "&>": true, "&>>": true,
	"<>": true, ">&": true, "<&": true, "<<": true, "<<<": true,
}

// FuzzSplitCommandLine checks that any input is either refused or split
// into commands that each run a program or redirect, and that splitting
// is deterministic. A panic or a hang fails the fuzzer by itself.
func FuzzSplitCommandLine(f *testing.F) {
	for _, tc := range shellSplitCases {
		f.Add(tc.line)
	}
	for _, tc := range shellSplitErrors {
		f.Add(tc.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmds, err := SplitCommandLine(line)
		if err != nil {
			if cmds != nil {
				t.Errorf("SplitCommandLine(%q) returned commands with error %v", line, err)
			}
			return
		}
		if len(cmds) == 0 {
			t.Fatalf("SplitCommandLine(%q) returned no commands and no error", line)
		}
		for i, c := range cmds {
			if c.Program == "" && len(c.Redirects) == 0 && len(c.Assigns) == 0 && c.Function == "" {
				t.Errorf("SplitCommandLine(%q)[%d] = %#v runs, redirects, assigns and defines nothing", line, i, c)
			}
			for _, r := range c.Redirects {
				if !shellFuzzRedirectOps[r.Op] {
					t.Errorf("SplitCommandLine(%q)[%d] has unknown redirection %q", line, i, r.Op)
				}
			}
		}
		again, err := SplitCommandLine(line)
		if err != nil || !reflect.DeepEqual(again, cmds) {
			t.Errorf("SplitCommandLine(%q) is not deterministic: %#v, then %#v, %v", line, cmds, again, err)
		}
		if errors.Is(err, ErrEmptyCommand) {
			t.Errorf("SplitCommandLine(%q) succeeded, then returned ErrEmptyCommand", line)
		}
	})
}
