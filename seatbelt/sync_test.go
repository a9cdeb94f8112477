package seatbelt_test

import (
	"slices"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// TestDarwinPlan: on macOS BuildPlan lists Seatbelt's protections and
// does not refuse to run for want of Linux's kernel features.
func TestDarwinPlan(t *testing.T) {
	perms := policyengine.Permissions{
		Write:        policyengine.NewEntries("s", []string{"/Users/u/ws/**"}),
		Exec:         policyengine.NewEntries("s", []string{"curl"}),
		Network:      policyengine.NewEntries("s", []string{"*:443"}),
		Declared:     []string{"s"},
		ExecDeclared: []string{"s"},
	}
	facts := &sandbox.Facts{
		OS:       "darwin",
		Files:    map[string]sandbox.FileInfo{"/Users/u/ws": {Exists: true, Dir: true, Real: "/Users/u/ws"}},
		Programs: map[string]sandbox.Program{"curl": {Path: "/usr/bin/curl", Real: "/usr/bin/curl"}},
	}
	spec := sandbox.Spec{Argv: []string{"curl", "https://example.com"}, WorkDir: "/Users/u/ws"}
	plan, err := sandbox.BuildPlan(perms, spec, facts)
	if err != nil {
		t.Fatalf("BuildPlan refused on macOS: %v", err)
	}
	var names []string
	for _, p := range plan.Protections {
		names = append(names, p.Name)
	}
	for _, want := range []string{"seatbelt", "filesystem", "network", "exec-allowlist"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s protection in %q", want, names)
		}
	}
	for _, linux := range []string{"namespaces", "landlock-fs", "seccomp"} {
		if slices.Contains(names, linux) {
			t.Errorf("a Linux protection on macOS: %s", linux)
		}
	}
	if plan.Proxy == nil || plan.Path != "/usr/bin/curl" {
		t.Errorf("plan: proxy %v, path %q", plan.Proxy, plan.Path)
	}
	// The same facts without OS are a Linux host without Landlock or
	// namespaces: fail closed.
	facts.OS = ""
	if _, err := sandbox.BuildPlan(perms, spec, facts); err == nil {
		t.Error("a Linux host without kernel features did not fail closed")
	}
}
