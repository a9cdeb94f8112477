//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	corral "corral.dev/corral"
)

// TestKilledCorralStillSweeps is issue 27 item 5: an orchestrator's
// timeout kills corral with SIGKILL (Python's subprocess.run(timeout=...)
// does) while the command has planted a nested repository whose
// core.fsmonitor the host's next git status would run. The run's record
// of its cleanup, written before the command started, lets the next
// corral exec finish that cleanup first; corral doctor lists it until
// then. Killed at several moments: while the command runs, while corral
// sweeps after it (held there by CORRAL_CLEANUP_PAUSE), while the init
// builds the root (the record written, nothing run), and while corral
// probes the host (no record yet: nothing to finish).
//
// Not parallel with the rest of the suite: a record left by a killed
// corral is finished by whichever corral exec of the same user runs next,
// which would put a warning on another test's stderr.
func TestKilledCorralStillSweeps(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		for _, m := range []struct {
			name    string
			env     string // a test window of the binary's
			planted bool   // the command planted its repository before the kill
		}{
			{"while the command runs", "", true},
			{"while corral sweeps", "CORRAL_CLEANUP_PAUSE=20s", true},
			{"while the init builds the root", "CORRAL_MOUNT_PAUSE=20s", false},
			{"while corral probes the host", "CORRAL_PROBE_PAUSE=20s", false},
		} {
			t.Run(m.name, func(t *testing.T) {
				if m.env == "CORRAL_MOUNT_PAUSE=20s" {
					namespacesOnly(t, "the init's mount window")
				}
				attack(t, "persistence", "plant a repository's fsmonitor and have corral killed "+m.name)
				killedRun(t, u, m.env, m.planted)
			})
		}
	})
}

// killedRun runs one kill: plant, SIGKILL corral, check what is left and
// what the next corral exec finishes.
func killedRun(t *testing.T, u user, window string, planted bool) {
	work := newDir(t, u, "work")
	marker := filepath.Join(newDir(t, u, "marker"), "ran")
	script := fmt.Sprintf(`git init -q deep/a/evil && git -C deep/a/evil config core.fsmonitor 'touch %s; false' && touch planted; sleep 60`, marker)
	if window == "CORRAL_CLEANUP_PAUSE=20s" {
		script = strings.TrimSuffix(script, "; sleep 60")
	}
	env := defaultEnv()
	if window != "" {
		env = append(env, window)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := u.command(ctx, runOpts{args: []string{"exec", "--work-dir", work, "--", "sh", "-c", script}, dir: work, env: env})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	switch {
	case planted:
		if !waitFor(30*time.Second, func() bool { return exists(filepath.Join(work, "planted")) }) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the command did not plant its repository")
		}
		time.Sleep(300 * time.Millisecond) // the command sleeps, or corral waits before its sweep
	default:
		time.Sleep(time.Second) // inside the window
	}
	cmd.Process.Kill()
	cmd.Wait()
	pid := cmd.Process.Pid
	ours := func(r corral.UnfinishedRun) bool { return r.WorkDir == work }
	runs := unfinishedRuns(t, u, work)
	if planted {
		if len(runs) != 1 || runs[0].Running || !ours(runs[0]) {
			t.Fatalf("corral doctor does not list the killed run as unfinished: %+v", runs)
		}
		if cfg, err := os.ReadFile(filepath.Join(work, "deep/a/evil/.git/config")); err != nil || !strings.Contains(string(cfg), "fsmonitor") {
			t.Fatalf("the attack did not take: no fsmonitor before the next run (%v)", err)
		}
	}
	if window == "CORRAL_PROBE_PAUSE=20s" && len(runs) != 0 {
		t.Errorf("a corral killed before its plan left a record: %+v", runs)
	}
	r := u.exec(t, work, nil, "true")
	if r.code != 0 {
		t.Fatalf("the next run failed:\n%s", r)
	}
	if planted && !strings.Contains(r.stderr, "finished the cleanup of an earlier run") {
		t.Errorf("the next run does not say it finished the killed run's cleanup:\n%s", r)
	}
	home := newDir(t, u, "home")
	if planted {
		hostGit(t, u, home, filepath.Join(work, "deep/a/evil"), "status")
		hostGit(t, u, home, filepath.Join(work, "deep/a"), "status")
	}
	if exists(marker) {
		t.Errorf("host git ran the fsmonitor the killed run's command planted:\n%s", r)
	}
	if left := unfinishedRuns(t, u, work); len(left) != 0 {
		t.Errorf("the record is still there after the next run: %+v", left)
	}
	if tmps, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("corral-run-%d-*", pid))); len(tmps) > 0 {
		t.Errorf("the killed run's TMPDIR is still there: %v", tmps)
	}
}

// unfinishedRuns are the records corral doctor --json lists for work.
func unfinishedRuns(t *testing.T, u user, work string) []corral.UnfinishedRun {
	t.Helper()
	r := u.run(t, runOpts{args: []string{"doctor", "--json"}, dir: work})
	var out struct {
		Unfinished struct {
			Runs  []corral.UnfinishedRun `json:"runs"`
			Error string                 `json:"error"`
		} `json:"unfinished_runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("corral doctor --json: %v\n%s", err, r)
	}
	if out.Unfinished.Error != "" {
		t.Fatalf("corral doctor cannot read the records: %s", out.Unfinished.Error)
	}
	var mine []corral.UnfinishedRun
	for _, run := range out.Unfinished.Runs {
		if run.WorkDir == work {
			mine = append(mine, run)
		}
	}
	return mine
}

// TestKilledCorralLeavesNoProcess: in the landlock tier (no PID
// namespace; as a user without cgroup delegation, no cgroup either) a
// command forks a crowd of orphans that wait to write a hook, and corral
// is killed. The shim kills them all as it dies, and the next corral
// waits for it (never killing it: killed midway it would hand the rest to
// the host's init) before it finishes the cleanup, so no process is left
// to write after it. (400 orphans keep the test inside the VMs' memory and
// emulated time; the attack that found the shim's slow loop used 13,000.)
// Not parallel, for the reason of the test above.
func TestKilledCorralLeavesNoProcess(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		requireLandlockTier(t)
		attack(t, "process", "outlive a killed corral in the landlock tier and write after its cleanup")
		work := newDir(t, u, "work")
		tag := token("crowd")
		// Each orphan waits on a FIFO, then writes the hook: only one
		// that is still alive after the next run can, and the test can
		// tell whether any is (an open for writing finds a reader).
		fifo := filepath.Join(work, "fifo")
		if err := unix.Mkfifo(fifo, 0o666); err != nil {
			t.Fatal(err)
		}
		own(t, u, fifo)
		script := fmt.Sprintf(`git init -q r || exit 1
for i in $(seq 400); do (sh -c 'read x < fifo; echo "#!/bin/sh" > r/.git/hooks/pre-commit; : %s' &) 2>/dev/null; done
touch planted; sleep 60`, tag)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := u.command(ctx, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--", "sh", "-c", script}, dir: work})
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !waitFor(80*time.Second, func() bool { return exists(filepath.Join(work, "planted")) }) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the command did not fork its crowd")
		}
		cmd.Process.Kill()
		cmd.Wait()
		r := u.run(t, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--", "true"}, dir: work, keepRefusal: true})
		if r.code != 0 || strings.Contains(r.stderr, "still runs") {
			t.Errorf("the next run did not finish the cleanup:\n%s", r)
		}
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Write(fd, []byte("go\n"))
			unix.Close(fd)
			t.Errorf("processes of the killed run outlived the next run's cleanup (one opened the FIFO)")
			time.Sleep(time.Second)
		} else if err != unix.ENXIO {
			t.Errorf("opening the FIFO: %v", err)
		}
		if exists(filepath.Join(work, "r/.git/hooks/pre-commit")) {
			t.Errorf("a process of the killed run wrote a hook after the next run's cleanup")
		}
		if out, _ := runHost("pgrep", "-f", tag); strings.TrimSpace(out) != "" {
			t.Errorf("processes of the killed run are still alive: %s", out)
			runHost("pkill", "-9", "-f", tag)
		}
	})
}
