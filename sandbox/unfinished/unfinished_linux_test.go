package unfinished

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDir: root's records are in /run/corral; a user's in its own
// XDG_RUNTIME_DIR below /run, else in /tmp/corral-UID, never in a folder
// another user could write or a relative path.
func TestDir(t *testing.T) {
	const host = "         0          0 4294967295\n"
	if got := dirFor(0, "/home/x", host); got != "/run/corral/runs" {
		t.Errorf("root: %s", got)
	}
	if got := dirFor(0, "", "         0      12345          1\n"); got != "/tmp/corral-12345/runs" {
		t.Errorf("uid 0 of a user namespace mapped from 12345: %s", got)
	}
	if got := dirFor(0, "", ""); got != "/tmp/corral-0/runs" {
		t.Errorf("no uid_map: %s", got)
	}
	for _, xdg := range []string{"", "relative", "/tmp", "/nonexistent-run"} {
		if got := dirFor(1000, xdg, host); got != "/tmp/corral-1000/runs" {
			t.Errorf("XDG_RUNTIME_DIR=%q: %s", xdg, got)
		}
	}
}

// TestRecords: a record is locked while its writer holds it (Stale nil
// for everyone else, another descriptor of the same process included);
// once released it is stale, taken by one lister at a time, and Done
// removes it. A file left half-written (no suffix) is removed.
func TestRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	os.Mkdir(dir, 0o700)
	s := openAt(t, dir)
	defer s.Close()
	rec, err := s.Create([]byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "123-half")
	os.WriteFile(half, []byte("{"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(half, old, old)
	os.WriteFile(filepath.Join(dir, "124-new"), []byte("{"), 0o600)
	entries, err := s.List()
	if err != nil || len(entries) != 1 || entries[0].Stale != nil || string(entries[0].Data) != `{"a":1}` {
		t.Fatalf("while its run holds it: %+v %v", entries, err)
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("an old half-written record is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "124-new")); err != nil {
		t.Errorf("a record another corral may be writing was removed: %v", err)
	}
	rec.Release()
	entries, _ = s.List()
	if len(entries) != 1 || entries[0].Stale == nil {
		t.Fatalf("once released: %+v", entries)
	}
	again, _ := s.List()
	if len(again) != 1 || again[0].Stale != nil {
		t.Errorf("a stale record another lister holds is taken twice: %+v", again)
	}
	if err := entries[0].Stale.Done(); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.List(); len(left) != 0 {
		t.Errorf("after Done: %+v", left)
	}
}

// openAt is Open for a folder of the test's own.
func openAt(t *testing.T, dir string) *Store {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := dupFd(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return &Store{dir: dir, fd: fd}
}

// TestRecordsConcurrent: runs writing their records while others list
// (and would finish stale ones) never see a record of a live run as
// stale, and every record is written.
func TestRecordsConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	os.Mkdir(dir, 0o700)
	s := openAt(t, dir)
	defer s.Close()
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 50; j++ {
				r, err := s.Create([]byte(`{}`))
				if err != nil {
					done <- err
					return
				}
				entries, err := s.List()
				if err != nil {
					done <- err
					return
				}
				for _, e := range entries {
					if e.Stale != nil {
						e.Stale.Release()
						if e.Name == r.Name() {
							done <- os.ErrInvalid
							return
						}
					}
				}
				r.Done()
			}
			done <- nil
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
