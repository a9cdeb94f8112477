package nofollow

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveTree removes a tree the command made hard to remove (folders
// chmod 000 and 200, deep) and never follows a symlink in it out of it.
func TestRemoveTree(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(outside, "keep"), 0o755)
	os.WriteFile(filepath.Join(outside, "keep", "f"), []byte("x"), 0o644)
	tree := filepath.Join(base, "tree")
	deep := filepath.Join(tree, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(tree, "a", "link"))
	os.Symlink(filepath.Join(outside, "keep"), filepath.Join(deep, "link2"))
	os.Chmod(filepath.Join(tree, "a", "b"), 0o200)
	os.Chmod(deep, 0)
	os.Chmod(filepath.Join(outside, "keep"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(outside, "keep"), 0o755) }) // for TempDir's removal, as a user
	fd, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := RemoveTree(fd, "tree"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep", "f")); err != nil {
		t.Errorf("a file outside the tree went: %v", err)
	}
	var st unix.Stat_t
	if unix.Stat(filepath.Join(outside, "keep"), &st) != nil || st.Mode&0o777 != 0o555 {
		t.Errorf("the mode of a folder outside the tree changed: %o", st.Mode&0o777)
	}
	if err := RemoveTree(fd, "missing"); err != nil {
		t.Errorf("a missing name: %v", err)
	}
}

// TestOpenDirRefusesSymlinks: a symlink anywhere on the way fails.
func TestOpenDirRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, "real", "sub"), 0o755)
	os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link"))
	if fd, err := OpenDir(filepath.Join(base, "real", "sub")); err != nil {
		t.Fatal(err)
	} else {
		unix.Close(fd)
	}
	for _, p := range []string{filepath.Join(base, "link", "sub"), filepath.Join(base, "link"), base + "/real/../real"} {
		if fd, err := OpenDir(p); err == nil {
			unix.Close(fd)
			t.Errorf("%s was opened", p)
		}
	}
}
