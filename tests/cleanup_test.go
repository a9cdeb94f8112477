//go:build linux

package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Issue 27 item 6: corral's own cleanup never acts on a path a sandbox
// can change. The landlock tier's TMPDIR is a folder corral names, records
// (package unfinished) and removes through descriptors; folders that look
// like one (corral-run-PID-*) but that corral did not record are never
// touched, however dead their pid.

// TestCleanupTrustsOnlyItsOwnTmp puts corral's TMPDIR inside the work dir,
// where a first sandbox plants a folder named as a dead run's TMPDIR,
// holding a folder it keeps swapping for a symlink to a host folder; a
// second run in the landlock tier starts meanwhile. The planted folder is
// left alone (corral removes only the TMPDIRs it recorded), and the host
// folder keeps its mode.
func TestCleanupTrustsOnlyItsOwnTmp(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		requireLandlockTier(t)
		attack(t, "persistence", "have corral's TMPDIR cleanup chmod a host folder through a planted run folder")
		work := newDir(t, u, "work")
		target := newDir(t, u, "target")
		os.Chmod(target, 0o750)
		tmp := filepath.Join(work, "tmp")
		os.Mkdir(tmp, 0o700)
		own(t, u, tmp)
		env := append(defaultEnv(), "TMPDIR="+tmp)
		planted := filepath.Join(tmp, "corral-run-999999-planted")
		swap := fmt.Sprintf(`mkdir -p %[1]s/d/e && chmod 000 %[1]s/d/e && touch %[2]s/ready
while [ ! -e %[2]s/stop ]; do mv %[1]s/d %[1]s/x; ln -s %[3]s %[1]s/d; rm %[1]s/d; mv %[1]s/x %[1]s/d; done`, planted, work, target)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		bg := u.command(ctx, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--", "sh", "-c", swap}, dir: work, env: env})
		if err := bg.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			// Ended, not killed: a killed corral's record would be
			// finished by another test's run.
			writeFile(t, filepath.Join(work, "stop"), "", 0o644)
			bg.Wait()
		}()
		if !waitFor(30*time.Second, func() bool { return exists(filepath.Join(work, "ready")) }) {
			t.Fatal("the first sandbox did not plant its folder")
		}
		for i := 0; i < 10; i++ {
			r := u.run(t, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--", "true"}, dir: work, env: env, keepRefusal: true})
			if r.code != 0 {
				t.Fatalf("a run beside the first failed:\n%s", r)
			}
		}
		if m := modeOf(t, target); m != 0o750 {
			t.Errorf("corral's cleanup changed the mode of a host folder outside every grant: %o, want 750", m)
		}
		if _, err := os.Lstat(planted); err != nil {
			t.Errorf("corral removed a folder it did not make (named as a dead run's TMPDIR): %v", err)
		}
	})
}

// TestCleanupOwnTmp: what a command leaves in its own TMPDIR (folders it
// made unreadable, symlinks to host folders and files) goes with it, and
// nothing a symlink names is changed or removed.
func TestCleanupOwnTmp(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		requireLandlockTier(t)
		attack(t, "persistence", "have the TMPDIR's removal follow a symlink out of it")
		work := newDir(t, u, "work")
		outside := newDir(t, u, "outside")
		os.Chmod(outside, 0o750)
		writeFile(t, filepath.Join(outside, "keep"), "x", 0o640)
		own(t, u, outside)
		script := fmt.Sprintf(`echo "$TMPDIR" > tmpdir
mkdir -p "$TMPDIR/a/b/c" && touch "$TMPDIR/a/b/c/f"
ln -s %[1]s "$TMPDIR/a/link"; ln -s %[1]s/keep "$TMPDIR/a/b/keep"
chmod 000 "$TMPDIR/a/b/c"; chmod 100 "$TMPDIR/a/b"`, outside)
		r := u.run(t, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--", "sh", "-c", script}, dir: work, keepRefusal: true})
		if r.code != 0 {
			t.Fatalf("the run failed:\n%s", r)
		}
		dir := strings.TrimSpace(readFile(t, filepath.Join(work, "tmpdir")))
		if dir == "" || exists(dir) {
			t.Errorf("the run's TMPDIR %q is still there", dir)
		}
		if m := modeOf(t, outside); m != 0o750 {
			t.Errorf("the removal changed a host folder a symlink named: %o", m)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(outside, "keep"), &st); err != nil || st.Mode&0o777 != 0o640 {
			t.Errorf("the removal changed or removed a host file a symlink named (%v, %o)", err, st.Mode&0o777)
		}
		if strings.Contains(r.stderr, "removing the run's TMPDIR") {
			t.Errorf("corral could not remove the TMPDIR:\n%s", r)
		}
	})
}
