package corral

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/sandbox/unfinished"
)

// A run's cleanup (the quarantine, the modes put back, the sweep, the
// landlock tier's TMPDIR) happens after the command, in corral. An
// orchestrator's timeout may kill corral first (SIGKILL): the sandbox
// dies with it, but what the command left would stay. So before the
// command starts corral writes what the cleanup needs to a record where
// no sandbox can reach (package unfinished), and removes it once the
// cleanup is done; every corral exec first finishes the cleanup of the
// records whose corral is gone, and corral doctor lists them.

// recordVersion is runRecord's format.
const recordVersion = 1

// runRecord is what a run's cleanup needs, as known before the command
// starts.
type runRecord struct {
	Version int       `json:"version"`
	Pid     int       `json:"pid"` // corral's
	Started time.Time `json:"started"`
	WorkDir string    `json:"work_dir"`
	// Shim is the sandbox's first process: while it lives the sandbox
	// may (it kills the rest as it dies).
	Shim procID `json:"shim"`
	// Since is the run's start on the clock ctime counts.
	Since [2]int64 `json:"since"`
	Tier  string   `json:"tier"`
	// What the sweep walks and knows (sweepAfter's arguments).
	Roots     []string `json:"roots"`
	Protected []string `json:"protected"`
	Home      string   `json:"home"`
	// Quarantine, MustNotAppear and RunTmp are the plan's.
	Quarantine    []sandbox.Quarantine `json:"quarantine"`
	MustNotAppear []string             `json:"must_not_appear"`
	RunTmp        string               `json:"run_tmp"`
	Modes         []modeRecord         `json:"modes"`
}

// procID names a process across pid reuse: its pid and its start time
// (in clock ticks since boot, /proc/PID/stat's 22nd field).
type procID struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// newRecord is the record of a run whose plan is p.
func newRecord(p *sandbox.Plan, workDir, home string, since sweepClock, shim int, modes []modeRecord) runRecord {
	return runRecord{
		Version: recordVersion, Pid: osGetpid(), Started: time.Now(), WorkDir: workDir, Shim: processID(shim),
		Since: clockPair(since), Tier: string(p.Tier.Name), Roots: p.WriteRoots,
		Protected: append(append([]string(nil), p.Protected...), p.SweepKnown...), Home: home,
		Quarantine: p.Quarantine, MustNotAppear: p.MustNotAppear, RunTmp: p.RunTmp, Modes: modes,
	}
}

// cleanup is what a run does after its command, in order, with or
// without its own corral: the quarantine of the protected paths that did
// not exist, the files that must not appear, the modes, the sweep, the
// TMPDIR. ran says the command started (else nothing can have changed:
// no mode or sweep). trace gets the sweep's timing (may be nil).
func (rec *runRecord) cleanup(r *Result, ran bool, warn, trace func(string)) {
	r.Quarantined = append(r.Quarantined, quarantine(rec.Quarantine, warn)...)
	r.Removed = append(r.Removed, sandbox.RemoveMustNotAppear(rec.MustNotAppear, warn)...)
	if ran {
		restoreModesAfter(r, rec.Modes, warn)
		sweepAfter(r, rec.Roots, rec.Protected, rec.Home, pairClock(rec.Since), rec.Tier == string(sandbox.TierLandlock), warn, trace)
	}
	if rec.RunTmp != "" {
		sandbox.RemoveRunTmp(rec.RunTmp, warn)
	}
}

// aftercare is one run's cleanup: recorded before its command starts
// (sandbox.Request.Launching), done after it.
type aftercare struct {
	store      *unfinished.Store // nil: best effort without records
	since      sweepClock
	workDir    string
	home       string
	bestEffort bool
	warn       func(string)
	pause      time.Duration // Spec.Debug.CleanupPause, for tests

	record   runRecord
	rec      *unfinished.Record
	recorded bool // the plan got as far as launching
}

// launching records the modes and writes the run's record.
func (a *aftercare) launching(p *sandbox.Plan, shim int) error {
	a.record = newRecord(p, a.workDir, a.home, a.since, shim, recordModes(p, a.home))
	a.recorded = true
	rec, err := recordRun(a.store, a.record)
	switch {
	case err == nil:
		a.rec = rec
	case a.bestEffort:
		a.warn(fmt.Sprintf("running without a record of the cleanup (writing it failed: %v): if corral were killed before its end, what the command left would not be swept", err))
	default:
		return fmt.Errorf("%w: writing the record of the run's cleanup: %v (--best-effort runs without)", sandbox.ErrProtection, err)
	}
	return nil
}

// done does the cleanup (if the run got as far as launching) and removes
// the record. timing says whether trace gets the sweep's timing.
func (a *aftercare) done(r *Result, ran, timing bool, trace func(string)) {
	if !a.recorded {
		return
	}
	if !timing {
		trace = nil
	}
	if a.pause > 0 {
		time.Sleep(a.pause)
	}
	a.record.cleanup(r, ran, a.warn, trace)
	if a.rec != nil {
		if err := a.rec.Done(); err != nil {
			a.warn(fmt.Sprintf("removing the record of the run's cleanup: %v (the next corral will do the cleanup again)", err))
		}
	}
}

// recordRun writes the run's record; the caller marks it Done once the
// cleanup is done. Without a store (nil) there is nothing to write.
func recordRun(store *unfinished.Store, rec runRecord) (*unfinished.Record, error) {
	if store == nil {
		return nil, nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return store.Create(data)
}

// openStore opens the records' folder. Where it cannot be trusted the run
// is refused (a killed corral would leave its cleanup undone), unless
// best effort, which warns and goes on without records.
func openStore(bestEffort bool, warn func(string)) (*unfinished.Store, error) {
	s, err := unfinished.Open()
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, errors.ErrUnsupported):
		return nil, nil // macOS: nothing is swept after a Seatbelt run
	}
	msg := fmt.Sprintf("corral cannot keep a record of the run's cleanup where no sandbox can reach it (%v): if corral were killed before its end, what the command left would not be swept", err)
	if errors.Is(err, unfinished.ErrUntrusted) {
		msg += "; remove the folder, or set XDG_RUNTIME_DIR to a folder of this user's below /run"
	}
	if !bestEffort {
		return nil, fmt.Errorf("%w: %s (--best-effort runs without)", sandbox.ErrProtection, msg)
	}
	warn("running without a record of the cleanup: " + msg)
	return nil, nil
}

// finishUnfinished does the cleanup of every run whose corral is gone
// before its own was done, and says so. It waits (a little) for such a
// run's sandbox to end first.
func finishUnfinished(store *unfinished.Store, warn func(string)) {
	if store == nil {
		return
	}
	entries, err := store.List()
	if err != nil {
		warn(fmt.Sprintf("reading the records of unfinished runs in %s: %v", store.Path(), err))
		return
	}
	for _, e := range entries {
		if e.Stale == nil {
			continue
		}
		var rec runRecord
		if err := json.Unmarshal(e.Data, &rec); err != nil || rec.Version != recordVersion {
			warn(fmt.Sprintf("the record %s of a run whose corral was killed is not one this corral reads (%v): its cleanup is not done; check that run's work dir", e.Stale.Path(), err))
			e.Stale.Release()
			continue
		}
		if !waitGone(rec.Shim) {
			warn(fmt.Sprintf("the sandbox of an earlier run (corral pid %d, in %s) whose corral was killed still runs after %v: its cleanup is left to a later corral", rec.Pid, printable.String(rec.WorkDir), goneWait))
			e.Stale.Release()
			continue
		}
		var r Result
		var said []string
		rec.cleanup(&r, true, func(s string) { said = append(said, s) }, nil)
		if len(said) > 0 { // a run that left nothing behind is finished quietly
			warn(fmt.Sprintf("finished the cleanup of an earlier run (corral pid %d, started %s in %s) whose corral was killed before its end: %s",
				rec.Pid, rec.Started.Format(time.RFC3339), printable.String(rec.WorkDir), strings.Join(said, "; ")))
		}
		e.Stale.Done()
	}
}

// UnfinishedRun is a run whose cleanup is recorded but not done (corral
// doctor lists them).
type UnfinishedRun struct {
	Record  string    `json:"record"`
	Pid     int       `json:"pid"`
	Started time.Time `json:"started"`
	WorkDir string    `json:"work_dir"`
	// Running: its corral is alive (or another corral is finishing its
	// cleanup); else the next corral exec finishes it.
	Running bool `json:"running"`
}

// UnfinishedRuns lists the records of this user's runs whose cleanup is
// not done, and the folder that holds them. It finishes nothing.
func UnfinishedRuns() ([]UnfinishedRun, string, error) {
	store, err := unfinished.Open()
	if err != nil {
		return nil, unfinished.Dir(), err
	}
	defer store.Close()
	entries, err := store.List()
	if err != nil {
		return nil, store.Path(), err
	}
	var out []UnfinishedRun
	for _, e := range entries {
		var rec runRecord
		json.Unmarshal(e.Data, &rec)
		u := UnfinishedRun{Record: store.Path() + "/" + e.Name, Pid: rec.Pid, Started: rec.Started, WorkDir: rec.WorkDir, Running: e.Stale == nil}
		if e.Stale != nil {
			e.Stale.Release()
		}
		out = append(out, u)
	}
	return out, store.Path(), nil
}
