//go:build linux

package tests

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cross-user denial of service through corral's own files in /run/corral:
// the program index lock (/run/corral/programs.lock) is taken by every run
// with an exec allowlist whose index must be walked again. Another user
// must not be able to hold it or plant one, a lock held too long is passed
// by, and SIGINT or SIGTERM end a run that waits for it.
//
// Root's index is /run/corral/programs, shared with every root run on the
// machine (no option moves it): these tests remove it to make the next
// run walk (and lock), which costs other runs one walk, and they run one
// after another. The unprivileged user's lock is in its own
// XDG_RUNTIME_DIR (0700), which no other user can enter.

const (
	indexFile = "/run/corral/programs"
	indexLock = indexFile + ".lock"
)

// dosSkill is a skill with an exec allowlist (the runs that use the
// program index).
func dosSkill(t *testing.T) (work string, skills []string) {
	t.Helper()
	work = newDir(t, asSelf, "work")
	return work, []string{writeSkill(t, newDir(t, asSelf, "skills"), "dos", "  exec: [sh, cat]\n")}
}

// walkingRun runs `corral exec` as root after removing the index, so the
// run walks and takes the lock, and retries when another root run on the
// machine saved an index in between (the trace then says it was read).
func walkingRun(t *testing.T, work string, skills []string, timeout time.Duration) (result, string) {
	t.Helper()
	args := []string{"exec", "--work-dir", work}
	for _, s := range skills {
		args = append(args, "--skill", s)
	}
	args = append(args, "--", "sh", "-c", "echo RAN")
	for try := 0; ; try++ {
		if err := os.Remove(indexFile); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		r := asSelf.run(t, runOpts{args: args, dir: work, env: append(defaultEnv(), "CORRAL_TRACE=1"), timeout: timeout})
		src := indexSource(r.stderr)
		if !strings.HasPrefix(src, "/") || try == 4 {
			return r, src
		}
	}
}

// indexSource is what the trace says of the program index.
func indexSource(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if _, s, ok := strings.Cut(l, "corral exec: program index: "); ok {
			s, _, _ = strings.Cut(s, " (at ")
			return s
		}
	}
	return ""
}

// holdLock runs flock(1) on path as uid (0 or nobody) until the test
// ends; it returns false when the lock could not be taken (not opened).
func holdLock(t *testing.T, path string, asNobody bool) bool {
	t.Helper()
	// -o: the lock stays with flock, not the shell; its process group
	// is killed at the end.
	argv := []string{"flock", "-n", "-o", path, "-c", "echo HELD; exec sleep 300"}
	if asNobody {
		argv = append([]string{setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	sc := bufio.NewScanner(out)
	return sc.Scan() && sc.Text() == "HELD"
}

// privateLock checks from the host that the lock is a plain 0600 file of
// root's with one link.
func privateLock(t *testing.T) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(indexLock, &st); err != nil {
		t.Errorf("%s: %v", indexLock, err)
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o077 != 0 || st.Nlink != 1 {
		t.Errorf("%s is mode %o, owner %d, %d links; want a 0600 file of root's with one link", indexLock, st.Mode, st.Uid, st.Nlink)
	}
}

// requireRootIndex skips unless the tests run as root with a sandbox.
func requireRootIndex(t *testing.T) {
	t.Helper()
	if !isRoot {
		t.Skip("root's program index lock is in /run/corral; the unprivileged user's is in its own XDG_RUNTIME_DIR")
	}
	if setpriv == "" {
		t.Skip("setpriv is missing")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) is missing")
	}
	requireSandbox(t)
	if err := os.MkdirAll(filepath.Dir(indexFile), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestDosIndexLockPlanted plants what another user could hold in place of
// the lock: the 0644 lock older corrals made (which any user can open
// read-only, enough for flock), one owned by nobody, a symlink to a file
// of nobody's, a hard link to one, and a FIFO. Nobody holds it; root's run
// must not wait for nobody, must replace it with its own private lock and
// save its index.
func TestDosIndexLockPlanted(t *testing.T) {
	requireRootIndex(t)
	plants := []struct {
		name  string
		plant func(t *testing.T, theirs string)
	}{
		{"a 0644 lock of root's", func(t *testing.T, theirs string) {
			writeFile(t, indexLock, "", 0o644)
		}},
		{"a 0666 lock of nobody's", func(t *testing.T, theirs string) {
			writeFile(t, indexLock, "", 0o666)
			os.Chown(indexLock, nobody, nobody)
		}},
		{"a symlink to a file of nobody's", func(t *testing.T, theirs string) {
			if err := os.Symlink(theirs, indexLock); err != nil {
				t.Fatal(err)
			}
		}},
		{"a hard link to a file of nobody's", func(t *testing.T, theirs string) {
			if err := os.Link(theirs, indexLock); err != nil {
				t.Skipf("cannot hard-link across file systems here: %v", err)
			}
		}},
		{"a FIFO", func(t *testing.T, theirs string) {
			if err := unix.Mkfifo(indexLock, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			attack(t, "dos", "hold a planted program index lock: "+p.name)
			work, skills := dosSkill(t)
			theirs := filepath.Join(newDir(t, asNobody, "theirs"), "lock")
			writeFile(t, theirs, "", 0o666)
			own(t, asNobody, theirs)
			os.Remove(indexLock)
			p.plant(t, theirs)
			t.Cleanup(func() {
				if st, err := os.Lstat(indexLock); err == nil && !st.Mode().IsRegular() {
					os.Remove(indexLock)
				}
			})
			if p.name != "a FIFO" && !holdLock(t, indexLock, true) {
				t.Fatal("nobody could not take the planted lock: the attack is not set up")
			}
			r, src := walkingRun(t, work, skills, 40*time.Second)
			if r.code != 0 || !strings.Contains(r.stdout, "RAN") {
				t.Fatalf("the run failed (index %q):\n%s", src, r)
			}
			if src != "walked" {
				t.Errorf("the program index is %q, want walked and saved", src)
			}
			privateLock(t)
			if _, err := os.Stat(indexFile); err != nil {
				t.Errorf("the walk was not saved: %v", err)
			}
		})
	}
}

// TestDosIndexLockOpen checks that after a root run another user can
// neither open the lock (flock needs only a read-only fd) nor make one.
func TestDosIndexLockOpen(t *testing.T) {
	requireRootIndex(t)
	attack(t, "dos", "open and hold root's program index lock as another user")
	work, skills := dosSkill(t)
	os.Remove(indexLock)
	if r, _ := walkingRun(t, work, skills, 60*time.Second); r.code != 0 {
		t.Fatalf("the run failed:\n%s", r)
	}
	privateLock(t)
	if holdLock(t, indexLock, true) {
		t.Errorf("nobody took root's program index lock")
	}
}

// TestDosIndexLockHeld: root's lock is held by a stuck root process (a
// corral stopped mid-walk). The run waits a bounded time, walks without
// saving and says so in its trace.
func TestDosIndexLockHeld(t *testing.T) {
	requireRootIndex(t)
	attack(t, "dos", "hold the program index lock for ever")
	work, skills := dosSkill(t)
	if r, _ := walkingRun(t, work, skills, 60*time.Second); r.code != 0 {
		t.Fatalf("the run failed:\n%s", r)
	}
	if !holdLock(t, indexLock, false) {
		t.Fatal("could not take the lock")
	}
	r, src := walkingRun(t, work, skills, 40*time.Second)
	if r.code != 0 || !strings.Contains(r.stdout, "RAN") {
		t.Fatalf("the run failed (index %q):\n%s", src, r)
	}
	if !strings.Contains(src, "was held longer than") {
		t.Errorf("the trace does not say the lock was passed by: index %q\n%s", src, r)
	}
}

// TestDosIndexLockSignal sends SIGINT, SIGTERM and SIGHUP to a run
// waiting for a held lock: it must end at once with 128+N, running
// nothing.
func TestDosIndexLockSignal(t *testing.T) {
	requireRootIndex(t)
	work, skills := dosSkill(t)
	if r, _ := walkingRun(t, work, skills, 60*time.Second); r.code != 0 {
		t.Fatalf("the run failed:\n%s", r)
	}
	if !holdLock(t, indexLock, false) {
		t.Fatal("could not take the lock")
	}
	for _, mode := range initModes {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			t.Run(mode.name+"/"+sig.String(), func(t *testing.T) {
				attack(t, "dos", "keep corral waiting on a lock past "+sig.String())
				marker := filepath.Join(work, token("ran"))
				os.Remove(indexFile)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				args := []string{"exec", "--work-dir", work}
				for _, s := range skills {
					args = append(args, "--skill", s)
				}
				args = append(args, "--", "sh", "-c", "echo > "+marker)
				cmd := asSelf.command(ctx, runOpts{args: args, dir: work, env: mode.env("CORRAL_TRACE=1")})
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second) // well inside the 3 s wait
				if _, err := os.Stat(indexFile); err == nil {
					// Another root run saved an index meanwhile: this
					// run may never have waited.
					cmd.Process.Kill()
					cmd.Wait()
					t.Skip("another root run saved the program index during the test")
				}
				sent := time.Now()
				cmd.Process.Signal(sig)
				err := cmd.Wait()
				took := time.Since(sent)
				code := cmd.ProcessState.ExitCode()
				if err != nil && code < 0 {
					t.Fatalf("corral did not exit: %v\n%s", err, stderr.String())
				}
				if code != 128+int(sig) {
					t.Errorf("exit %d after %v, want %d\n%s", code, sig, 128+int(sig), stderr.String())
				}
				if took > 1500*time.Millisecond {
					t.Errorf("corral took %v to end after %v (it waited for the lock)", took, sig)
				}
				if exists(marker) {
					t.Errorf("the command ran after %v", sig)
				}
			})
		}
	}
}

// TestDosIndexWalkSignal sends SIGINT while a run walks the code folders
// for the program index (0.3-3 s here): corral must stop probing at once,
// end with 130, run nothing, and save no half-walked index. The trace's
// "probed" time (microseconds modulo 10 s) tells whether the signal came
// during the probe.
func TestDosIndexWalkSignal(t *testing.T) {
	requireRootIndex(t)
	attack(t, "dos", "keep corral walking past SIGINT")
	work, skills := dosSkill(t)
	for try := 0; ; try++ {
		marker := filepath.Join(work, token("ran"))
		os.Remove(indexFile)
		args := []string{"exec", "--work-dir", work}
		for _, s := range skills {
			args = append(args, "--skill", s)
		}
		args = append(args, "--", "sh", "-c", "echo > "+marker)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := asSelf.command(ctx, runOpts{args: args, dir: work, env: append(defaultEnv(), "CORRAL_TRACE=1")})
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
		sent := time.Now()
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		cancel()
		code := cmd.ProcessState.ExitCode()
		src := indexSource(stderr.String())
		probed, ok := traceTime(stderr.String(), "probed")
		after := time.Duration((probed-sent.UnixMicro()%1e7+1e7)%1e7) * time.Microsecond
		// Another root run saved an index meanwhile (this one never
		// walked), or the probe was over before the signal came.
		if strings.HasPrefix(src, "/") || !ok || after > 5*time.Second {
			if try < 5 {
				continue
			}
			t.Skipf("the signal never came during a walk (index %q, probed %v after it)", src, after)
		}
		t.Logf("probed %v after SIGINT (index %q)", after, src)
		// A walk checks for the signal between folders: one that saved
		// its index ("walked") well after the signal went on past it.
		if after > 100*time.Millisecond || src == "walked" && after > 20*time.Millisecond {
			t.Errorf("corral went on probing for %v after SIGINT (index %q)", after, src)
		}
		if code != 130 {
			t.Errorf("exit %d after SIGINT, want 130\n%s", code, stderr.String())
		}
		if exists(marker) {
			t.Error("the command ran after SIGINT")
		}
		if data, err := os.ReadFile(indexFile); err == nil && !strings.HasSuffix(string(data), "end\n") {
			t.Errorf("a half-walked index was saved")
		}
		return
	}
}

// traceTime is the "(at N)" time of corral's trace step.
func traceTime(stderr, step string) (int64, bool) {
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "corral exec: "+step+" "); ok {
			_, at, _ := strings.Cut(rest, "(at ")
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(at), ")"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
