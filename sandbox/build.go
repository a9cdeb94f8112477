package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"corral/policyengine"
	"corral/printable"
	"corral/sandbox/seccomp"
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
type NotFoundError struct{ Program string }

func (e *NotFoundError) Error() string {
	if strings.Contains(e.Program, "/") {
		return fmt.Sprintf("%s: no such program (a relative path starts in the work dir)", printable.String(e.Program))
	}
	return fmt.Sprintf("%s: command not found on the sandbox's PATH (%s)", printable.String(e.Program), policyengine.SandboxPATH)
}

// BuildPlan turns permissions and host facts into a Plan. It is pure: the
// same inputs give the same Plan.
func BuildPlan(p policyengine.Permissions, spec Spec, facts *Facts) (*Plan, error) {
	b := &builder{perms: p, spec: spec, facts: facts, plan: &Plan{Hostname: "corral", perms: p, home: spec.Home, keep: spec.Keep}}
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
	if facts.LandlockABI >= 6 {
		b.plan.Landlock.Scoped = scopeAbstractUnix | scopeSignal
	}
	b.baseline()
	b.grants()
	b.execTargets()
	b.programFolders()
	b.grantsAboveCode()
	b.protected()
	b.devices()
	b.env()
	b.plan.Seccomp = seccomp.Rules(restricted)
	b.workDir()
	b.finishMounts()
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
		return &NotFoundError{Program: b.spec.Argv[0]}
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

// baseline grants the system files every program needs, read-only.
func (b *builder) baseline() {
	restricted := b.plan.Exec.Restricted
	exec := uint64(fsExecute)
	if restricted {
		exec = 0
	}
	for _, glob := range policyengine.SystemRead {
		root := strings.TrimSuffix(glob, "/**")
		if isUnder(root, "/proc") || isUnder(root, "/dev") || isUnder(root, "/tmp") {
			continue // private mounts, set up below
		}
		roots := []string{root}
		if restricted && slices.Contains(programRoots, root) {
			roots = nil
			if root == "/usr" {
				roots = libraryRoots
				b.bind(root, true, false, policyengine.SystemSource+" (Landlock: only library folders and allowed programs)")
				for _, d := range dataRoots {
					b.restrictExec(d, "data, not code: noexec, so the dynamic loader cannot map a program from it")
				}
			}
			if info := b.facts.file(root); info.Exists && info.Real != root {
				// /bin -> usr/bin stays, so #!/bin/sh finds an allowed sh.
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountSymlnk, Source: info.Real, Target: root, Why: policyengine.SystemSource})
			}
		}
		for _, r := range roots {
			if content, ok := b.generatedEtc(r); ok {
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountFile, Source: content, Target: r, Why: policyengine.SystemSource + " (made for the sandbox, not the host's)"})
				b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: r, Access: readRights & fileRights & b.plan.Landlock.HandledFS, From: policyengine.SystemSource})
				continue
			}
			if r == "/etc/gitconfig" && b.facts.GitconfigSecret != "" {
				b.warn("/etc/gitconfig is left out of the system baseline: it holds %s; add it to fs.read if git in the sandbox needs it", b.facts.GitconfigSecret)
				continue
			}
			if restricted && isUnder(r, "/usr") {
				b.rule(r, readRights, policyengine.SystemSource)
				continue // inside the /usr bind
			}
			if r == "/usr" && b.usrRules(readRights|exec) {
				b.bind(r, true, false, policyengine.SystemSource)
				continue
			}
			b.rule(r, readRights|exec, policyengine.SystemSource)
			if info := b.facts.file(r); info.Exists && !info.Dir && info.Real == r && isUnder(r, "/etc") && info.Size <= copyMax {
				// Small /etc files are copied into the new root: a copy
				// costs a few syscalls, a bind a mount and its teardown.
				// A larger one is bound: the copy's pages cost more
				// (mime.types, 72 KiB, took 0.3 ms to copy here).
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountCopy, Source: r, Target: r, Why: policyengine.SystemSource})
				continue
			}
			// With an exec allowlist only the folders the program index
			// covers may hold code to map.
			b.bind(r, true, restricted && !slices.Contains(mappableRoots(), r), policyengine.SystemSource)
		}
	}
	// The private /tmp is the sandbox's own.
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountTmpfs, Target: "/tmp", NoExec: restricted, Why: "private /tmp; the host's /tmp (and its sockets) stays hidden"})
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: "/tmp", Access: (writeRights | exec) & b.plan.Landlock.HandledFS, From: "private /tmp"})
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountProc, Target: "/proc", Why: "private /proc showing only the sandbox's processes"})
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: "/proc", Access: readRights, From: "private /proc"})
	masked := maskedProc
	if b.facts.Uid == 0 {
		masked = append(slices.Clone(masked), rootOnlyProc...)
	}
	for _, p := range masked {
		if b.facts.file(p).Exists {
			b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountBind, Source: "/dev/null", Target: p, ReadOnly: true, Why: "the host's kernel state, which no sandboxed program needs: /dev/null on a nodev mount, so opening it fails"})
		}
	}
}

// generatedEtc returns the sandbox's own version of an /etc file the
// host's copy would say too much in: its users (only root and nobody are
// ever seen in the user namespace), its host names and its resolver (the
// sandbox has no DNS).
func (b *builder) generatedEtc(p string) (string, bool) {
	switch p {
	case "/etc/passwd":
		return "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", true
	case "/etc/group":
		return "root:x:0:\nnogroup:x:65534:\n", true
	case "/etc/hosts":
		return "127.0.0.1\tlocalhost\n127.0.1.1\t" + b.plan.Hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n", true
	case "/etc/resolv.conf":
		return "# No DNS in the sandbox: corral's egress proxy resolves the names it allows.\n", true
	}
	return "", false
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

// usrRules grants access on each folder in /usr and /usr/local but the
// configuration folders (policyengine.SystemHidden); false when the probe
// could not list them, and /usr is then granted whole. /usr itself gets
// no rule: listing it would list the hidden folders too (Landlock rights
// hold for everything below a rule), and walking through it needs none.
func (b *builder) usrRules(access uint64) bool {
	usr, ok := b.facts.Listings["/usr"]
	if !ok {
		return false
	}
	local, ok := b.facts.Listings["/usr/local"]
	if !ok && slices.Contains(usr, "local") {
		b.warn("could not list /usr/local: it is readable whole, /usr/local/etc too")
		b.rule("/usr/local", access, policyengine.SystemSource)
	}
	for _, dir := range []struct {
		path  string
		names []string
	}{{"/usr", usr}, {"/usr/local", local}} {
		base := b.facts.file(dir.path).Real // /usr/local may be a link
		for _, n := range dir.names {
			p := path.Join(dir.path, n)
			// A symlink gets no rule of its own: it could point at a
			// hidden folder (conf -> etc) or above (up -> ..); where it
			// points inside /usr (lib64 -> lib), that folder's rule holds.
			if p == "/usr/local" || slices.Contains(policyengine.SystemHidden, p) || b.facts.file(p).Real != path.Join(base, n) {
				continue
			}
			b.rule(p, access, policyengine.SystemSource)
		}
	}
	return true
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
						b.errs = append(b.errs, fmt.Sprintf("%s reaches %s, where corral keeps its program index and mount cache: a sandbox that could write there could hide programs from the exec allowlist of later runs, or slow them down", e.Value, b.facts.StateDirs[i]))
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

// workDir makes sure the work dir exists in the new root, so the command
// can start there even when no grant covers it.
func (b *builder) workDir() {
	if b.spec.WorkDir != "" {
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountDir, Target: b.spec.WorkDir, Why: "the command's working directory"})
	}
}

// execTargets grants read and execute on the allowed programs and the
// interpreters they need, and nothing else.
func (b *builder) execTargets() {
	if !b.plan.Exec.Restricted {
		return
	}
	seen := map[string]bool{}
	add := func(p, from string) {
		if p == "" || seen[p] {
			return
		}
		seen[p] = true
		b.plan.Exec.Allowed = append(b.plan.Exec.Allowed, ExecTarget{Path: p, From: from})
		b.rule(p, fsReadFile|fsExecute, from)
		b.binds = append(b.binds, Mount{Kind: MountBind, Source: p, Target: p, ReadOnly: true, Why: from})
	}
	for _, e := range b.perms.Exec {
		prog, ok := b.facts.Programs[e.Value]
		if !ok || prog.Err != "" {
			b.warn("exec entry %s (%s) is not installed on the sandbox's PATH; nothing to allow", e.Value, strings.Join(e.From, ", "))
			continue
		}
		add(prog.Real, "exec "+e.Value+" ("+strings.Join(e.From, ", ")+")")
		links := make([]string, 0, len(prog.Links))
		for link := range prog.Links {
			links = append(links, link)
		}
		sort.Strings(links)
		for _, link := range links {
			b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountSymlnk, Source: prog.Links[link], Target: link, Why: "exec " + e.Value})
		}
		for _, in := range prog.Interpreters {
			add(in, "interpreter of "+e.Value)
		}
		for _, w := range b.perms.Write {
			if g, err := policyengine.CompileGlob(w.Value); err == nil && g.Match(prog.Real) {
				b.warn("exec entry %s is %s, inside the writable %s: the command can replace it", e.Value, printable.String(prog.Real), w.Value)
			}
		}
	}
	sort.Slice(b.plan.Exec.Allowed, func(i, j int) bool { return b.plan.Exec.Allowed[i].Path < b.plan.Exec.Allowed[j].Path })
}

// mappableRoots are the system folders that, with an exec allowlist, the
// sandbox can read and map code from: the code roots inside /usr and the
// baseline folders outside /usr and /etc (/lib and /lib64 where they are
// not symlinks into /usr). Granted folders, data roots and /etc's folders
// are bound noexec.
func mappableRoots() []string { return mappable }

var mappable = findMappableRoots()

func findMappableRoots() []string {
	roots := slices.Clone(codeRoots)
	for _, glob := range policyengine.SystemRead {
		root, ok := strings.CutSuffix(glob, "/**")
		if !ok || slices.Contains(programRoots, root) || isUnder(root, "/etc") || hiddenUnder(root) != "" || slices.ContainsFunc(hiddenRoots, func(h string) bool { return isUnder(root, h) }) {
			continue
		}
		roots = append(roots, root)
	}
	return roots
}

// aboveCode returns the folders from base down to the code roots below it
// (base itself included), when base is a strict ancestor of one: a grant
// of base makes everything in them readable.
func aboveCode(base string) []string {
	if base == "" {
		return nil
	}
	var out []string
	for _, r := range mappableRoots() {
		if r == base || !isUnder(r, base) {
			continue
		}
		for d := path.Dir(r); isUnder(d, base); d = path.Dir(d) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
			if d == base {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// grantsAboveCode binds noexec what a read grant covering a code root
// (/usr/**) makes readable besides the code roots: /usr/bin, /usr/sbin,
// /usr/local/bin... The grant's own bind stays exec, as the code roots
// need. (A write grant is noexec as a whole.)
func (b *builder) grantsAboveCode() {
	if !b.plan.Exec.Restricted {
		return
	}
	for _, e := range b.perms.Read {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil || hiddenUnder(g.Base()) != "" {
			continue // not bound at all (a grant of / holds /tmp)
		}
		for _, dir := range aboveCode(b.facts.file(g.Base()).Real) {
			for _, name := range b.facts.Listings[dir] {
				child := path.Join(dir, name)
				if slices.ContainsFunc(mappableRoots(), func(r string) bool { return isUnder(r, child) }) || hiddenUnder(child) != "" {
					continue // a code root or on the way to one, or private
				}
				b.restrictExec(child, "readable through "+e.Value+", which covers a code root: noexec, so the dynamic loader cannot map a program from it")
			}
		}
	}
}

// programFolders binds noexec every folder the sandbox could map code
// from that holds programs, so the allowed dynamic loader cannot run them
// (ld.so PROGRAM opens PROGRAM for reading and maps it; Landlock does not
// check mmap). A noexec bind covers the folder's whole tree, so what below
// it must stay mappable is bound again on top, executable: folders of
// libraries (plugins), and the folders an allowed program names in its
// RPATH (those stay mappable even if they hold programs, and explain says
// so). Allowed programs inside a noexec folder are bound again too (see
// finishMounts).
func (b *builder) programFolders() {
	idx := b.facts.ProgramIndex
	if !b.plan.Exec.Restricted || idx == nil {
		return
	}
	if idx.Stopped {
		b.errs = append(b.errs, "the program index was not read ("+idx.Source+"): the exec allowlist cannot be enforced")
		return
	}
	type layer struct {
		path string
		exec bool
		why  string
	}
	var layers []layer
	rpath := map[string]string{}
	for _, e := range b.perms.Exec {
		for _, d := range b.facts.Programs[e.Value].LibraryDirs {
			if slices.ContainsFunc(mappableRoots(), func(r string) bool { return isUnder(d, r) }) {
				rpath[d] = e.Value
			}
		}
	}
	var kept []string
	for _, f := range idx.Folders {
		if by, ok := rpath[f]; ok {
			kept = append(kept, f+" (for "+by+")")
			continue
		}
		layers = append(layers, layer{f, false, "holds programs outside the exec allowlist: noexec, so the dynamic loader cannot map them"})
	}
	for _, f := range idx.Libraries {
		layers = append(layers, layer{f, true, "holds libraries below a folder of programs: mappable"})
	}
	for d, by := range rpath {
		layers = append(layers, layer{d, true, "in the RPATH of " + by + ": mappable"})
	}
	slices.SortStableFunc(layers, func(x, y layer) int { return strings.Compare(x.path, y.path) })
	// Emit a layer only where it changes what its nearest emitted
	// ancestor (or the exec /usr bind) allows.
	var stack []layer
	for _, l := range layers {
		for len(stack) > 0 && !isUnder(l.path, stack[len(stack)-1].path) {
			stack = stack[:len(stack)-1]
		}
		parentExec := len(stack) == 0 || stack[len(stack)-1].exec
		if l.exec == parentExec || len(stack) > 0 && stack[len(stack)-1].path == l.path {
			continue
		}
		stack = append(stack, l)
		b.restrict = append(b.restrict, Mount{Kind: MountBind, Source: l.path, Target: l.path, ReadOnly: true, NoExec: !l.exec, Dir: true, Why: l.why})
	}
	if len(kept) > 0 {
		sort.Strings(kept)
		b.warn("exec allowlist: these folders hold other programs but stay mappable, because allowed programs load libraries from them (RPATH), so those programs can be started through the dynamic loader: %s", strings.Join(kept, ", "))
	}
}

// Nested repositories are looked for this deep below each writable root
// (root/vendor/lib/.git is 2), reading at most nestedBudget folders: each
// read costs 7 to 25 µs, on every launch.
const (
	nestedDepth  = 2
	nestedBudget = 64
)

// protected keeps paths that run code later read-only inside writable
// roots: policyengine.ProtectedPaths, the skills and policies of the run,
// and the git folders found there.
func (b *builder) protected() {
	b.homeAlert()
	named := b.writeBases()
	planned := map[string]bool{} // quarantine entries, once across roots
	// Pins of every root first, then the read-only binds: a pin (a bind
	// of the host's folder) placed later would cover them.
	var pinMounts, roMounts []Mount
	for _, w := range b.perms.Write {
		g, err := policyengine.CompileGlob(w.Value)
		if err != nil || hiddenUnder(g.Base()) != "" {
			continue
		}
		root := b.facts.file(g.Base())
		if !root.Exists || !root.Dir {
			continue
		}
		b.plan.WriteRoots = append(b.plan.WriteRoots, root.Real)
		why := "protected path inside writable " + w.Value
		var paths []string
		whys := map[string]string{}
		// Every folder from the root down to a git folder becomes a mount
		// point, writable as the root is: renaming a mount point fails
		// with EBUSY, so neither the git folder nor a folder above it
		// can be moved away from its read-only hooks and config and
		// replaced by a copy with a hook.
		pins := map[string]bool{}
		pin := func(p string) {
			for d := p; d != root.Real && isUnder(d, root.Real); d = path.Dir(d) {
				if info := b.facts.file(d); info.Exists && info.Dir && info.Real == d {
					pins[d] = true
				}
			}
		}
		quarantine := func(q Quarantine) {
			if !planned[q.Path] {
				planned[q.Path] = true
				b.plan.Quarantine = append(b.plan.Quarantine, q)
			}
		}
		for _, t := range append(protectedIn(root.Real, b.facts.Home), keptIn(root.Real, b.spec.Keep, b.facts)...) {
			if named[t.Path] && !t.Kept {
				continue // a grant names it: the user means it
			}
			info := b.facts.file(t.Path)
			links := info.Links
			if !info.Exists && !gitTarget(t.Path) {
				q, above, ok := b.missing(t)
				if ok {
					pin(q.From)
					quarantine(q)
				}
				links = above
			}
			for _, l := range links {
				// A link the command can replace: after the run the path
				// must still lead where it did.
				if b.writable(l) {
					quarantine(Quarantine{Path: l, Real: b.facts.file(l).Real, Why: t.Why})
				}
			}
			if info.Exists {
				pin(path.Dir(t.Path))
				paths = append(paths, t.Path)
				whys[t.Path] = why + ": " + t.Why
				if info.Real != t.Path && b.writable(info.Real) {
					paths = append(paths, info.Real)
					whys[info.Real] = why + ": " + t.Why + " (where " + t.Path + " leads)"
				}
			}
		}
		gits := []string{path.Join(root.Real, ".git")}
		for _, g := range b.facts.Gits {
			if strings.HasPrefix(g, root.Real+"/") && !slices.Contains(gits, g) {
				gits = append(gits, g)
			}
		}
		for _, git := range gits {
			info := b.facts.file(git)
			switch {
			case !info.Exists || info.Real != git:
			case info.Dir:
				pin(git)
				paths = append(paths, git+"/hooks", git+"/config", git+"/commondir", git+"/config.worktree", git+"/info/attributes")
			default:
				// A .git file names the repository's git folder:
				// rewritten, it would send git to hooks the command made.
				pin(path.Dir(git))
				paths = append(paths, git)
			}
		}
		// Submodules' and worktrees' git folders: the same, plus the
		// files that send git elsewhere (commondir, gitdir).
		for _, m := range append(slices.Clone(b.facts.Submodules), b.facts.Worktrees...) {
			if strings.HasPrefix(m, root.Real+"/") {
				pin(m)
				paths = append(paths, m+"/hooks", m+"/config", m+"/commondir", m+"/gitdir", m+"/config.worktree", m+"/info/attributes")
			}
		}
		for _, hp := range b.facts.HooksPaths {
			if isUnder(hp, root.Real) && hp != root.Real {
				pin(path.Dir(hp))
				paths = append(paths, hp)
			}
		}
		dirs := slices.Sorted(maps.Keys(pins)) // parents first
		for _, d := range dirs {
			pinMounts = append(pinMounts, Mount{Kind: MountBind, Source: d, Target: d, NoExec: b.plan.Exec.Restricted, Dir: true, Why: why + " (pinned in place)"})
		}
		slices.Sort(paths)
		paths = slices.Compact(paths)
		for _, p := range paths {
			if info, known := b.facts.Files[p]; known && !info.Exists && (path.Base(p) == "commondir" || path.Base(p) == "config.worktree") {
				b.plan.MustNotAppear = append(b.plan.MustNotAppear, p)
			}
		}
		for _, p := range paths {
			info := b.facts.file(p)
			switch {
			case !info.Exists || info.Real == p || !slices.ContainsFunc(info.Links, func(l string) bool { return isUnder(l, root.Real) }):
			case slices.Contains(paths, info.Real):
				b.warn("%s is a symlink inside the writable %s (to %s): its target is kept read-only, and after the run corral checks the link still leads there", printable.String(p), w.Value, printable.String(info.Real))
			default:
				b.warn("%s is a symlink inside the writable %s (to %s): corral cannot keep a link the command can replace read-only", printable.String(p), w.Value, printable.String(info.Real))
			}
		}
		for _, p := range paths {
			if info := b.facts.file(p); info.Exists && info.Real == p {
				// noexec with an exec allowlist: a bind without it would
				// make what an earlier run wrote there executable.
				reason := why
				if whys[p] != "" {
					reason = whys[p]
				}
				roMounts = append(roMounts, Mount{Kind: MountBind, Source: p, Target: p, ReadOnly: true, NoExec: b.plan.Exec.Restricted, Dir: info.Dir, Why: reason})
				b.plan.Protected = append(b.plan.Protected, p)
			}
		}
		if slices.Contains(b.facts.NestedCut, root.Real) {
			b.warn("%s: nested repositories were looked for in the first %d folders only (%d levels deep, not in hidden folders, node_modules, __pycache__ or target); the .git folders of others stay writable", w.Value, nestedBudget, nestedDepth)
		}
	}
	byTarget := func(x, y Mount) int { return strings.Compare(x.Target, y.Target) }
	slices.SortStableFunc(pinMounts, byTarget) // parents first
	slices.SortStableFunc(roMounts, byTarget)
	b.plan.Mounts = append(append(b.plan.Mounts, pinMounts...), roMounts...)
	b.sshSecrets()
}

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
	set["TMPDIR"] = "/tmp"
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

// ProxyPort is where the egress proxy listens inside a sandbox, on
// 127.0.0.1 and [::1].
const ProxyPort = 3128

// ProxyURL is what the sandbox's HTTP_PROXY and friends say.
var ProxyURL = "http://127.0.0.1:" + strconv.Itoa(ProxyPort)

// network plans the egress proxy when any skill allows network access;
// without a rule there is no proxy and no way out at all.
func (b *builder) network() {
	if len(b.perms.Network) == 0 {
		return
	}
	b.plan.Proxy = &ProxyPlan{Port: ProxyPort, Rules: len(b.perms.Network),
		Addrs: []string{"127.0.0.1:" + strconv.Itoa(ProxyPort), "[::1]:" + strconv.Itoa(ProxyPort)}}
	if b.plan.Landlock.HandledNet&netConnectTCP != 0 {
		b.plan.Landlock.PortRules = append(b.plan.Landlock.PortRules, PortRule{Port: ProxyPort, Access: netConnectTCP,
			Rights: "connect_tcp", From: "the egress proxy"})
	}
}

// protections lists what is enforced.
func (b *builder) protections() {
	f := b.facts
	add := func(name string, ok bool, detail string) {
		b.plan.Protections = append(b.plan.Protections, Protection{Name: name, Enforced: ok, Detail: detail})
	}
	if f.OS == "darwin" {
		// macOS: one Seatbelt profile (package seatbelt) enforces files,
		// programs and network; none of the Linux features apply.
		net := "no network.allow rule: no outbound connection at all (no UDP, no DNS, no UNIX socket)"
		if len(b.perms.Network) > 0 {
			net = fmt.Sprintf("outbound TCP only to corral's egress proxy on 127.0.0.1 (a port chosen per run), enforcing %d network.allow rule(s); no UDP, no DNS, no UNIX socket", len(b.perms.Network))
		}
		add("seatbelt", true, "sandbox-exec with a deny-by-default profile rendered from the permissions")
		add("filesystem", true, "reads only fs.read, fs.write, the macOS system baseline and a private TMPDIR; writes only fs.write and that TMPDIR; protected paths inside writable roots (.git/hooks, .git/config, shell start-up files) read-only")
		add("network", true, net)
		if b.plan.Exec.Restricted {
			add("exec-allowlist", true, "only the allowed programs (and the shells /bin/sh starts) may run; code is mapped only from the system's library folders")
		}
		add("signals", true, "signals and process information only within the sandbox")
		add("terminal", true, "the command runs in its own session without a controlling terminal; the terminal it inherits cannot be controlled (no ioctl, so no TIOCSTI)")
		add("process-cleanup", false, "macOS has no PID namespace: when the command ends or times out corral kills its process group, but a process that left the group (setsid) can outlive the run")
		return
	}
	add("namespaces", f.UserNSErr == "", orText(f.UserNSErr, "user, mount, pid, network, ipc, uts and cgroup namespaces"))
	add("landlock-fs", f.LandlockABI >= 1, orText(f.LandlockErr, fmt.Sprintf("Landlock ABI %d filesystem rules", f.LandlockABI)))
	netDetail, llNet := "private network namespace with only lo: no network", "no TCP connect and no explicit TCP bind (the network namespace has no way out anyway)"
	if len(b.perms.Network) > 0 {
		netDetail = fmt.Sprintf("private network namespace with only lo; the one way out is corral's egress proxy at 127.0.0.1:%d and [::1]:%d, enforcing %d network.allow rule(s); no UDP, no DNS", ProxyPort, ProxyPort, len(b.perms.Network))
		llNet = fmt.Sprintf("TCP connect only to the proxy port %d; no explicit TCP bind (listen() on an unbound socket still gets a port, inside the sandbox's own namespace only)", ProxyPort)
	}
	add("landlock-net", f.LandlockABI >= 4, landlockDetail(f.LandlockABI, 4, llNet))
	add("landlock-scope", f.LandlockABI >= 6, landlockDetail(f.LandlockABI, 6, "no signals or abstract UNIX sockets beyond the sandbox"))
	add("seccomp", f.Seccomp, orText(map[bool]string{false: "seccomp filters are unavailable"}[f.Seccomp], fmt.Sprintf("%d rules refusing namespaces, mounts, ptrace, bpf, io_uring, keyrings, TIOCSTI and more", len(seccomp.Table()))))
	add("no-new-privs", true, "set before exec")
	// Without a user namespace there is nothing to drop capabilities in,
	// no network namespace and no mount namespace: say why, not what.
	needsNS := func(what string) string {
		if f.UserNSErr != "" {
			return "needs the user namespace that is refused (see namespaces)"
		}
		return what
	}
	add("capabilities", f.UserNSErr == "", needsNS("bounding, ambient, permitted, effective and inheritable sets emptied; securebits locked"))
	add("network", f.UserNSErr == "", needsNS(netDetail))
	add("private-mounts", f.UserNSErr == "", needsNS("new root holding only granted paths, private /proc, /tmp and /dev; host UNIX sockets hidden"))
	if b.plan.Exec.Restricted {
		add("exec-allowlist", f.LandlockABI >= 1, orText(landlockWhy(f), "only the allowed programs and their interpreters are executable; granted folders, and the library folders that hold programs, are mounted noexec"))
		add("memfd-noexec", f.Seccomp, orText(map[bool]string{false: "needs seccomp, which this kernel lacks"}[f.Seccomp], "seccomp refuses memfd_create: a memfd holds a copy of any binary, and even a sealed one can be run through the dynamic loader"))
	}
}

// required are the protections a run refuses to go without.
var required = map[string]bool{"namespaces": true, "landlock-fs": true, "seccomp": true, "capabilities": true, "network": true, "private-mounts": true, "exec-allowlist": true, "memfd-noexec": true}

// landlockWhy says why the exec allowlist cannot be enforced: it needs
// Landlock's execute right.
func landlockWhy(f *Facts) string {
	if f.LandlockABI >= 1 {
		return ""
	}
	return "needs Landlock, which is unavailable (see landlock-fs)"
}

func (b *builder) failClosed() error {
	var missing []string
	for _, p := range b.plan.Protections {
		if !p.Enforced && required[p.Name] {
			missing = append(missing, p.Name+": "+p.Detail)
		}
	}
	if len(missing) == 0 || b.spec.BestEffort {
		return nil
	}
	return fmt.Errorf("%w: %s (use --best-effort to run without it)", ErrProtection, strings.Join(missing, "; "))
}

func landlockDetail(abi, need int, what string) string {
	if abi >= need {
		return what
	}
	return fmt.Sprintf("needs Landlock ABI %d, the kernel has %d", need, abi)
}

func orText(err, ok string) string {
	if err != "" {
		return err
	}
	return ok
}

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
