//go:build !linux

package corral

import "corral.dev/corral/sandbox"

// The git sweep walks what a Linux sandbox could write; elsewhere the
// command runs under Seatbelt, which this package does not sweep after.

type sweepClock struct{}

func sweepStart() sweepClock { return sweepClock{} }

type sweep struct {
	Folders, Gits int
	Moved         []Quarantined
	Reset         []Reset
	Errs          []string
}

func sweepGit(roots, protected []string, home string, since sweepClock, top bool) *sweep {
	return &sweep{}
}

type modeRecord struct{}

func recordModes(*sandbox.Plan, string) []modeRecord { return nil }

func restoreModes([]modeRecord) ([]Reset, []string) { return nil, nil }

var osGetpid = func() int { return 0 }

func clockPair(sweepClock) [2]int64 { return [2]int64{} }
func pairClock([2]int64) sweepClock { return sweepClock{} }
func processID(pid int) procID      { return procID{Pid: pid} }
func waitGone(procID) bool          { return true }

const goneWait = 0
