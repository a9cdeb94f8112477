package progindex

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIndexLockReplacesPlanted plants, in place of the index lock, what
// another user (or an older corral) could leave there; lockIndex must
// make its own private lock instead of opening or following it.
func TestIndexLockReplacesPlanted(t *testing.T) {
	plants := map[string]func(t *testing.T, lock, other string){
		"0644 file": func(t *testing.T, lock, other string) { os.WriteFile(lock, nil, 0o644) },
		"symlink":   func(t *testing.T, lock, other string) { os.Symlink(other, lock) },
		"hard link": func(t *testing.T, lock, other string) { os.Link(other, lock) },
		"fifo":      func(t *testing.T, lock, other string) { unix.Mkfifo(lock, 0o600) },
		"folder":    func(t *testing.T, lock, other string) { os.Mkdir(lock, 0o700) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			other := filepath.Join(dir, "other")
			os.WriteFile(other, []byte("theirs"), 0o600)
			file := filepath.Join(dir, "programs")
			plant(t, file+".lock", other)
			unlock, err := lockIndex(file, nil)
			if name == "folder" {
				if err == nil {
					unlock()
					t.Fatal("a folder in the lock's place was taken as the lock")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			var st unix.Stat_t
			if err := unix.Lstat(file+".lock", &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o777 != 0o600 || st.Nlink != 1 || int(st.Uid) != os.Geteuid() {
				t.Errorf("lock is mode %o with %d links, owner %d; want a private 0600 file", st.Mode, st.Nlink, st.Uid)
			}
			if data, _ := os.ReadFile(other); string(data) != "theirs" {
				t.Errorf("the planted link's target was changed: %q", data)
			}
		})
	}
}

// TestIndexLockWaitEnds holds the lock from another open file and checks
// that closing stop ends the wait at once, and that without it the wait
// gives up after indexLockWait.
func TestIndexLockWaitEnds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "programs")
	unlock, err := lockIndex(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	stop := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(stop) })
	start := time.Now()
	if _, err := lockIndex(file, stop); err != errStopped {
		t.Errorf("closing stop: %v, want errStopped", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("closing stop ended the wait after %v", took)
	}
	if testing.Short() {
		return
	}
	start = time.Now()
	if _, err := lockIndex(file, nil); err != errLockBusy {
		t.Errorf("held lock: %v, want errLockBusy", err)
	}
	if took := time.Since(start); took < indexLockWait || took > indexLockWait+time.Second {
		t.Errorf("the wait for a held lock took %v, want about %v", took, indexLockWait)
	}
}

// TestWalkStops: a closed stop ends the walk, which reports itself
// incomplete, and loadProgramIndex saves nothing and marks the index
// Stopped (no plan may use it).
func TestWalkStops(t *testing.T) {
	root, _ := programTree(t)
	stop := make(chan struct{})
	close(stop)
	if _, complete := walkPrograms([]string{root}, stop); complete {
		t.Error("a stopped walk says it is complete")
	}
	file := filepath.Join(t.TempDir(), "programs")
	idx := loadProgramIndex([]string{root}, []string{file}, time.Now(), stop)
	if !idx.Stopped {
		t.Errorf("index %+v is not marked stopped", idx)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a stopped walk was saved")
	}
}
