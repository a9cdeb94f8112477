package sandbox

import (
	"fmt"
	"strings"

	"corral.dev/corral/sandbox/cgroup"
)

// LimitsProtection is the limits row of the protections table: cg is the
// run's cgroup, or err says why there is none.
func LimitsProtection(l Limits, cg *cgroup.Group, err error) Protection {
	if err != nil {
		what := "the default caps are dropped with this warning; a limit a skill or a flag asks for fails the run (exit 125)"
		if l.Explicit {
			what = "a skill or a flag asked for limits, so exec refuses to run (exit 125) unless --best-effort is given"
		}
		return Protection{Name: "limits", Detail: fmt.Sprintf("no cgroup, so no memory or process cap: %v; %s", err, what)}
	}
	return Protection{Name: "limits", Enforced: true, Detail: fmt.Sprintf("%s: %s", cg.Where(), LimitsText(l))}
}

// LimitsText says what the limits are and where each came from.
func LimitsText(l Limits) string {
	lim := []string{
		fmt.Sprintf("memory + swap %s (%s)", FormatSize(l.Memory), l.MemoryFrom),
		fmt.Sprintf("%d processes (%s)", l.Pids, l.PidsFrom),
	}
	if l.Timeout > 0 {
		lim = append(lim, fmt.Sprintf("timeout %s (%s), then SIGTERM and SIGKILL %s later", l.Timeout, l.TimeoutFrom, l.KillGrace))
	} else {
		lim = append(lim, "no timeout")
	}
	return strings.Join(lim, "; ") + "; enforced by a fresh cgroup per run"
}

// FormatSize writes a byte count as people write limits.
func FormatSize(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
