package progindex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	put("tool-core/plugins/libplug.so", elf, 0o644)
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
	idx, _ := walkPrograms([]string{root}, nil)
	if !slices.Equal(idx.Folders, want) {
		t.Fatalf("walkPrograms found %q, want %q", idx.Folders, want)
	}
	// Plugins below a folder of programs are listed; jdk/lib and
	// x86_64-linux-gnu are not below one.
	if want := []string{filepath.Join(root, "tool-core/plugins")}; !slices.Equal(idx.Libraries, want) {
		t.Fatalf("libraries below program folders: %q, want %q", idx.Libraries, want)
	}
}

func TestProgramIndexFile(t *testing.T) {
	root, want := programTree(t)
	roots := []string{root}
	file := filepath.Join(t.TempDir(), "cache", "programs")
	now := time.Now()

	first := loadProgramIndex(roots, []string{file}, now, nil)
	if first.Source != "walked" || first.Saved != file || !slices.Equal(first.Folders, want) {
		t.Fatalf("first load: %+v, want a walk saved to %s finding %q", first, file, want)
	}
	if again := loadProgramIndex(roots, []string{file}, now, nil); again.Source != file || !slices.Equal(again.Folders, want) || !slices.Equal(again.Libraries, first.Libraries) {
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
	fresh := loadProgramIndex(roots, []string{file}, now, nil)
	if fresh.Source != "walked" || !slices.Contains(fresh.Folders, filepath.Join(root, "jdk/newtool/bin")) {
		t.Fatalf("a new program folder did not make corral walk again: %+v", fresh)
	}

	// Too old: walked again.
	if old := loadProgramIndex(roots, []string{file}, now.Add(2*programIndexMaxAge), nil); old.Source != "walked" {
		t.Fatalf("an index older than %v was used: %+v", programIndexMaxAge, old)
	}
	// Other roots: walked again.
	if other := loadProgramIndex([]string{root, t.TempDir()}, []string{file}, now, nil); other.Source != "walked" {
		t.Fatalf("an index for other roots was used: %+v", other)
	}
}

func TestProgramIndexUntrusted(t *testing.T) {
	root, want := programTree(t)
	roots := []string{root}
	dir := t.TempDir()
	file := filepath.Join(dir, "programs")
	now := time.Now()
	if idx := loadProgramIndex(roots, []string{file}, now, nil); idx.Saved != file {
		t.Fatalf("not saved: %+v", idx)
	}

	// An emptied index that others could write is not trusted.
	kept := rewriteWithout(t, file, "folder ", 0o666)
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
func readOnly(t *testing.T, roots []string, file string, now time.Time) Index {
	t.Helper()
	if idx, ok := readProgramIndex(file, roots, now); ok {
		return idx
	}
	return Index{Source: "walked"}
}

// rewriteWithout rewrites the index file without the lines that start
// with prefix, and returns what it wrote.
func rewriteWithout(t *testing.T, file, prefix string, mode os.FileMode) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasPrefix(line, prefix) {
			kept.WriteString(line)
		}
	}
	if err := os.WriteFile(file, []byte(kept.String()), mode); err != nil {
		t.Fatal(err)
	}
	return []byte(kept.String())
}

func TestIsLibraryName(t *testing.T) {
	for name, want := range map[string]bool{
		"libc.so.6": true, "libfoo.so": true, "ld-linux-x86-64.so.2": true,
		"git": false, "x.so-helper": false, "sonar": false, "a.sox": false,
	} {
		if got := IsLibraryName(name); got != want {
			t.Errorf("IsLibraryName(%q) = %v, want %v", name, got, want)
		}
	}
}

// benchRoots are the sandbox's code roots (codeRoots in package sandbox).
var benchRoots = []string{"/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/local/lib"}

func BenchmarkProgramIndexStamps(b *testing.B) {
	stamps := takeStamps(benchRoots)
	for b.Loop() {
		stampsHold(stamps)
	}
}

func BenchmarkProgramIndexLoad(b *testing.B) {
	file := filepath.Join(b.TempDir(), "programs")
	roots := slices.Clone(benchRoots)
	loadProgramIndex(roots, []string{file}, time.Now(), nil)
	for b.Loop() {
		if idx := loadProgramIndex(roots, []string{file}, time.Now(), nil); idx.Source != file {
			b.Fatalf("walked: %+v", idx)
		}
	}
}

// TestProgramIndexFileFormat: folder names with newlines and spaces
// survive the file, and an index without a stamp for every root is not
// used.
func TestProgramIndexFileFormat(t *testing.T) {
	root, _ := programTree(t)
	elf, _ := os.ReadFile("/bin/true")
	for _, dir := range []string{"a\nend", "with space", "q\"uote"} {
		if err := os.MkdirAll(filepath.Join(root, "odd", dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "odd", dir, "prog"), elf, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "zz/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "zz/bin/prog"), elf, 0o755); err != nil {
		t.Fatal(err)
	}
	roots := []string{root}
	file := filepath.Join(t.TempDir(), "programs")
	now := time.Now()
	first := loadProgramIndex(roots, []string{file}, now, nil)
	again := readOnly(t, roots, file, now)
	if again.Source != file || !slices.Equal(again.Folders, first.Folders) || !slices.Contains(again.Folders, filepath.Join(root, "zz/bin")) {
		t.Fatalf("read back %q, walked %q", again.Folders, first.Folders)
	}

	rewriteWithout(t, file, "stamp ", 0o644)
	if idx := readOnly(t, roots, file, now); idx.Source == file {
		t.Fatalf("an index without stamps was used: %+v", idx)
	}
}

// TestProgramIndexFilesUnderRun: the index files corral uses are in /run,
// which a sandbox sees only through a grant inside it, and a write grant
// covering them is refused.
func TestProgramIndexFilesUnderRun(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/", "/run", "relative"} {
		if files := programIndexFilesFor(1000, dir); len(files) != 1 || files[0] != "/run/corral/programs" {
			t.Errorf("XDG_RUNTIME_DIR=%s: index files %q", dir, files)
		}
	}
	if files := programIndexFilesFor(0, "/run/user/0"); len(files) != 1 {
		t.Errorf("root: index files %q, want only /run/corral/programs", files)
	}
	// A runtime folder inside /run is used (made here, owned by the
	// caller, as /run/user/UID is).
	dir, err := os.MkdirTemp("/run", "corral-test-")
	if err != nil {
		t.Skipf("cannot make a folder in /run to play XDG_RUNTIME_DIR: %v", err)
	}
	defer os.RemoveAll(dir)
	if files := programIndexFilesFor(1000, dir); len(files) != 2 || files[1] != dir+"/corral/programs" {
		t.Errorf("XDG_RUNTIME_DIR=%s: index files %q", dir, files)
	}
}

// TestProgramIndexStaleWithoutSaving: an index past its age is used, with
// its stamps checked, when this user could not save a newer one (every run
// would walk otherwise); it is walked again when one can be saved.
func TestProgramIndexStaleWithoutSaving(t *testing.T) {
	root, want := programTree(t)
	roots := []string{root}
	file := filepath.Join(t.TempDir(), "programs")
	now := time.Now()
	loadProgramIndex(roots, []string{file}, now, nil)
	later := now.Add(2 * programIndexMaxAge)
	if idx := loadProgramIndex(roots, []string{file}, later, nil); idx.Source != "walked" {
		t.Fatalf("an old index was used though a new one could be saved: %+v", idx)
	}
	loadProgramIndex(roots, []string{file}, now, nil) // fresh again, built at now
	// The lock beside the index cannot be made: nowhere to save.
	os.Remove(file + ".lock")
	if err := os.Mkdir(file+".lock", 0o755); err != nil {
		t.Fatal(err)
	}
	idx := loadProgramIndex(roots, []string{file}, later, nil)
	if !strings.Contains(idx.Source, "older than") || !slices.Equal(idx.Folders, want) {
		t.Fatalf("with nowhere to save, the old index was not used: %+v", idx)
	}
}
