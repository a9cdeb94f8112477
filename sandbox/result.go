package sandbox

import (
	"os"
	"time"

	"corral.dev/corral/sandbox/cgroup"
	"corral.dev/corral/sandbox/seccomp"
)

// Result is how a run ended.
type Result struct {
	ExitCode int           `json:"exit_code"`
	Signal   int           `json:"signal,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
	MaxRSS   int64         `json:"peak_memory_bytes"`
	Started  bool          `json:"started"`
	// TimedOut is set when RunOptions.Timeout ended the run.
	TimedOut bool `json:"timed_out"`
	// OOMKills counts processes the kernel's OOM killer ended in the
	// run's cgroup.
	OOMKills int `json:"oom_kills"`
	// Stage is set when the sandbox could not be built or the command not
	// started.
	Stage *StageError `json:"stage_error,omitempty"`
}

// RunOptions are what a run needs beyond its Plan.
type RunOptions struct {
	// Serve gets the proxy's listening sockets when the plan has a proxy;
	// it must return at once (serve from goroutines).
	Serve func([]*os.File)
	// Cgroup, if set, is called once the plan is on its way with the
	// sandbox init's pid and waits for the run's cgroup (nil: none); PID 1
	// joins it after its mounts (or is already in it), before the command
	// starts, and its peak memory and OOM kills go in the Result. An
	// error ends the run before the command starts.
	Cgroup func(initPid int) (*cgroup.Group, error)
	// Timeout ends the run: SIGTERM to the command, then after KillGrace
	// SIGKILL to the whole sandbox. Closing Done does the same at once.
	Timeout, KillGrace time.Duration
	Done               <-chan struct{}
	// Seccomp is this run's program from Prepare (nil: chosen or
	// compiled when the plan is sent).
	Seccomp *seccomp.Prepared
	// Trace gets the launcher's steps when the plan traces (plan.Trace).
	Trace func(step string)
	// Held are the protected paths' files as corral holds them when the
	// sandbox starts (Hold): a root the init built ahead of the plan is
	// used only if it binds these (corral_held_still, init_ahead_linux.c).
	Held []HeldFile
}

// Stdio are the streams the command gets, passed straight through.
type Stdio struct {
	Stdin          *os.File
	Stdout, Stderr *os.File
	// Late, where set, replace the init's descriptor 0, 1 or 2 before
	// anything of the command runs: they go with the late records, so an
	// init forked early, with corral's own streams, still serves a run
	// whose output corral copies through pipes of its own (to count it).
	Late [3]*os.File
	// Signals, from NotifySignals, are forwarded to the command; nil
	// makes Start catch them itself.
	Signals *Signals
}
