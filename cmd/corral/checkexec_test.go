//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// TestExecAnswerPathNames: a program named without a path is the file the
// sandbox's PATH finds, and check exec answers for it as for a path: one
// that lies outside every grant (a /usr/local/bin link into /opt on some
// hosts) is not in the sandbox, not found; shell builtins, functions the
// line defines and names the PATH does not hold are left to the shell.
func TestExecAnswerPathNames(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	tool := filepath.Join(outside, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lookPath := func(name string) string {
		if name == "faketool" {
			return tool
		}
		return sandbox.LookPath(name)
	}
	allow := policyengine.Decision{Action: policyengine.Allow, Reason: "test"}
	for _, tt := range []struct {
		read    []string
		line    string
		want    policyengine.Action
		missing bool
	}{
		{nil, "faketool x", policyengine.Deny, true},
		{nil, "echo x | faketool", policyengine.Deny, true},
		{nil, "faketool() { echo; }; faketool", policyengine.Allow, false},
		{nil, "echo x; true; test -n x", policyengine.Allow, false},
		{nil, "ls -la", policyengine.Allow, false},
		{nil, "no-such-program-here x", policyengine.Allow, false},
		{[]string{outside + "/**"}, "faketool x", policyengine.Allow, false},
	} {
		perms := policyengine.Permissions{Read: policyengine.NewEntries("t", tt.read), Write: policyengine.NewEntries("t", []string{work + "/**"}), Declared: []string{"t"}}
		engine, err := policyengine.New(perms, policyengine.Options{WorkDir: work})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := sandbox.CheckPlan(perms, sandbox.Spec{WorkDir: work, Env: os.Environ(), Tier: sandbox.TierNamespaces}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := &asker{engine: engine, workDir: work, lookPath: lookPath, plan: func() (*sandbox.Plan, error) { return plan, nil }}
		// Asked twice, as check --stdin may: the second answer comes
		// from what the first learnt about the names.
		for range 2 {
			if got := a.execAnswer(tt.line, allow); got.Action != tt.want || got.NotFound != tt.missing {
				t.Errorf("read %q: execAnswer(%q) = %s, not_found %v (%s); want %s, not_found %v", tt.read, tt.line, got.Action, got.NotFound, got.Reason, tt.want, tt.missing)
			}
		}
		if tt.line == "faketool x" && tt.read == nil {
			if got := a.execAnswer("faketool() { echo; }; faketool", allow); got.Action != policyengine.Allow {
				t.Errorf("a function named as a program the sandbox lacks, after that program was asked about: %s (%s)", got.Action, got.Reason)
			}
		}
	}
}
