//go:build linux

package sandbox

import (
	"testing"

	"corral.dev/corral/policyengine"
)

func BenchmarkProbeAndPlan(b *testing.B) {
	p := policyengine.Permissions{
		Read:         policyengine.NewEntries("bench", []string{"/tmp/**"}),
		Exec:         policyengine.NewEntries("bench", []string{"sh", "git", "grep", "cat", "ls", "head", "wc", "true"}),
		Declared:     []string{"bench"},
		ExecDeclared: []string{"bench"},
	}
	spec := Spec{Argv: []string{"/bin/true"}, WorkDir: "/tmp"}
	for i := 0; i < b.N; i++ {
		if _, err := BuildPlan(p, spec, Probe(p, spec)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNestedRepos(b *testing.B) {
	for _, dir := range []string{"/work/main", "/usr/share"} {
		b.Run(dir, func(b *testing.B) {
			for b.Loop() {
				f := &Facts{resolver: newResolver(), Files: map[string]FileInfo{}}
				f.nestedRepos(dir)
			}
		})
	}
}

// BenchmarkKernelExec is what the first question about a program the
// exec list does not name costs (check and the preflight ask only then).
func BenchmarkKernelExec(b *testing.B) {
	p := policyengine.Permissions{
		Exec:         policyengine.NewEntries("bench", []string{"sh", "git", "grep", "cat", "ls", "head", "wc", "true"}),
		Declared:     []string{"bench"},
		ExecDeclared: []string{"bench"},
	}
	for b.Loop() {
		KernelExec(p, "/tmp")("curl")
	}
}
