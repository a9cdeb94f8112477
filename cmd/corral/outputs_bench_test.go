package main

import (
	"os"
	"path/filepath"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// BenchmarkOutputs is what --report and --audit-log add to a launch: the
// writable roots, opening both files (the audit log gets no entry), and
// writing the report; BenchmarkOutputsWriteFile is the report written
// the way corral wrote it before.
func BenchmarkOutputs(b *testing.B) {
	dir := b.TempDir()
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	perms := policyengine.Permissions{Write: policyengine.NewEntries("bench", []string{work + "/**"})}
	for range b.N {
		roots := sandbox.WritableRoots(perms, work)
		r, err := openOutput("--report", filepath.Join(dir, "r.json"), roots, false)
		if err != nil {
			b.Fatal(err)
		}
		a, err := openOutput("--audit-log", filepath.Join(dir, "a.jsonl"), roots, true)
		if err != nil {
			b.Fatal(err)
		}
		r.replace([]byte("{}\n"))
		r.Close()
		a.Close()
	}
}

func BenchmarkOutputsWriteFile(b *testing.B) {
	dir := b.TempDir()
	for range b.N {
		os.WriteFile(filepath.Join(dir, "r.json"), []byte("{}\n"), 0o644)
	}
}
