//go:build linux

package corral

import (
	"os"
	"strconv"
	"strings"
	"time"
)

var osGetpid = os.Getpid

// clockPair and pairClock carry the sweep's clock in a record.
func clockPair(c sweepClock) [2]int64 { return [2]int64{c.Sec, c.Nsec} }
func pairClock(p [2]int64) sweepClock { return sweepClock{Sec: p[0], Nsec: p[1]} }

// processID is pid with its start time (0 when it cannot be read).
func processID(pid int) procID {
	start, _ := procStat(pid)
	return procID{Pid: pid, Start: start}
}

// procStat is pid's start time (the 22nd field of /proc/PID/stat, 0 when
// it cannot be read) and whether it is a zombie (or dead). The command
// name before them, in parentheses, may hold spaces and parentheses
// itself: the fields follow its last ')'.
func procStat(pid int) (start uint64, zombie bool) {
	if pid <= 0 {
		return 0, false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	start, _ = strconv.ParseUint(fields[19], 10, 64)
	return start, fields[0] == "Z" || fields[0] == "X"
}

// alive reports whether p is still the process it named, and running (a
// zombie has ended; its parent may never reap it).
func (p procID) alive() bool {
	if p.Pid <= 0 || p.Start == 0 {
		return false
	}
	start, zombie := procStat(p.Pid)
	return start == p.Start && !zombie
}

// goneWait bounds how long a corral waits for a killed run's sandbox to
// end before it finishes that run's cleanup.
const goneWait = 10 * time.Second

// waitGone waits, up to goneWait, until the process p is gone: the
// sandbox's first process (the shim) kills the rest of the sandbox as it
// dies with corral, and in the landlock tier, with no PID namespace, it is
// the one that finds them all. It is never killed here: killed midway, it
// would hand every process it had not reached to the host's init, where
// nothing ends them. false: it is still there, and the cleanup must wait
// (a sandbox still running could write after it).
func waitGone(p procID) bool {
	deadline := time.Now().Add(goneWait)
	for p.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
