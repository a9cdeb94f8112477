package sandbox

import (
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

func TestResolveLimits(t *testing.T) {
	l := ResolveLimits(policyLimits(64<<20, 0), LimitFlags{Pids: 10})
	if l.Memory != 64<<20 || !strings.Contains(l.MemoryFrom, "s1") || l.Pids != 10 || l.PidsFrom != "--pids" || !l.Explicit {
		t.Errorf("%+v", l)
	}
	d := ResolveLimits(policyLimits(0, 0), LimitFlags{})
	if d.Memory != DefaultMemory || d.Pids != DefaultPids || d.Explicit || d.Timeout != 0 || d.KillGrace != DefaultKillGrace {
		t.Errorf("defaults: %+v", d)
	}
}

func policyLimits(mem int64, pids int) policyengine.Limits {
	var l policyengine.Limits
	if mem > 0 {
		l.Memory = policyengine.Limit[int64]{Value: mem, From: []string{"s1"}}
	}
	if pids > 0 {
		l.Pids = policyengine.Limit[int]{Value: pids, From: []string{"s1"}}
	}
	return l
}
