package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"corral.dev/corral/sandbox/fsaudit"
)

// The kinds of file denial a run may be unable to see (FSDenials.Unobservable).
const (
	// UnseenLandlock: accesses Landlock refused (EACCES), read from the
	// kernel's audit records.
	UnseenLandlock = "landlock"
	// UnseenAbsent: paths outside the grants, which the namespaces tier's
	// new root does not hold (ENOENT).
	UnseenAbsent = "absent-paths"
	// UnseenReadOnly: writes under the namespaces tier's read-only binds
	// (the system baseline, fs.read grants), refused with EROFS.
	UnseenReadOnly = "read-only-mounts"
)

// whyAbsentUnseen says why the namespaces tier cannot report lookups of
// paths its root does not hold.
const whyAbsentUnseen = "the sandbox's root holds only granted paths, so a path outside them is absent (ENOENT): the lookup fails inside the kernel's path walk, before any Landlock or LSM hook, audit record, fanotify mark or seccomp filter could see it (seccomp sees the call, not its result; tracing it needs kprobes or eBPF on host-wide state)"

// whyReadOnlyUnseen says why writes under read-only binds are not seen.
const whyReadOnlyUnseen = "a write, create or delete under a read-only bind (the system folders, fs.read grants) fails with EROFS when the kernel checks the mount, before Landlock is asked, so no audit record names it"

// FSDenials are the file accesses the kernel refused the command, as far
// as the host lets corral see them.
type FSDenials struct {
	// Denials are the distinct refusals (at most 1000); More counts the
	// rest; Lost says some records never reached corral.
	Denials []fsaudit.Denial
	More    int
	Lost    bool
	// Unobservable are the kinds of denial this run could not see.
	Unobservable []Unobservable
}

// Unobservable is a kind of file denial a run could not see, and why.
type Unobservable struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// watchDenials starts reading the run's Landlock audit records where the
// host allows it, and then has the init ask Landlock to log the
// command's denials (only then: a host's audit log gets nothing more
// from runs nobody reads). The kinds it cannot see go in e.out.
func (e *execution) watchDenials(plan *Plan) *fsaudit.Reader {
	start := time.Now()
	defer func() { e.trace(fmt.Sprintf("fs audit: %d µs", time.Since(start).Microseconds())) }()
	if plan.Tier.Name != TierLandlock {
		e.out.FS.Unobservable = append(e.out.FS.Unobservable, Unobservable{UnseenAbsent, whyAbsentUnseen}, Unobservable{UnseenReadOnly, whyReadOnlyUnseen})
	}
	if plan.Landlock.ABI == 0 {
		e.out.FS.Unobservable = append(e.out.FS.Unobservable, Unobservable{UnseenLandlock, "Landlock is not applied to this run"})
		return nil
	}
	r, err := fsaudit.Open(plan.Landlock.ABI)
	if err != nil {
		e.out.FS.Unobservable = append(e.out.FS.Unobservable, Unobservable{UnseenLandlock, unobservableReason(err)})
		return nil
	}
	plan.Landlock.LogFlags = fsaudit.LogNewExecOn
	return r
}

// finishDenials ends reading and keeps what the run's records said.
func (e *execution) finishDenials(r *fsaudit.Reader) {
	if r == nil {
		return
	}
	start := time.Now()
	res := r.Finish()
	e.trace(fmt.Sprintf("fs denials read: %d µs", time.Since(start).Microseconds()))
	if res.Err != nil {
		e.out.FS.Unobservable = append(e.out.FS.Unobservable, Unobservable{UnseenLandlock, unobservableReason(res.Err)})
		return
	}
	e.out.FS.Denials, e.out.FS.More, e.out.FS.Lost = res.Denials, res.More, res.Lost
}

// unobservableReason is err's reason without the sentinel's words.
func unobservableReason(err error) string {
	msg := err.Error()
	if errors.Is(err, fsaudit.ErrUnobservable) {
		msg = strings.TrimPrefix(msg, fsaudit.ErrUnobservable.Error()+": ")
	}
	return msg
}
