package corral

import (
	"fmt"
	"time"

	"corral.dev/corral/printable"
)

// sweepAfter runs the git sweep (sweep_linux.go) of the write roots once
// nothing of the sandbox runs any more, and reports what it quarantined
// and reset and what it could not check (warn, Run's, keeps each warning
// in r.Warnings). protected are the plan's protected paths (and, in the
// landlock tier, top, the ones it knew at launch); trace, if set, gets
// its timing.
func sweepAfter(r *Result, roots, protected []string, home string, since sweepClock, top bool, warn, trace func(string)) {
	t := time.Now()
	s := sweepGit(roots, protected, home, since, top)
	if trace != nil {
		trace(fmt.Sprintf("git sweep: %d folders, %d git folders in %d µs", s.Folders, s.Gits, time.Since(t).Microseconds()))
	}
	for _, q := range s.Moved {
		r.Quarantined = append(r.Quarantined, q)
		if q.To == "" {
			warn(fmt.Sprintf("the command left %s (%s)", printable.String(q.Path), q.Why))
			continue
		}
		warn(fmt.Sprintf("the command left %s (%s): moved to %s, where git never reads it", printable.String(q.Path), q.Why, printable.String(q.To)))
	}
	for _, m := range s.Reset {
		r.Reset = append(r.Reset, m)
		if m.To == "" {
			warn(fmt.Sprintf("the command left %s (%s): corral removed %s", printable.String(m.Path), m.Why, m.From))
			continue
		}
		warn(fmt.Sprintf("the command left %s with mode %s (%s): corral set it to %s", printable.String(m.Path), m.From, m.Why, m.To))
	}
	for _, e := range s.Errs {
		warn("the git sweep could not check " + e + ": a git repository there may run what the command chose; check it before running git in it")
	}
}

// restoreModesAfter takes back the group and other write rights and the
// ACLs the recorded files and folders gained during the run.
func restoreModesAfter(r *Result, recs []modeRecord, warn func(string)) {
	reset, errs := restoreModes(recs)
	for _, m := range reset {
		r.Reset = append(r.Reset, m)
		if m.To == "" {
			warn(fmt.Sprintf("the command gave %s an ACL (%s): corral removed it", printable.String(m.Path), m.Why))
			continue
		}
		warn(fmt.Sprintf("the command set %s to mode %s (%s): corral set it to %s", printable.String(m.Path), m.From, m.Why, m.To))
	}
	for _, e := range errs {
		warn(printable.Line(e) + ": check it before running git there")
	}
}
