package sandbox

import (
	"strings"
	"time"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox/seccomp"
)

// Plan is everything the sandbox will do, as plain data. It travels to the
// init stage as JSON on an inherited pipe and is what explain prints.
type Plan struct {
	// Argv is the command; Path is argv[0] resolved on the sandbox's PATH.
	Argv []string `json:"argv"`
	Path string   `json:"path"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`

	// Tier is the tier the sandbox is built in, and why.
	Tier     TierInfo       `json:"tier"`
	Hostname string         `json:"hostname"`
	Mounts   []Mount        `json:"mounts"`
	Landlock Landlock       `json:"landlock"`
	Seccomp  []seccomp.Rule `json:"seccomp"`
	Exec     ExecPolicy     `json:"exec"`
	Limits   Limits         `json:"limits"`
	// Proxy is set when the permissions allow any network: the sandbox's
	// one way out is corral's egress proxy, listening inside it.
	Proxy *ProxyPlan `json:"proxy,omitempty"`
	// Resolver is, without network, the UDP port on 127.0.0.1 where
	// corral answers every lookup with "no such name" at once (a client
	// that got no answer would retry for a minute) and notes the names,
	// to say after the run what a skill would have to allow (0: none;
	// the landlock tier, or a proxy's resolver).
	Resolver int `json:"resolver,omitempty"`

	// Trace makes the init stage print how long each step took to stderr
	// (Options.TraceInit), for performance work.
	Trace bool `json:"trace,omitempty"`
	// LegacyMounts makes the init bind first and set the flags by path
	// afterwards, as it does on kernels without open_tree and
	// mount_setattr (Options.LegacyMounts, for the tests of that path).
	LegacyMounts bool `json:"legacy_mounts,omitempty"`
	// MountPause makes the init wait this long between opening the bind
	// sources and placing them (Options.MountPause, for the tests of what
	// the host changes meanwhile). It only slows a run down.
	MountPause time.Duration `json:"mount_pause,omitempty"`

	// Protections lists every protection and whether it is enforced.
	Protections []Protection `json:"protections"`
	// MustNotAppear are files inside protected git folders that did not
	// exist at launch and would send git elsewhere for its config and
	// hooks if the command made them (commondir, config.worktree). No
	// mount can keep a missing file from being created in a writable
	// folder, so corral removes them after the run.
	MustNotAppear []string `json:"must_not_appear,omitempty"`
	// WriteRoots are the writable folders the host sees (not the private
	// /tmp): after the run corral walks them whole for git folders the
	// command made or changed (sweep.go in package corral).
	WriteRoots []string `json:"write_roots,omitempty"`
	// RunTmp is the landlock tier's TMPDIR, a folder made for the run
	// and removed after it ("" in the namespaces tier, whose /tmp is a
	// tmpfs of its own).
	RunTmp string `json:"run_tmp,omitempty"`
	// HomeStore is the folder of this work dir's and these skills'
	// private HOME caches (Spec.HomeStore), HomeCaches what of it the
	// private HOME holds, and CacheRoots, in the landlock tier, the
	// folders of it the command writes: writable, and not swept (the host
	// never uses them).
	HomeStore  string     `json:"home_store,omitempty"`
	HomeCaches []HomeLink `json:"home_caches,omitempty"`
	CacheRoots []string   `json:"cache_roots,omitempty"`
	// Quarantine are the protected paths (policyengine.ProtectedPaths,
	// the skills and policies) that did not exist at launch inside a
	// writable root: whatever the command leaves there is renamed after
	// the run (corral's quarantine.go).
	Quarantine []Quarantine `json:"quarantine,omitempty"`
	// Alerts are the warnings a person must see: corral prints them on
	// stderr as well as in the report (a writable home folder).
	Alerts []string `json:"alerts,omitempty"`
	// Protected are the protected paths bound read-only. The kernel
	// detaches such a bind when the host replaces the file or folder
	// (git renames config.lock over config), so corral compares them
	// before and after the run.
	Protected []string `json:"protected,omitempty"`
	// SweepKnown are, in the landlock tier (which binds nothing), the
	// protected paths that existed at launch: the git sweep takes their
	// git folders for the user's, whose files count as changed only
	// when they changed themselves, not because git ran there.
	SweepKnown []string `json:"sweep_known,omitempty"`
	// Deny are the fs.deny globs and DenyWithin the grants' bases they
	// carve paths out of (policyengine.GrantBases): check answers from
	// them, exec masks what they match at launch (MountMask).
	Deny       []DenyRule `json:"deny,omitempty"`
	DenyWithin []string   `json:"deny_within,omitempty"`
	// Notify are the syscalls the landlock tier's filter sends to
	// corral's supervisor besides connect and the chmods: with fs.deny,
	// the calls that make a name (the kernel's rules then hold no make
	// right: CreateRules keeps them as they were, for the supervisor,
	// which makes the names it allows itself). The full tier's filter
	// does not read it yet, and refuses what needs it.
	Notify      []NotifyRule `json:"notify,omitempty"`
	CreateRules []PathRule   `json:"create_rules,omitempty"`
	// Warnings are places where the kernel's rule differs from the glob
	// it came from, and other things a user should know.
	Warnings []string `json:"warnings,omitempty"`

	// perms are the permissions the plan was built from: on macOS the
	// Seatbelt profile is rendered from them.
	perms policyengine.Permissions
	// home and keep are Spec.Home and Spec.Keep, for the profile too.
	home string
	keep []string
}

// MountKind is what a mount step does.
type MountKind string

const (
	MountTmpfs  MountKind = "tmpfs" // a fresh tmpfs at Target
	MountProc   MountKind = "proc"  // a proc for the sandbox's PID namespace
	MountBind   MountKind = "bind"  // bind Source (opened before any tmpfs hides it) to Target
	MountDev    MountKind = "dev"   // Target is a device node bound from the host
	MountSymlnk MountKind = "symlink"
	MountDir    MountKind = "dir"  // an empty folder, unless one is already there
	MountCopy   MountKind = "copy" // a read-only copy of a small system file (cheaper than a bind)
	MountFile   MountKind = "file" // a small file with the content Source, made for the sandbox
	MountMask   MountKind = "mask" // an empty, read-only, mode-000 file (or folder, Dir) over Target: fs.deny
)

// Mount is one step of the sandbox's mount namespace set-up, applied in
// order.
type Mount struct {
	Kind     MountKind `json:"kind"`
	Source   string    `json:"source,omitempty"`
	Target   string    `json:"target"`
	ReadOnly bool      `json:"read_only,omitempty"`
	NoExec   bool      `json:"no_exec,omitempty"`
	Dir      bool      `json:"dir,omitempty"` // the bind source is a directory
	Why      string    `json:"why"`
}

// Landlock is the Landlock ruleset.
type Landlock struct {
	ABI        int        `json:"abi"`
	HandledFS  uint64     `json:"handled_fs"`
	HandledNet uint64     `json:"handled_net"`
	Scoped     uint64     `json:"scoped"`
	Rules      []PathRule `json:"rules"`
	PortRules  []PortRule `json:"port_rules,omitempty"`
	// LogFlags are landlock_restrict_self's log flags: set at launch
	// when corral reads the run's audit records (package fsaudit).
	LogFlags uint32 `json:"log_flags,omitempty"`
}

// PortRule grants Access (TCP bind or connect) on a TCP port.
type PortRule struct {
	Port   int    `json:"port"`
	Access uint64 `json:"access"`
	Rights string `json:"rights"`
	From   string `json:"from"`
}

// ProxyPlan is where the egress proxy listens inside the sandbox.
type ProxyPlan struct {
	Addrs []string `json:"addrs"` // 127.0.0.1:PORT and [::1]:PORT
	Port  int      `json:"port"`
	Rules int      `json:"rules"` // network.allow entries it enforces
	// DNSPort is the sandbox resolver's UDP port on 127.0.0.1 when
	// egress is transparent (0: it is not; the landlock tier).
	DNSPort int `json:"dns_port,omitempty"`
}

// PathRule grants Access beneath Path (or on the file Path).
type PathRule struct {
	Path   string `json:"path"`
	Access uint64 `json:"access"`
	Rights string `json:"rights"` // Access in words, for people
	From   string `json:"from"`   // the glob or baseline entry it came from
}

// ExecPolicy is the exec allowlist.
type ExecPolicy struct {
	Restricted bool `json:"restricted"`
	// Allowed are the resolved absolute paths of the allowed programs and
	// the ELF interpreters and script interpreters they need.
	Allowed []ExecTarget `json:"allowed,omitempty"`
}

// ExecTarget is one executable file the sandbox may run.
type ExecTarget struct {
	Path string `json:"path"`
	From string `json:"from"` // the exec entry, or "interpreter of X"
}

// Limits are the resource limits of the run and where each came from
// ("default", a flag, or the skills that asked). Zero means no cap.
type Limits struct {
	Memory      int64         `json:"memory_bytes"`
	MemoryFrom  string        `json:"memory_from,omitempty"`
	Pids        int           `json:"pids"`
	PidsFrom    string        `json:"pids_from,omitempty"`
	Timeout     time.Duration `json:"timeout_ns,omitempty"`
	TimeoutFrom string        `json:"timeout_from,omitempty"`
	KillGrace   time.Duration `json:"kill_grace_ns"`
	// Explicit is set when a skill or a flag asked for the memory or
	// pids cap: without a cgroup the run then fails closed, where the
	// implicit defaults only warn.
	Explicit bool `json:"explicit"`
}

// Default limits of every run.
const (
	DefaultMemory    = 512 << 20
	DefaultPids      = 1024
	DefaultKillGrace = 2 * time.Second
	// DefaultTimeout ends a command nobody set a timeout for: without
	// one, a hung command holds its tool call forever. Two minutes is
	// what agent runtimes' own shell tools allow a call, so corral does
	// not end a build or a test run they would have let finish; a
	// skill's limits.timeout or --timeout changes it, and --timeout none
	// removes it.
	DefaultTimeout = 2 * time.Minute
)

// LimitFlags are the command line's overrides; zero values do not
// override.
type LimitFlags struct {
	Memory    int64
	Pids      int
	Timeout   time.Duration
	KillGrace time.Duration
	// NoTimeout removes the timeout (--timeout none); the agent
	// policy's caps still apply.
	NoTimeout bool
}

// ResolveLimits combines the defaults, the skills' merged limits and the
// flags, the later winning.
func ResolveLimits(skills policyengine.Limits, flags LimitFlags) Limits {
	l := Limits{Memory: DefaultMemory, MemoryFrom: "default", Pids: DefaultPids, PidsFrom: "default", KillGrace: DefaultKillGrace,
		Timeout: DefaultTimeout, TimeoutFrom: "default"}
	from := func(f []string) string {
		if len(f) > 0 && strings.HasPrefix(f[0], "policy ") {
			return strings.Join(f, ", ")
		}
		return "skills " + strings.Join(f, ", ")
	}
	if v := skills.Memory.Value; v > 0 {
		l.Memory, l.MemoryFrom, l.Explicit = v, from(skills.Memory.From), true
	}
	if v := skills.Pids.Value; v > 0 {
		l.Pids, l.PidsFrom, l.Explicit = v, from(skills.Pids.From), true
	}
	if v := skills.Timeout.Value; v > 0 {
		l.Timeout, l.TimeoutFrom = v, from(skills.Timeout.From)
	}
	if flags.Memory > 0 {
		l.Memory, l.MemoryFrom, l.Explicit = flags.Memory, "--memory", true
	}
	if flags.Pids > 0 {
		l.Pids, l.PidsFrom, l.Explicit = flags.Pids, "--pids", true
	}
	switch {
	case flags.NoTimeout:
		l.Timeout, l.TimeoutFrom = 0, "--timeout none"
	case flags.Timeout > 0:
		l.Timeout, l.TimeoutFrom = flags.Timeout, "--timeout"
	}
	if flags.KillGrace > 0 {
		l.KillGrace = flags.KillGrace
	}
	return l
}

// Protection is one protection of the enforcement table.
type Protection struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	Detail   string `json:"detail"`
}

// HeldFile is a protected path and the device and inode of the file held
// for it (Held false: none could be held, the path was gone).
type HeldFile struct {
	Path         string
	Held         bool
	Major, Minor uint32
	Ino          uint64
}
