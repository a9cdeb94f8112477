package stage

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// replaces what the init would not read.
func TestSaveMountCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mounts")
	file := filepath.Join(dir, "2a")
	block := []byte("m\x03\x00\x00\x00a\x00b")
	if err := SaveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	want := append(binary.LittleEndian.AppendUint64([]byte(mountCacheMagic), 42), block...)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("saved %q (%v), want %q", got, err, want)
	}
	st, _ := os.Stat(dir)
	fst, _ := os.Stat(file)
	if st.Mode().Perm() != 0o700 || fst.Mode().Perm() != 0o600 {
		t.Errorf("folder %v, file %v: want 0700 and 0600", st.Mode().Perm(), fst.Mode().Perm())
	}
	before, _ := os.Stat(file)
	if err := SaveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(file); !os.SameFile(before, after) {
		t.Errorf("an unchanged cache was written again")
	}
	os.Chmod(file, 0o622)
	if err := SaveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	if fst, _ := os.Stat(file); fst.Mode().Perm() != 0o600 {
		t.Errorf("a cache others can write was kept (%v)", fst.Mode().Perm())
	}
	os.Chmod(dir, 0o777)
	if err := SaveMountCache(file, 43, block); err == nil {
		t.Errorf("saved into a folder everybody can write")
	}
}
