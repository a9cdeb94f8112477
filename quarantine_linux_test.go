package corral

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMoveAsideAt: the name is NAME.corral-quarantined-RANDOM whatever
// names are taken, a name too long for the suffix gets a short one, and
// "." or ".." is never removed.
func TestMoveAsideAt(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	os.WriteFile(filepath.Join(dir, "config"), []byte("x"), 0o644)
	for _, n := range []string{"config.corral-quarantined", "config.corral-quarantined.2", "config.corral-quarantined-"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	to, removed, err := moveAsideAt(fd, dir, "config", os.Geteuid())
	if err != nil || removed || !strings.HasPrefix(to, "config.corral-quarantined-") || len(to) != len("config.corral-quarantined-")+12 {
		t.Errorf("moveAsideAt(config) = %q, %v, %v", to, removed, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "config")); err == nil {
		t.Errorf("config is still there")
	}
	long := strings.Repeat("x", 250)
	os.WriteFile(filepath.Join(dir, long), nil, 0o644)
	if to, removed, err := moveAsideAt(fd, dir, long, os.Geteuid()); err != nil || removed || !strings.HasPrefix(to, "corral-quarantined-") {
		t.Errorf("moveAsideAt(long name) = %q, %v, %v", to, removed, err)
	}
	for _, n := range []string{".", ".."} {
		if _, removed, err := moveAsideAt(fd, dir, n, os.Geteuid()); err == nil || removed {
			t.Errorf("moveAsideAt(%q): removed %v, err %v", n, removed, err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the folder is gone: %v", err)
	}
}
