package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// FileOp is a file operation `corral check` asks the plan about.
type FileOp string

const (
	OpRead  FileOp = "read"  // open a file for reading, or list a folder
	OpWrite FileOp = "write" // write or truncate a file, or create it
	OpExec  FileOp = "exec"  // execve the file
)

// View says whose file a question is about. A path inside the sandbox's
// private /tmp, /proc or /dev names another file than the same path on
// the host.
type View string

const (
	// ViewHost asks about the host's file: can the sandboxed command reach
	// it? (`check read|write PATH`.)
	ViewHost View = "host"
	// ViewSandbox asks about the path as the command sees it: can it use
	// the path, whatever file it names? (The redirections of `check exec`.)
	ViewSandbox View = "sandbox"
)

// HostPath is a path as the host resolves it: Path as written (absolute),
// Real with every symlink followed (Links, in order); a missing tail is
// kept as written, cleaned.
type HostPath struct {
	Path   string   `json:"path"`
	Real   string   `json:"real"`
	Links  []string `json:"links,omitempty"`
	Exists bool     `json:"exists"`
	Dir    bool     `json:"dir"`
	// Err says why the path names no file at all (a symlink loop, a
	// file used as a folder): the kernel refuses it whatever the grants.
	Err string `json:"error,omitempty"`
}

// FileAnswer is the plan's answer for one operation on one path.
type FileAnswer struct {
	Allowed bool
	// Kind names what decided: granted, ungranted, hidden, private,
	// replaced, protected, read-only, noexec, removed, missing or
	// landlock.
	Kind string
	// Reason is a sentence about the path; Advice says what permission,
	// if any, would change the answer.
	Reason string
	Advice string
	// Rule is the plan entry that decided: a mount's or rule's origin.
	Rule string
}

// FileAccess answers whether the command this plan sandboxes can do op on
// path h, from the same mounts and Landlock rules the kernel gets: the
// mount that shows h.Real in the new root (the last one in the plan's
// order whose target holds it), its read-only and noexec flags, the
// protected paths bound on top of grants, the files corral removes after
// the run, and the union of the Landlock rules above h.Real. The file's
// own mode bits are not looked at.
func (p *Plan) FileAccess(h HostPath, op FileOp, view View) FileAnswer {
	real := h.Real
	if h.Err != "" {
		return FileAnswer{Kind: "missing", Reason: h.Path + " names no file: " + h.Err}
	}
	if d, ok := p.deniedBy(real); ok {
		return FileAnswer{Kind: "denied", Rule: d.Glob,
			Reason: real + " is carved out of the grants by fs.deny " + d.Glob + " (from " + d.From + "): the sandbox neither reads nor writes it",
			Advice: "remove " + d.Glob + " from fs.deny of " + d.From + " to reach it"}
	}
	if op == OpWrite && slices.Contains(p.MustNotAppear, real) {
		return FileAnswer{Kind: "removed", Rule: real,
			Reason: real + " would send git to a config and hooks the command chose: corral removes it after the run, so a write there does not last",
			Advice: "no grant keeps it; make it outside the sandbox"}
	}
	if op == OpWrite {
		for _, q := range p.Quarantine {
			if q.Real == "" && (real == q.Path || isUnder(real, q.Path)) {
				return FileAnswer{Kind: "quarantined", Rule: q.Path,
					Reason: "protected: " + q.Path + " did not exist at launch (" + q.Why + "): whatever the command leaves there is renamed to " + q.Path + QuarantineSuffix + "-RANDOM after the run, so a write there does not last",
					Advice: "a write grant naming it exactly keeps it writable; or make it outside the sandbox"}
			}
		}
	}
	if op == OpExec && !h.Exists {
		return FileAnswer{Kind: "missing", Reason: "there is no file " + real + " to run", Advice: "a program must exist when the sandbox starts"}
	}
	if p.Tier.Name == TierLandlock {
		return p.landlockTierAccess(h, op)
	}
	if op == OpExec || view == ViewSandbox {
		// The command uses the path as written: every symlink on the
		// way must be there to follow. (For the host's file, it can
		// open the real path itself.)
		for _, l := range h.Links {
			if !p.shows(l) {
				return FileAnswer{Kind: "ungranted", Reason: "the symlink " + l + " is not in the sandbox, so " + h.Path + " leads nowhere there", Advice: p.grantAdvice(l, OpRead)}
			}
		}
	}
	m := p.topMount(real)
	if m == nil {
		if root := socketRootOf(real); root != "" {
			return FileAnswer{Kind: "hidden", Rule: root,
				Reason: root + " holds the host's service sockets (systemd, D-Bus, container engines): nothing inside it is in the sandbox, whatever the grants say; the host's " + real + " is not reachable",
				Advice: "no grant inside " + root + " is bound"}
		}
		if root := hiddenRootOf(real); root != "" && !p.mountsUnder(root) {
			return FileAnswer{Kind: "hidden", Rule: root,
				Reason: root + " is not in the sandbox (it holds the host's UNIX sockets and shared files): the host's " + real + " is not reachable",
				Advice: "no grant of " + root + " itself is bound; grant the one folder or file inside it that is needed"}
		}
		return FileAnswer{Kind: "ungranted",
			Reason: real + " is not in the sandbox: no grant or system baseline entry binds it",
			Advice: p.grantAdvice(real, op)}
	}
	switch m.Kind {
	case MountTmpfs, MountProc:
		if view == ViewHost {
			return FileAnswer{Kind: "private", Rule: m.Why,
				Reason: m.Target + " is private to the sandbox: the host's " + real + " is not reachable (inside the sandbox " + real + " names a file of its own " + m.Target + ", gone after the run)",
				Advice: "the host's file is reachable only through a grant that names it or a folder inside " + m.Target + " holding it (" + p.grantAdvice(real, op) + "); " + m.Target + " itself is never bound"}
		}
	case MountFile:
		if view == ViewHost {
			return FileAnswer{Kind: "replaced", Rule: m.Why,
				Reason: "the sandbox gets its own " + real + ", made for it: the host's is not what it sees",
				Advice: p.grantAdvice(real, op) + " to bind the host's instead"}
		}
		if op != OpRead {
			return FileAnswer{Kind: "read-only", Rule: m.Why, Reason: real + " is a file corral makes for the sandbox, read-only"}
		}
	case MountCopy:
		if op != OpRead {
			return FileAnswer{Kind: "read-only", Rule: m.Why,
				Reason: "the sandbox gets a read-only copy of " + real + " (" + m.Why + ")",
				Advice: p.grantAdvice(real, op)}
		}
	case MountBind, MountDev:
		if src := m.Source + strings.TrimPrefix(real, m.Target); m.Source != m.Target && view == ViewHost {
			return FileAnswer{Kind: "replaced", Rule: m.Why,
				Reason: "the sandbox sees " + src + " at " + real + " (" + m.Why + "), not the host's " + real}
		}
		if op == OpWrite && m.ReadOnly {
			if slices.Contains(p.Protected, m.Target) {
				return FileAnswer{Kind: "protected", Rule: m.Target,
					Reason: "protected: " + m.Target + " stays read-only even with a write grant (" + m.Why + "): the host runs or trusts it later",
					Advice: "no grant can open it for writing; change it outside the sandbox"}
			}
			return FileAnswer{Kind: "read-only", Rule: m.Why,
				Reason: real + " is bound read-only (" + m.Why + ")",
				Advice: p.grantAdvice(real, op)}
		}
		if op == OpExec && m.NoExec {
			return FileAnswer{Kind: "noexec", Rule: m.Why,
				Reason: real + " is on a noexec mount (" + m.Why + "): nothing there can be run",
				Advice: "with an exec allowlist only the programs it names run; add " + strconv.Quote(real) + " to permissions.exec if it exists at launch"}
		}
	}
	return p.landlockAccess(h, op)
}

// landlockTierAccess answers for the landlock tier, which mounts nothing:
// the command sees the host's files, Landlock decides, and the protected
// paths that existed at launch are writable during the run but what the
// command leaves there is quarantined after it.
func (p *Plan) landlockTierAccess(h HostPath, op FileOp) FileAnswer {
	real := h.Real
	if op == OpWrite {
		for _, k := range p.SweepKnown {
			if real == k || isUnder(real, k) {
				return FileAnswer{Kind: "protected", Rule: k,
					Reason: "protected: " + k + " is checked after the run (the landlock tier binds nothing read-only): what the command changes there is quarantined, so a write does not last",
					Advice: "no grant keeps it; change it outside the sandbox"}
			}
		}
	}
	if root := socketRootOf(real); root != "" {
		return FileAnswer{Kind: "hidden", Rule: root,
			Reason: root + " holds the host's service sockets (systemd, D-Bus, container engines): no grant inside it is given, whatever the grants say; the host's " + real + " is not reachable",
			Advice: "no grant inside " + root + " is given"}
	}
	return p.landlockAccess(h, op)
}

// landlockAccess answers from the Landlock rules alone.
func (p *Plan) landlockAccess(h HostPath, op FileOp) FileAnswer {
	real := h.Real
	var need uint64
	switch {
	case op == OpExec:
		need = fsExecute | fsReadFile
	case op == OpRead && h.Exists && h.Dir:
		need = fsReadDir
	case op == OpRead:
		need = fsReadFile
	case op == OpWrite && h.Exists && !h.Dir:
		need = fsWriteFile
	default:
		need = fsMakeReg // a new file, or one in the folder
	}
	var have uint64
	var from []string
	rules := p.Landlock.Rules
	if len(p.CreateRules) > 0 {
		// The supervisor makes the names the rules as they were allow
		// (fs.deny in the landlock tier): it answers for the make rights.
		rules = p.CreateRules
	}
	for _, r := range rules {
		if isUnder(real, r.Path) {
			have |= r.Access
			from = append(from, r.From+" on "+r.Path)
		}
	}
	handled := p.Landlock.HandledFS
	if handled != 0 {
		handled |= fsExecute
	}
	if missing := need & handled &^ have; missing != 0 {
		reason := "Landlock grants nothing on " + real
		if p.Exec.Restricted && isUnder(real, "/usr") {
			reason = "with an exec allowlist Landlock grants read in /usr only on the library folders and the allowed programs, nothing on " + real
		}
		if len(from) > 0 {
			reason = "Landlock grants " + real + " only " + rightsString(have) + " (" + strings.Join(from, "; ") + ")"
		}
		advice := p.grantAdvice(real, op)
		if op == OpExec && p.Exec.Restricted {
			advice = "with an exec allowlist only the programs it names (and their interpreters) are executable; add " + strconv.Quote(real) + " to permissions.exec"
		}
		return FileAnswer{Kind: "landlock", Reason: reason + ": it may not be " + pastTense(op), Advice: advice, Rule: strings.Join(from, "; ")}
	}
	return FileAnswer{Allowed: true, Kind: "granted", Rule: strings.Join(from, "; "),
		Reason: "Landlock: " + orText(strings.Join(from, "; "), "no filesystem rules")}
}

// topMount returns the mount that shows real in the new root: the last,
// in the order the init applies them, whose target is real or, for a
// folder or a filesystem, holds it. Nil when real is not in the new root.
func (p *Plan) topMount(real string) *Mount {
	var top *Mount
	for i, m := range p.Mounts {
		var holds bool
		switch m.Kind {
		case MountTmpfs, MountProc:
			holds = isUnder(real, m.Target)
		case MountBind:
			holds = real == m.Target || m.Dir && isUnder(real, m.Target)
		case MountDev, MountCopy, MountFile:
			holds = real == m.Target
		}
		if holds {
			top = &p.Mounts[i]
		}
	}
	return top
}

// shows reports whether the host's file at real is what the sandbox sees
// there. A symlink the plan makes again at the same path (/bin -> usr/bin
// on a merged-/usr host, /lib64, an exec target's links) leads where the
// host's does: the builder points it at the real path the probe found
// for the host's link.
func (p *Plan) shows(real string) bool {
	if slices.ContainsFunc(p.Mounts, func(m Mount) bool { return m.Kind == MountSymlnk && m.Target == real }) {
		return true
	}
	m := p.topMount(real)
	return m != nil && (m.Kind == MountBind || m.Kind == MountDev || m.Kind == MountCopy) && m.Source == m.Target
}

// grantAdvice names the permission that would allow op on real.
func (p *Plan) grantAdvice(real string, op FileOp) string {
	switch {
	case op == OpWrite:
		return "add fs.write: [" + strconv.Quote(real) + "]"
	case op == OpExec && p.Exec.Restricted:
		return "add " + strconv.Quote(real) + " to permissions.exec"
	}
	return "add fs.read: [" + strconv.Quote(real) + "]"
}

// mountsUnder reports whether any mount of the plan lands in root (a work
// dir in /var/tmp): root is then in the new root, with only that inside.
func (p *Plan) mountsUnder(root string) bool {
	return slices.ContainsFunc(p.Mounts, func(m Mount) bool { return isUnder(m.Target, root) })
}

// hiddenRootOf returns the hidden root that is or holds p, or "".
func hiddenRootOf(p string) string {
	for _, h := range hiddenRoots {
		if isUnder(p, h) {
			return h
		}
	}
	return ""
}

func pastTense(op FileOp) string {
	switch op {
	case OpWrite:
		return "written"
	case OpExec:
		return "run"
	}
	return "read"
}

// String says the answer in one line, for tests and logs.
func (a FileAnswer) String() string {
	return fmt.Sprintf("%v %s: %s", a.Allowed, a.Kind, a.Reason)
}
