package fsaudit

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCost prints what Open and Finish cost this process (wall, CPU) with
// audit as the host has it (CORRAL_FSAUDIT_COST=1; root), against a
// loop that only sleeps (CORRAL_FSAUDIT_COST_BASE=1).
func TestCost(t *testing.T) {
	if os.Getenv("CORRAL_FSAUDIT_COST") != "1" {
		t.Skip("set CORRAL_FSAUDIT_COST=1 to measure")
	}
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	start := time.Now()
	const n = 200
	for range n {
		var r *Reader
		var err error = ErrUnobservable
		if os.Getenv("CORRAL_FSAUDIT_COST_BASE") == "" {
			r, err = Open(7)
		}
		time.Sleep(2 * time.Millisecond)
		if err == nil {
			r.Attribute(os.Getpid())
			r.Finish()
		}
		_ = err
	}
	unix.Getrusage(unix.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / n
	t.Logf("per run: wall %v (2 ms of it sleep), cpu %v", time.Since(start)/n, cpu)
}

func TestCostStatus(t *testing.T) {
	if os.Getenv("CORRAL_FSAUDIT_COST") != "1" {
		t.Skip("set CORRAL_FSAUDIT_COST=1 to measure")
	}
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	start := time.Now()
	const n = 200
	for range n {
		auditStatus()
	}
	unix.Getrusage(unix.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / n
	t.Logf("auditStatus: wall %v, cpu %v", time.Since(start)/n, cpu)
}
