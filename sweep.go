package corral

import (
	"fmt"
	"slices"
	"time"

	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
)

// sweepAfter runs the git sweep (sweep_linux.go) once nothing of the
// sandbox runs any more, and reports what it quarantined and what it
// could not check (warn, Run's, keeps each warning in r.Warnings).
func sweepAfter(r *Result, plan *sandbox.Plan, home string, since sweepClock, warn, trace func(string)) {
	t := time.Now()
	s := sweepGit(plan.WriteRoots, append(slices.Clone(plan.Protected), plan.SweepKnown...), home, since, plan.Tier.Name == sandbox.TierLandlock)
	if plan.Trace {
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
	for _, e := range s.Errs {
		warn("the git sweep could not check " + e + ": a git repository there may run what the command chose; check it before running git in it")
	}
}
