package sandbox

import (
	"strings"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

func TestResolveLimits(t *testing.T) {
	l := ResolveLimits(policyLimits(64<<20, 0), LimitFlags{Pids: 10})
	if l.Memory != 64<<20 || !strings.Contains(l.MemoryFrom, "s1") || l.Pids != 10 || l.PidsFrom != "--pids" || !l.Explicit {
		t.Errorf("%+v", l)
	}
	d := ResolveLimits(policyLimits(0, 0), LimitFlags{})
	if d.Memory != DefaultMemory || d.Pids != DefaultPids || d.Explicit || d.Timeout != DefaultTimeout || d.TimeoutFrom != "default" || d.KillGrace != DefaultKillGrace {
		t.Errorf("defaults: %+v", d)
	}
	// A skill's timeout and the flag replace the default, in that
	// order; none removes it whatever the skills asked.
	sk := policyLimits(0, 0)
	sk.Timeout = policyengine.Limit[time.Duration]{Value: 10 * time.Minute, From: []string{"slow"}}
	if l := ResolveLimits(sk, LimitFlags{}); l.Timeout != 10*time.Minute || l.TimeoutFrom != "skills slow" {
		t.Errorf("skill timeout: %+v", l)
	}
	if l := ResolveLimits(sk, LimitFlags{Timeout: time.Second}); l.Timeout != time.Second || l.TimeoutFrom != "--timeout" {
		t.Errorf("--timeout: %+v", l)
	}
	if l := ResolveLimits(sk, LimitFlags{NoTimeout: true}); l.Timeout != 0 || l.TimeoutFrom != "--timeout none" {
		t.Errorf("--timeout none: %+v", l)
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
