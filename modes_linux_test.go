//go:build linux

package corral

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox"
)

// TestSweepTakesSetIDBitsOff: a set-id file made or linked during the run
// (after since) loses its bits, one from before keeps them, and an
// executable's other bits stay.
func TestSweepTakesSetIDBitsOff(t *testing.T) {
	root := t.TempDir()
	old := filepath.Join(root, "old")
	os.WriteFile(old, []byte("x"), 0o755)
	unix.Chmod(old, 0o4755)
	time.Sleep(20 * time.Millisecond) // past the coarse clock's tick
	since := sweepStart()
	os.Mkdir(filepath.Join(root, "d"), 0o755)
	made := filepath.Join(root, "d", "made")
	os.WriteFile(made, []byte("x"), 0o750)
	unix.Chmod(made, 0o6750)
	s := sweepGit([]string{root}, nil, "", since, false)
	if st := lmode(t, made); st != 0o750 {
		t.Errorf("a set-id file made during the run has mode %o, want 750", st)
	}
	if st := lmode(t, old); st != 0o4755 {
		t.Errorf("a set-id file from before the run has mode %o, want 4755", st)
	}
	if len(s.Reset) != 1 || s.Reset[0].Path != made || s.Reset[0].From != "6750" || s.Reset[0].To != "750" {
		t.Errorf("reset: %+v", s.Reset)
	}
}

// TestRestoreModes: a recorded folder that gained group or other write
// loses exactly what it gained; one replaced since (another inode) is left
// alone; one that was group-writable at launch stays so.
func TestRestoreModes(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"top", "shared", "replaced"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	unix.Chmod(filepath.Join(root, "shared"), 0o775)
	plan := &sandbox.Plan{WriteRoots: []string{filepath.Join(root, "top")}, Protected: []string{filepath.Join(root, "shared", "config"), filepath.Join(root, "replaced", "hooks")}}
	recs := recordModes(plan, "")
	if len(recs) != 3 {
		t.Fatalf("recorded %+v", recs)
	}
	unix.Chmod(filepath.Join(root, "top"), 0o777)
	unix.Chmod(filepath.Join(root, "shared"), 0o777)
	os.Rename(filepath.Join(root, "replaced"), filepath.Join(root, "gone"))
	os.Mkdir(filepath.Join(root, "replaced"), 0o777)
	unix.Chmod(filepath.Join(root, "replaced"), 0o777)
	reset, errs := restoreModes(recs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for d, want := range map[string]uint32{"top": 0o755, "shared": 0o775, "replaced": 0o777} {
		if m := lmode(t, filepath.Join(root, d)); m != want {
			t.Errorf("%s: mode %o, want %o", d, m, want)
		}
	}
	if len(reset) != 2 {
		t.Errorf("reset: %+v", reset)
	}
}

func lmode(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}
