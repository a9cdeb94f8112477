package sandbox

// The parent and the init stage talk over two pipes and a socket the init
// holds as fds 3-5, whether `corral exec`'s constructor forked it
// (nsinit_linux.c) or a thread exec'd it (spawn_linux.c):
//
//	fd  direction       content
//	3   parent → init   the Plan in the wire format of encodePlan
//	4   init → parent   status messages, one JSON object per line:
//	                    {"tier":{"name":T,"why":W,"errno":E}} first: the tier the
//	                                                         shim chose (namespaces,
//	                                                         landlock)
//	                    {"started":PID}                      the command runs
//	                    {"error":{"stage":S,"message":M,"errno":E}}  set-up failed; init exits
//	                    {"exit":{"code":C,"signal":N,"max_rss_kb":K,"alone":A}}
//	                                                         the command ended, and
//	                                                         every other process
//	                                                         (A: PID 1 is out of the
//	                                                         run's cgroup)
//	5   both ways       a UNIX socket:
//	                    parent → init, once the plan is sent: the seccomp
//	                    program's length and the number of cgroup files to
//	                    join (4-byte little-endian each), the program, and
//	                    attached (SCM_RIGHTS) the run's cgroup files, then
//	                    its parent's (cgroup v1), open for writing; none
//	                    without a cgroup. The init reads it after its mounts
//	                    init → parent, with a proxy in the plan: one message
//	                    carrying the listening sockets (SCM_RIGHTS); in the
//	                    landlock tier, the seccomp listener of the connect
//	                    supervisor instead
//
// The init (nsinit_linux.c, init_linux.c) writes nothing else and reads
// nothing from its environment or argv beyond CORRAL_INIT_ARG and the
// tier (spawn_linux.h; a forked one zeroes its copies of corral's argv and
// environment), so a hostile environment cannot steer it.

// status is one message on the status pipe.
type status struct {
	Tier    *tierStatus `json:"tier,omitempty"`
	Started int         `json:"started,omitempty"`
	Error   *StageError `json:"error,omitempty"`
	Exit    *exitStatus `json:"exit,omitempty"`
}

// tierStatus is the shim's first line: the tier it runs in.
type tierStatus struct {
	Name  Tier   `json:"name"`
	Why   string `json:"why"`
	Errno int    `json:"errno"`
}

// StageError is a failure inside the sandbox before the command ran.
type StageError struct {
	Stage   string `json:"stage"`
	Message string `json:"message"`
	Errno   int    `json:"errno,omitempty"`
}

func (e *StageError) Error() string { return e.Stage + ": " + e.Message }

type exitStatus struct {
	Code     int   `json:"code"`
	Signal   int   `json:"signal,omitempty"`
	MaxRSSKB int64 `json:"max_rss_kb"`
	// Alone: PID 1 had left the run's cgroup, and killed and reaped every
	// other process, before it reported.
	Alone bool `json:"alone"`
}
