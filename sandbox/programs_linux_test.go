package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// programTree makes a fake library root: a folder of programs, a folder
// of libraries (one executable), a folder with a non-executable ELF file
// and a script, and a folder whose only ELF program is a symlink.
func programTree(t *testing.T) (root string, want []string) {
	t.Helper()
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	put := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	put("tool-core/tool-helper", elf, 0o755)
	put("tool-core/README", []byte("docs"), 0o644)
	put("jdk/bin/java", elf, 0o755)
	put("jdk/lib/libjvm.so", elf, 0o755)
	put("x86_64-linux-gnu/libc.so.6", elf, 0o755)
	put("x86_64-linux-gnu/libfoo.so", elf, 0o755)
	put("data/blob.elf", elf, 0o644)
	put("data/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	put("deep/a/b/c/prog", elf, 0o700)
	if err := os.MkdirAll(filepath.Join(root, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "jdk/bin/java"), filepath.Join(root, "links/java")); err != nil {
		t.Fatal(err)
	}
	return root, []string{filepath.Join(root, "deep/a/b/c"), filepath.Join(root, "jdk/bin"), filepath.Join(root, "tool-core")}
}

func TestWalkPrograms(t *testing.T) {
	root, want := programTree(t)
	if got := walkPrograms([]string{root}); !slices.Equal(got, want) {
		t.Fatalf("walkPrograms found %q, want %q", got, want)
	}
}

func TestProgramIndexFile(t *testing.T) {
	root, want := programTree(t)
	roots := []string{root}
	file := filepath.Join(t.TempDir(), "cache", "programs")
	now := time.Now()

	first := loadProgramIndex(roots, nil, []string{file}, now)
	if first.Source != "walked" || first.Saved != file || !slices.Equal(first.Folders, want) {
		t.Fatalf("first load: %+v, want a walk saved to %s finding %q", first, file, want)
	}
	if again := loadProgramIndex(roots, nil, []string{file}, now); again.Source != file || !slices.Equal(again.Folders, want) {
		t.Fatalf("second load did not read the saved index: %+v", again)
	}

	// A program installed in a new folder below an existing one changes
	// the stamp of a folder directly in the root.
	elf, _ := os.ReadFile("/bin/true")
	if err := os.MkdirAll(filepath.Join(root, "jdk/newtool/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "jdk/newtool/bin/newtool"), elf, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := loadProgramIndex(roots, nil, []string{file}, now)
	if fresh.Source != "walked" || !slices.Contains(fresh.Folders, filepath.Join(root, "jdk/newtool/bin")) {
		t.Fatalf("a new program folder did not make corral walk again: %+v", fresh)
	}

	// Too old: walked again.
	if old := loadProgramIndex(roots, nil, []string{file}, now.Add(2*programIndexMaxAge)); old.Source != "walked" {
		t.Fatalf("an index older than %v was used: %+v", programIndexMaxAge, old)
	}
	// Other roots: walked again.
	if other := loadProgramIndex([]string{root, t.TempDir()}, nil, []string{file}, now); other.Source != "walked" {
		t.Fatalf("an index for other roots was used: %+v", other)
	}
}

func TestProgramIndexUntrusted(t *testing.T) {
	root, want := programTree(t)
	roots := []string{root}
	dir := t.TempDir()
	file := filepath.Join(dir, "programs")
	now := time.Now()
	if idx := loadProgramIndex(roots, nil, []string{file}, now); idx.Saved != file {
		t.Fatalf("not saved: %+v", idx)
	}

	// An index the sandbox could write (inside a writable root) is
	// neither read nor written.
	if idx := loadProgramIndex(roots, []string{dir}, []string{file}, now); idx.Source != "walked" || idx.Saved != "" {
		t.Fatalf("an index inside a writable root was used: %+v", idx)
	}

	// An emptied index that others could write is not trusted.
	data, _ := os.ReadFile(file)
	var kept []byte
	for _, line := range splitLines(data) {
		if len(line) < 7 || line[:7] != "folder " {
			kept = append(kept, line+"\n"...)
		}
	}
	if err := os.WriteFile(file, kept, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if idx := readOnly(t, roots, file, now); idx.Source == file {
		t.Fatalf("a world-writable index was used: %+v", idx)
	}
	// The same emptied file, not writable by others, is believed: the
	// trust is in who can write it.
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if idx := readOnly(t, roots, file, now); idx.Source != file || len(idx.Folders) != 0 {
		t.Fatalf("control: the emptied index was not read: %+v (want none of %q)", idx, want)
	}
	// A cut-short index is not used.
	if err := os.WriteFile(file, kept[:len(kept)-4], 0o644); err != nil {
		t.Fatal(err)
	}
	if idx := readOnly(t, roots, file, now); idx.Source == file {
		t.Fatalf("a cut-short index was used: %+v", idx)
	}
}

// readOnly loads the index without letting the load rewrite it.
func readOnly(t *testing.T, roots []string, file string, now time.Time) ProgramIndex {
	t.Helper()
	if folders, ok := readProgramIndex(file, roots, now); ok {
		return ProgramIndex{Folders: folders, Source: file}
	}
	return ProgramIndex{Source: "walked"}
}

func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, string(b[:i]))
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func TestIsLibraryName(t *testing.T) {
	for name, want := range map[string]bool{
		"libc.so.6": true, "libfoo.so": true, "ld-linux-x86-64.so.2": true,
		"git": false, "x.so-helper": false, "sonar": false, "a.sox": false,
	} {
		if got := isLibraryName(name); got != want {
			t.Errorf("isLibraryName(%q) = %v, want %v", name, got, want)
		}
	}
}

func BenchmarkProgramIndexStamps(b *testing.B) {
	stamps := takeStamps(codeRoots)
	for b.Loop() {
		stampsHold(stamps)
	}
}

func BenchmarkProgramIndexLoad(b *testing.B) {
	file := filepath.Join(b.TempDir(), "programs")
	roots := slices.Clone(codeRoots)
	loadProgramIndex(roots, nil, []string{file}, time.Now())
	for b.Loop() {
		if idx := loadProgramIndex(roots, nil, []string{file}, time.Now()); idx.Source != file {
			b.Fatalf("walked: %+v", idx)
		}
	}
}
