package sandbox

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox/seccomp"
)

// Spec is what the caller asks for.
type Spec struct {
	Argv       []string
	WorkDir    string
	Env        []string // the caller's environment; filtered by the env rules
	BestEffort bool     // run even when a protection cannot be enforced
	// Home is $HOME: the home-relative policyengine.ProtectedPaths are
	// kept read-only there where a writable root holds them.
	Home string
	// Keep are the active skills' folders and the agent policy files in
	// use: read-only to the run they govern, whatever the grants say.
	Keep []string
	// Stop, closed when the run is given up (a signal ended the init, the
	// caller's context), ends Probe's waits for locks other runs hold.
	Stop <-chan struct{}
	// Tier is the tier the init runs in (TierAuto: the one this host
	// allows, for explain). In the landlock tier, RunTmp is the run's own
	// TMPDIR and HostProxy where corral's proxy listens.
	Tier      Tier
	TierWhy   string
	RunTmp    string
	HostProxy netip.AddrPort
	// HomeStore is a folder corral made for this work dir and these
	// skills, holding one folder for each of HomeCaches (and
	// HomeGitConfig when HomeGit): a private HOME keeps those between
	// runs. "" gives a private HOME that starts empty every time.
	HomeStore string
	HomeGit   bool
	// SetEnv are KEY=VALUE pairs set in the command's environment
	// whatever the env rules say (DATA_DIR).
	SetEnv []string
	// Limits are the run's resolved limits; Options how it is carried
	// out. Both go into the plan as they are.
	Limits  Limits
	Options Options
}

// hiddenRoots are never bound into the sandbox even when a grant covers
// them: they hold the host's UNIX sockets and shared temporary files. The
// sandbox gets a private /tmp instead.
var hiddenRoots = []string{"/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm", "/proc", "/dev", "/sys"}

// socketRoots hold the host's service sockets: the systemd managers'
// private sockets and the user's and the system's D-Bus (which start
// programs outside any sandbox and change a scope's caps), container
// engines, agents. Connecting to a UNIX socket needs nothing Landlock or a
// read-only mount refuses, so nothing inside them is bound, whatever a
// grant says: the grant is dropped with a warning.
var socketRoots = []string{"/run", "/var/run"}

// socketRootOf returns the socket root that holds p (strictly inside), or
// "".
func socketRootOf(p string) string {
	for _, r := range socketRoots {
		if p != r && isUnder(p, r) {
			return r
		}
	}
	return ""
}

// programRoots hold programs. With an exec allowlist /usr is still bound
// whole (one mount instead of one per library folder and program), but
// Landlock grants read only on libraryRoots and read+execute only on the
// allowed programs, so a program that is not allowed is neither executable
// nor readable (the dynamic loader cannot open it). /bin and /sbin stay
// symlinks into /usr; /opt is left out.
//
// Of those, only codeRoots may hold code the dynamic loader maps; the
// data roots are bound noexec (Debian puts everything that runs under
// lib), and the folders in codeRoots that hold programs are found by the
// program index and bound noexec too.
var (
	programRoots = []string{"/usr", "/bin", "/sbin", "/opt"}
	codeRoots    = []string{"/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/local/lib"}
	dataRoots    = []string{"/usr/share", "/usr/include", "/usr/local/share"}
	libraryRoots = append(slices.Clone(codeRoots), dataRoots...)
)

// copyMax is the largest /etc file of the baseline the init copies into
// the new root rather than binds: copying costs about 18 µs a page here,
// a bind about 40 µs whatever the size.
const copyMax = 16 << 10

// ErrUnsafeGrant means a grant resolves through a symlink the sandbox
// itself could have planted, or into a folder the sandbox hides.
var ErrUnsafeGrant = errors.New("unsafe grant")

// ErrProtection means a protection the permissions need cannot be
// enforced on this host.
var ErrProtection = errors.New("protection unavailable")

// NotFoundError means the command's program was not found.
type NotFoundError struct {
	Program string
	Path    string // the PATH it was looked up on ("": the sandbox's own)
}

func (e *NotFoundError) Error() string {
	if strings.Contains(e.Program, "/") {
		return fmt.Sprintf("%s: no such program (a relative path starts in the work dir)", printable.String(e.Program))
	}
	p := e.Path
	if p == "" {
		p = policyengine.SandboxPATH
	}
	return fmt.Sprintf("%s: command not found on the sandbox's PATH (%s)", printable.String(e.Program), p)
}

// BuildPlan turns permissions and host facts into a Plan. It is pure: the
// same inputs give the same Plan.
func BuildPlan(p policyengine.Permissions, spec Spec, facts *Facts) (*Plan, error) {
	b := &builder{perms: p, spec: spec, facts: facts, gitPaths: map[string]bool{}, plan: &Plan{Hostname: "corral", perms: p, home: spec.Home, keep: spec.Keep,
		Limits: spec.Limits, Trace: spec.Options.TraceInit, LegacyMounts: spec.Options.LegacyMounts, MountPause: spec.Options.MountPause}}
	restricted := p.ExecRestricted()
	b.plan.Exec.Restricted = restricted
	if err := b.command(); err != nil {
		return nil, err
	}
	b.protections()
	b.plan.Landlock = Landlock{ABI: facts.LandlockABI, HandledFS: handledFS(facts.LandlockABI)}
	if facts.LandlockABI >= 4 {
		// The sandbox's network namespace has only lo, and even there
		// nothing may bind over TCP or connect anywhere but the proxy.
		b.plan.Landlock.HandledNet = netBindTCP | netConnectTCP
	}
	b.network()
	b.bindPorts()
	if facts.LandlockABI >= 6 {
		b.plan.Landlock.Scoped = scopeAbstractUnix | scopeSignal
	}
	b.baseline()
	b.grants()
	b.execTargets()
	b.toolchains()
	b.programFolders()
	b.grantsAboveCode()
	b.protected()
	b.devices()
	b.env()
	b.privateHome()
	b.plan.Seccomp = seccomp.Rules(restricted)
	b.workDir()
	b.finishMounts()
	tier := tierOf(spec, facts)
	b.plan.Tier = TierInfo{Name: tier, Why: spec.TierWhy}
	if tier != TierLandlock {
		b.deny()
	}
	if tier == TierLandlock {
		b.landlockTier()
		why := spec.TierWhy
		if why == "" {
			why = orText(facts.UserNSErr, "asked for")
		}
		b.landlockProtections(why)
		b.landlockDeny()
	}
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnsafeGrant, strings.Join(b.errs, "; "))
	}
	for i, r := range b.plan.Landlock.Rules {
		b.plan.Landlock.Rules[i].Rights = rightsString(r.Access)
	}
	if err := b.failClosed(); err != nil {
		return nil, err
	}
	return b.plan, nil
}

type builder struct {
	perms    policyengine.Permissions
	spec     Spec
	facts    *Facts
	plan     *Plan
	binds    []Mount // bind mounts of grants, sorted before use
	restrict []Mount // noexec binds over folders the grants' binds expose
	errs     []string
	// writableReal are the writable roots' real paths (writable).
	writableReal []string
	// nsMounts are the namespaces tier's mounts, for the landlock tier's
	// checks of what they would have hidden.
	nsMounts []Mount
	// gitPaths are the protected paths of git folders (hooks, config,
	// a core.hooksPath folder): the git sweep checks them after a run.
	gitPaths map[string]bool
}

func (b *builder) warn(format string, args ...any) {
	b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf(format, args...))
}

// command resolves argv[0].
func (b *builder) command() error {
	if len(b.spec.Argv) == 0 {
		return nil // explain: a plan without a command
	}
	if b.spec.Argv[0] == "" {
		return errors.New("empty command name")
	}
	prog, ok := b.facts.Programs[b.spec.Argv[0]]
	if !ok || prog.Err != "" {
		return &NotFoundError{Program: b.spec.Argv[0], Path: strings.Join(b.facts.Path, ":")}
	}
	b.plan.Argv = b.spec.Argv
	b.plan.Path = prog.Path
	b.plan.Dir = b.spec.WorkDir
	return nil
}

func (b *builder) rule(p string, access uint64, from string) {
	info := b.facts.file(p)
	if !info.Exists {
		return
	}
	if !info.Dir {
		access &= fileRights
	}
	access &= b.plan.Landlock.HandledFS | fsExecute
	real := info.Real
	for i, r := range b.plan.Landlock.Rules {
		if r.Path == real {
			b.plan.Landlock.Rules[i].Access |= access
			b.plan.Landlock.Rules[i].Rights = rightsString(b.plan.Landlock.Rules[i].Access)
			if !strings.Contains(r.From, from) {
				b.plan.Landlock.Rules[i].From += "; " + from
			}
			return
		}
	}
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: real, Access: access, Rights: rightsString(access), From: from})
}

// restrictExec binds the folder p onto itself read-only and noexec, on
// top of the binds of the grants (a grant below p is bound again above it).
func (b *builder) restrictExec(p, why string) {
	if info := b.facts.file(p); info.Exists && info.Dir && !slices.ContainsFunc(b.restrict, func(m Mount) bool { return m.Target == info.Real }) {
		b.restrict = append(b.restrict, Mount{Kind: MountBind, Source: info.Real, Target: info.Real, ReadOnly: true, NoExec: true, Dir: true, Why: why})
	}
}

// bind adds a bind mount of p (by its real path) to the new root; a
// symlinked p is recreated as a symlink to the real path.
func (b *builder) bind(p string, readOnly, noExec bool, why string) {
	info := b.facts.file(p)
	if !info.Exists {
		return
	}
	if info.Real != p {
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountSymlnk, Source: info.Real, Target: p, Why: why})
	}
	b.binds = append(b.binds, Mount{Kind: MountBind, Source: info.Real, Target: info.Real, ReadOnly: readOnly, NoExec: noExec, Dir: info.Dir, Why: why})
}

// maskedProc are /proc files about the host, not the sandbox, that no
// sandboxed program needs and that say the most: the kernel's command line
// can carry boot secrets (an iSCSI password, a cloud-init seed URL), the
// boot id names the host's boot; the kernel's build configuration, symbols,
// modules and scheduler state help an exploit; the keyrings and per-user
// key counts name keys; the physical memory map describes the machine.
// Each is a mount (about 35 µs a launch), so the rest of what describes
// the hardware (ioports, interrupts, partitions, diskstats, /proc/bus...)
// stays; README.md lists both.
var maskedProc = []string{
	"/proc/cmdline", "/proc/sys/kernel/random/boot_id",
	"/proc/config.gz", "/proc/kallsyms", "/proc/modules", "/proc/keys", "/proc/key-users",
	"/proc/iomem", "/proc/sched_debug",
}

// rootOnlyProc are /proc files only root may read, on the kernel's memory
// layout and internals. When corral runs as root, the sandbox's uid 0 is
// the host's root and their owner bits would open them, so they are
// hidden then too. (kcore also checks a capability the sandbox does not
// have.)
var rootOnlyProc = []string{
	"/proc/kpagecgroup", "/proc/kpagecount", "/proc/kpageflags",
	"/proc/pagetypeinfo", "/proc/slabinfo", "/proc/timer_list", "/proc/vmallocinfo",
	"/proc/kmsg",
}

// grants turns fs.read and fs.write globs into kernel rules and binds.
func (b *builder) grants() {
	restricted := b.plan.Exec.Restricted
	exec := uint64(fsExecute)
	if restricted {
		exec = 0
	}
	for _, w := range []struct {
		entries []policyengine.Entry
		access  uint64
		write   bool
	}{{b.perms.Read, readRights | exec, false}, {b.perms.Write, writeRights | exec, true}} {
		for _, e := range w.entries {
			g, err := policyengine.CompileGlob(e.Value)
			if err != nil {
				b.warn("%s: %v; not granted", e.Value, err)
				continue
			}
			from := e.Value + " (" + strings.Join(e.From, ", ") + ")"
			roots := []string{g.Base()}
			if hidden := hiddenUnder(g.Base()); hidden != "" {
				b.warn("%s covers %s, which the sandbox replaces with a private one; the host's %s is not visible", e.Value, hidden, hidden)
				continue
			}
			switch {
			case g.Subtree(), g.Literal():
			case !w.write && !strings.Contains(e.Value, "**"):
				// A read glob like /ws/data/*.csv: grant exactly the
				// files that match now.
				roots = b.facts.Matches[e.Value]
				b.warn("%s: the kernel grants the %d path(s) matching it at launch; files created later are not readable", e.Value, len(roots))
			default:
				b.warn("%s: the kernel rule covers all of %s, wider than the glob (the policy engine still answers by the glob)", e.Value, g.Base())
			}
			for _, r := range roots {
				if !b.facts.file(r).Exists {
					b.warn("%s: %s does not exist; nothing to grant", e.Value, r)
					continue
				}
				if !b.safeGrant(e.Value, r) {
					continue
				}
				if w.write && restricted && slices.ContainsFunc(mappableRoots(), func(c string) bool { return isUnder(b.facts.file(r).Real, c) }) {
					b.warn("%s is inside a code folder: it is noexec in this run, but what the command writes there can be mapped as a library by later runs with an exec allowlist and by the host's programs", e.Value)
				}
				if w.write {
					real := b.facts.file(r).Real
					if i := slices.IndexFunc(b.facts.StateDirs, func(d string) bool { return isUnder(d, real) || isUnder(real, d) }); i >= 0 {
						b.errs = append(b.errs, fmt.Sprintf("%s reaches %s, where corral keeps its program index, mount cache and records of unfinished runs: a sandbox that could write there could hide programs from the exec allowlist of later runs, slow them down, or have a later corral act on paths it chose", e.Value, b.facts.StateDirs[i]))
						continue
					}
				}
				if sr := socketRootOf(b.facts.file(r).Real); sr != "" {
					b.warn("%s is inside %s, which holds the host's service sockets (systemd, D-Bus, container engines; a command that reaches them can run programs outside the sandbox): not granted", e.Value, sr)
					continue
				}
				b.rule(r, w.access, from)
				// A read grant that holds a code root (/usr/local/**)
				// stays exec so the libraries there map; grantsAboveCode
				// binds everything else it holds noexec. A write grant
				// is noexec whatever it holds.
				b.bind(r, !w.write, restricted && (w.write || len(aboveCode(b.facts.file(r).Real)) == 0), from)
			}
		}
	}
}

// safeGrant refuses a grant whose path goes through a symlink inside the
// work dir or a writable grant (an earlier run could have planted it to
// point the grant anywhere) or that lands in a folder the sandbox hides.
func (b *builder) safeGrant(glob, p string) bool {
	info := b.facts.file(p)
	for _, link := range info.Links {
		for _, writable := range b.writableRoots() {
			if strings.HasPrefix(link, writable+"/") {
				b.errs = append(b.errs, fmt.Sprintf("%s resolves through the symlink %s inside the writable %s, which a sandboxed command could have planted (it points to %s); remove the link or grant the real path", glob, printable.String(link), writable, printable.String(info.Real)))
				return false
			}
		}
	}
	if h := hiddenUnder(info.Real); h != "" && info.Real != p {
		b.errs = append(b.errs, fmt.Sprintf("%s resolves to %s, inside %s, which the sandbox keeps private", glob, info.Real, h))
		return false
	}
	return true
}

// writableRoots are the folders a sandboxed command can write: the work
// dir (writable in the default sandbox, so an earlier run may have written
// there) and the bases of the write grants.
func (b *builder) writableRoots() []string {
	roots := []string{b.spec.WorkDir}
	for _, w := range b.perms.Write {
		if g, err := policyengine.CompileGlob(w.Value); err == nil {
			roots = append(roots, g.Base())
		}
	}
	return roots
}

// privateHomeWhy is the private HOME's Mount.Why and PathRule.From.
const privateHomeWhy = "private HOME (no grant covers it; gone after the run but for its caches)"

// privateHome gives the command a HOME it can write when no grant covers
// the real one: a fresh tmpfs at the same path, gone after the run.
// Tools write ~/.cache, ~/.npm or ~/.config as a matter of course and
// fail where HOME does not exist; nothing written there reaches the
// host's home, so no startup file or tool config can persist. Grants
// inside HOME are bound on top of it. A HOME that is /, the work dir, in
// or above a system folder (/usr, /etc, /var, ...), or inside /proc,
// /dev, /sys or /run is left as it is.
func (b *builder) privateHome() {
	home := b.envHome()
	if home == "" || !path.IsAbs(home) || path.Clean(home) != home || home == "/" || home == b.spec.WorkDir || b.homeGranted() {
		return
	}
	for _, r := range []string{"/proc", "/dev", "/sys", "/run", "/var/run"} {
		if isUnder(home, r) {
			return
		}
	}
	for _, r := range append(slices.Clone(programRoots), "/etc", "/var", "/lib", "/lib64", "/lib32", "/srv", "/nix", "/snap", "/boot") {
		if isUnder(r, home) || isUnder(home, r) {
			return
		}
	}
	// A write grant in HOME whose path is missing has nothing to bind:
	// a write there would land in the private HOME and be lost without
	// a word. (exec creates the folders of whole-folder grants first.)
	for _, e := range b.perms.Write {
		g, err := policyengine.CompileGlob(e.Value)
		if err == nil && isUnder(g.Base(), home) && !b.facts.file(g.Base()).Exists {
			b.warn("HOME (%s) is not made private: %s is missing, and what the command wrote there would be lost in a private HOME; create it to get a writable private HOME", home, e.Value)
			return
		}
	}
	if len(home) > 1024 {
		return // the init's paths have room for a mount target this long only
	}
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountTmpfs, Target: home, NoExec: b.plan.Exec.Restricted, Why: privateHomeWhy})
	exec := uint64(fsExecute)
	if b.plan.Exec.Restricted {
		exec = 0
	}
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: home, Access: (writeRights | exec) & b.plan.Landlock.HandledFS, From: privateHomeWhy})
	b.homeCaches(home)
}

// workDir makes sure the work dir exists in the new root, so the command
// can start there even when no grant covers it.
func (b *builder) workDir() {
	if b.spec.WorkDir != "" {
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountDir, Target: b.spec.WorkDir, Why: "the command's working directory"})
	}
}

// Nested repositories are looked for this deep below each writable root
// (root/vendor/lib/.git is 2), reading at most nestedBudget folders: each
// read costs 7 to 25 µs, on every launch.
const (
	nestedDepth  = 2
	nestedBudget = 64
)

// devices gives the sandbox a minimal /dev.
func (b *builder) devices() {
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountTmpfs, Target: "/dev", Why: "minimal /dev"})
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		p := "/dev/" + d
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountDev, Source: p, Target: p, Why: "minimal /dev"})
		access := uint64(fsReadFile | fsWriteFile | fsIoctlDev)
		b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: p, Access: access & b.plan.Landlock.HandledFS, From: "minimal /dev"})
	}
	for _, l := range [][2]string{{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}} {
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountSymlnk, Source: l[1], Target: l[0], Why: "minimal /dev"})
	}
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountTmpfs, Target: "/dev/shm", NoExec: b.plan.Exec.Restricted, Why: "private /dev/shm"})
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: "/dev/shm", Access: writeRights & b.plan.Landlock.HandledFS, From: "private /dev/shm"})
}

// finishMounts orders the mounts: grants parent-first, so a writable
// folder inside a read-only one is bound on top of it, and a grant already
// covered by an equal or wider one is dropped.
func (b *builder) finishMounts() {
	binds := b.binds
	sort.SliceStable(binds, func(i, j int) bool { return binds[i].Target < binds[j].Target })
	var kept []Mount
	for _, m := range binds {
		covered := false
		for i := len(kept) - 1; i >= 0; i-- {
			k := kept[i]
			if k.Target == m.Target {
				// The same path twice: the union of both.
				kept[i].ReadOnly = k.ReadOnly && m.ReadOnly
				kept[i].NoExec = k.NoExec && m.NoExec
				kept[i].Why = k.Why + "; " + m.Why
				covered = true
				break
			}
			if isUnder(m.Target, k.Target) {
				covered = (!k.ReadOnly || m.ReadOnly) && (!k.NoExec || m.NoExec)
				// A noexec grant inside an exec bind (a grant in /usr
				// with an exec allowlist) narrows it, except a read grant
				// in the code roots, which the program index covers and
				// which must stay mappable for libraries.
				// A writable grant stays noexec everywhere: what the
				// command writes must never be mappable.
				if m.NoExec && !k.NoExec && (!m.ReadOnly || !slices.ContainsFunc(mappableRoots(), func(r string) bool { return isUnder(m.Target, r) })) {
					covered = false
				}
				break
			}
		}
		if !covered {
			kept = append(kept, m)
		}
	}
	// Private mounts first (/tmp, /proc, /dev), then grants (a work dir
	// inside /tmp lands in the private /tmp), then symlinks, then the
	// protected paths on top of the grants that hold them.
	var private, links, protected, dirs, copies []Mount
	seenLink := map[string]bool{}
	for _, m := range b.plan.Mounts {
		switch {
		case m.Kind == MountDir:
			dirs = append(dirs, m)
		case m.Kind == MountSymlnk:
			if !seenLink[m.Target] {
				seenLink[m.Target] = true
				links = append(links, m)
			}
		case m.Kind == MountBind:
			protected = append(protected, m)
		case m.Kind == MountCopy:
			copies = append(copies, m)
		default:
			private = append(private, m)
		}
	}
	// Folders bound noexec on top of the grants, then whatever was bound
	// below them again on top (an allowed program, a granted folder):
	// one sorted pass, since each bind covers only what was bound before.
	restrict := b.restrict
	sort.SliceStable(restrict, func(i, j int) bool { return restrict[i].Target < restrict[j].Target })
	// A restriction is about noexec: inside (or over) a writable grant it
	// keeps the grant's writability (the later bind decides the flags).
	for i, r := range restrict {
		nearest := -1
		for j, k := range kept {
			if isUnder(r.Target, k.Target) && (nearest < 0 || len(k.Target) > len(kept[nearest].Target)) {
				nearest = j
			}
		}
		if nearest >= 0 && !kept[nearest].ReadOnly && r.NoExec {
			restrict[i].ReadOnly = false
		}
	}
	under := func(m Mount) bool {
		return slices.ContainsFunc(restrict, func(r Mount) bool { return m.Target != r.Target && isUnder(m.Target, r.Target) })
	}
	var above, below []Mount
	for _, m := range binds {
		if under(m) && !(m.ReadOnly && m.NoExec) {
			above = append(above, m) // bound again on top
		}
	}
	for _, m := range kept {
		if !under(m) {
			below = append(below, m) // the rest is hidden by the restriction
		}
	}
	kept = below
	layered := append(restrict, above...)
	sort.SliceStable(layered, func(i, j int) bool { return layered[i].Target < layered[j].Target })
	// Copies go first: a grant that binds /etc itself then covers them.
	b.plan.Mounts = append(append(append(append(append(append(copies, private...), kept...), layered...), links...), protected...), dirs...)
}

// env keeps the variables the env rules allow and sets the sandbox's own.
func (b *builder) env() {
	set := map[string]string{}
	allowed := append(policyengine.Values(b.perms.Env), "LANG", "LANGUAGE", "LC_*", "TERM", "TZ")
	for _, kv := range b.spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, a := range allowed {
			if prefix, wild := strings.CutSuffix(a, "*"); (wild && strings.HasPrefix(k, prefix)) || a == k {
				set[k] = v
			}
		}
		if k == "HOME" {
			set[k] = v
		}
	}
	if b.plan.Proxy != nil {
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
			set[k], set[strings.ToLower(k)] = ProxyURL, ProxyURL
		}
		set["NO_PROXY"], set["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	}
	set["PATH"] = policyengine.SandboxPATH
	if len(b.facts.Path) > 0 {
		set["PATH"] = strings.Join(b.facts.Path, ":")
	}
	set["TMPDIR"] = "/tmp"
	if len(b.perms.Network) == 0 {
		// Without network a retry can only wait: npm retries even "no
		// such name" for 70 s, pip for about 8.
		for k, v := range noNetworkEnv {
			if _, ok := set[k]; !ok {
				set[k] = v
			}
		}
	}
	for _, kv := range b.spec.SetEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set[k] = v
		}
	}
	if _, ok := set["HOME"]; !ok {
		set["HOME"] = b.spec.WorkDir
	}
	if _, ok := set["LANG"]; !ok {
		set["LANG"] = "C.UTF-8"
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.plan.Env = append(b.plan.Env, k+"="+set[k])
	}
}

// noNetworkEnv are the variables a sandbox without network gets (unless
// the caller's pass): package managers that retry a failed fetch with
// back-off are told not to, since nothing can reach them.
var noNetworkEnv = map[string]string{"npm_config_fetch_retries": "0", "PIP_RETRIES": "0"}

// ProxyPort is where the egress proxy listens inside a sandbox, on
// 127.0.0.1 and [::1].
const ProxyPort = 3128

// DNSPort is where the sandbox's resolver (corral's fake DNS) answers, on
// 127.0.0.1, when egress is transparent.
const DNSPort = 53

// ProxyURL is what the sandbox's HTTP_PROXY and friends say.
var ProxyURL = "http://127.0.0.1:" + strconv.Itoa(ProxyPort)

// network plans the egress proxy when any skill allows network access;
// without a rule there is no proxy and no way out at all.
func (b *builder) network() {
	if len(b.perms.Network) == 0 {
		b.plan.Resolver = DNSPort
		return
	}
	b.plan.Proxy = &ProxyPlan{Port: ProxyPort, Rules: len(b.perms.Network), DNSPort: DNSPort,
		Addrs: []string{"127.0.0.1:" + strconv.Itoa(ProxyPort), "[::1]:" + strconv.Itoa(ProxyPort)}}
	if b.plan.Landlock.HandledNet&netConnectTCP != 0 {
		b.plan.Landlock.PortRules = append(b.plan.Landlock.PortRules, PortRule{Port: ProxyPort, Access: netConnectTCP,
			Rights: "connect_tcp", From: "the egress proxy"})
	}
}

// bindPorts lets the command listen on the network.bind ports (and connect to
// them) inside its network namespace: Landlock's TCP bind and connect
// rules per port, or, for "*", no TCP rule at all, the namespace's lo
// being all there is to reach.
func (b *builder) bindPorts() {
	ports, any := b.perms.BindPorts()
	if any {
		b.plan.Landlock.HandledNet = 0
		b.plan.Landlock.PortRules = nil
		return
	}
	if b.plan.Landlock.HandledNet == 0 {
		return
	}
	for _, p := range ports {
		b.plan.Landlock.PortRules = append(b.plan.Landlock.PortRules, PortRule{Port: p, Access: netBindTCP | netConnectTCP,
			Rights: "bind_tcp, connect_tcp", From: "network.bind " + strconv.Itoa(p)})
	}
}

// joinInts writes ports as "80, 8080".
func joinInts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// required are the protections a run refuses to go without.
var required = map[string]bool{"tier": true, "namespaces": true, "landlock-fs": true, "seccomp": true, "capabilities": true, "network": true, "private-mounts": true, "exec-allowlist": true, "memfd-noexec": true}

// absIn returns p, or p inside dir when p is relative.
func absIn(dir, p string) string {
	if path.IsAbs(p) {
		return p
	}
	return path.Join(dir, p)
}

// isUnder reports whether p is root or inside it.
func isUnder(p, root string) bool {
	return p == root || root == "/" || len(p) > len(root) && p[len(root)] == '/' && strings.HasPrefix(p, root)
}

// hiddenUnder returns the hidden root that p is, or is inside, or "".
// A grant of a folder inside /tmp (a work dir under /tmp) is fine; a
// grant of /tmp itself, or of / which contains it, is not bound.
func hiddenUnder(p string) string {
	for _, h := range hiddenRoots {
		if p == h || isUnder(h, p) {
			return h
		}
	}
	return ""
}
