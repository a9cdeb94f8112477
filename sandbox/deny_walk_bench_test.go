//go:build linux

package sandbox

import (
	"os"
	"testing"

	"corral.dev/corral/policyengine"
)

// BenchmarkDenyWalk walks CORRAL_DENY_TREE (a big folder: a node_modules
// or a kernel source tree) for **/.env and **/*.pem, as a run with those
// fs.deny globs and a read grant of the folder does at every launch.
func BenchmarkDenyWalk(b *testing.B) {
	tree := os.Getenv("CORRAL_DENY_TREE")
	if tree == "" {
		b.Skip("set CORRAL_DENY_TREE to a big folder")
	}
	p := policyengine.Permissions{
		Read: policyengine.NewEntries("s", []string{tree + "/**"}),
		Deny: policyengine.NewEntries("s", []string{"/**/.env", "/**/*.pem"}),
	}
	for b.Loop() {
		f := &Facts{resolver: newResolver(), Files: map[string]FileInfo{}}
		f.walkDenied(p)
		if len(f.DenyCut) > 0 {
			b.Fatal(f.DenyCut)
		}
	}
}
