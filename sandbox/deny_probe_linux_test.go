//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestDenyWalk: the walk finds files and folders a deny glob matches in
// every grant (by the grant's path when it is a symlink), does not go
// into a matched folder, follows no symlink, and costs nothing without
// deny globs.
func TestDenyWalk(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ws/.env", "ws/a/b/.env", "ws/keys/id", "ws/keys/.env", "ws/c/key.pem", "ws/ok", "docs/.env"} {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	os.Symlink(filepath.Join(root, "docs"), filepath.Join(root, "ws", "docslink"))
	os.Symlink(filepath.Join(root, "ws"), filepath.Join(root, "alias"))
	p := policyengine.Permissions{
		Read: policyengine.NewEntries("s", []string{root + "/alias/**"}),
		Deny: policyengine.NewEntries("s", []string{"/**/.env", root + "/alias/keys/**", "/**/*.pem"}),
	}
	f := &Facts{resolver: newResolver(), Files: map[string]FileInfo{}}
	f.walkDenied(p)
	var got []string
	for _, d := range f.Denied {
		got = append(got, strings.TrimPrefix(d.Path, root)+map[bool]string{true: "/"}[d.Dir])
	}
	want := []string{"/ws/.env", "/ws/a/b/.env", "/ws/c/key.pem", "/ws/keys/"}
	if !slices.Equal(got, want) || len(f.DenyCut) != 0 {
		t.Errorf("denied %v (cut %v), want %v", got, f.DenyCut, want)
	}
	f = &Facts{resolver: newResolver(), Files: map[string]FileInfo{}}
	p.Deny = nil
	f.walkDenied(p)
	if len(f.Files) != 0 || f.Denied != nil {
		t.Errorf("the walk ran without deny globs: %v", f.Files)
	}
}
