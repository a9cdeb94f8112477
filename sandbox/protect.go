package sandbox

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

// protectedTarget is a path policyengine.ProtectedPaths (or a skill or
// policy the run is governed by) puts inside one writable root.
type protectedTarget struct {
	Path string
	Why  string
	// Kept: a skill's folder or a policy file, read-only whatever the
	// grants say; the others stay writable where a grant names them.
	Kept bool
}

// protectedIn lists the protected paths strictly inside the writable root
// (a real path): the root-relative entries at its top, every entry at
// home when home is inside or equal to root (a work dir holding a home
// folder), and the home entries inside root (a grant of $HOME/.config/**).
// A path a grant names exactly (root itself) is not in the list.
func protectedIn(root, home string) []protectedTarget {
	var out []protectedTarget
	add := func(p, why string) {
		if p != root && isUnder(p, root) && !slices.ContainsFunc(out, func(t protectedTarget) bool { return t.Path == p }) {
			out = append(out, protectedTarget{Path: p, Why: why})
		}
	}
	for _, e := range policyengine.ProtectedPaths {
		if !e.Home {
			add(path.Join(root, e.Path), e.Why)
		}
	}
	if home == "" || home == "/" {
		return out
	}
	for _, e := range policyengine.ProtectedPaths {
		if e.Home || isUnder(home, root) {
			add(path.Join(home, e.Path), e.Why)
		}
	}
	return out
}

// keptIn lists the skills' folders and policy files (spec.Keep) inside
// the writable root. A skill folder that is the root or holds it (a skill
// kept at the top of the work dir) gives its SKILL.md only.
func keptIn(root string, keep []string, facts *Facts) []protectedTarget {
	var out []protectedTarget
	for _, k := range keep {
		p := k
		if info := facts.file(k); info.Exists && info.Dir && isUnder(root, k) {
			p = path.Join(k, "SKILL.md")
		}
		if p != root && isUnder(p, root) {
			out = append(out, protectedTarget{Path: p, Why: "a skill or agent policy this run is governed by", Kept: true})
		}
	}
	return out
}

// gitTarget says whether p is inside a git folder: what git keeps there
// is planned with the repositories (CreateHooksFolders, MustNotAppear),
// not quarantined.
func gitTarget(p string) bool {
	return strings.Contains(p, "/.git/")
}

// sshPublic are the files of ~/.ssh that hold no secret; every other file
// in it is masked where a grant reaches it.
func sshPublic(name string) bool {
	switch name {
	case "config", "known_hosts", "known_hosts.old", "authorized_keys", "authorized_keys2", "environment", "rc", "allowed_signers":
		return true
	}
	return strings.HasSuffix(name, ".pub")
}

// QuarantineSuffix, and a random part after it, is added to the name of a
// protected path the command created: no tool reads the renamed file or
// folder, and nothing of the user's is deleted.
const QuarantineSuffix = ".corral-quarantined"

// Quarantine is a protected path that did not exist at launch. No mount
// can keep a missing name from being created in a writable folder, so
// after the run corral renames whatever is there (or a symlink the command
// made on the way to it) to NAME.corral-quarantined-RANDOM.
type Quarantine struct {
	Path string `json:"path"`
	// From is the deepest folder on the way to Path that existed at
	// launch (pinned in place); below it everything was made by the run.
	From string `json:"from,omitempty"`
	// Real, when set, is where Path led at launch through symlinks the
	// command could replace: Path is quarantined if it leads elsewhere.
	Real string `json:"real,omitempty"`
	Why  string `json:"why"`
}

// writeBases are the write grants' bases, as spelled and resolved: a
// protected path one of them names exactly stays writable.
func (b *builder) writeBases() map[string]bool {
	named := map[string]bool{}
	for _, w := range b.perms.Write {
		if g, err := policyengine.CompileGlob(w.Value); err == nil {
			named[g.Base()] = true
			if info := b.facts.file(g.Base()); info.Exists {
				named[info.Real] = true
			}
		}
	}
	return named
}

// writable says whether the real path p is inside a writable root.
func (b *builder) writable(p string) bool {
	if b.writableReal == nil {
		b.writableReal = []string{}
		for _, r := range b.writableRoots() {
			if info := b.facts.file(r); info.Exists && info.Dir {
				b.writableReal = append(b.writableReal, info.Real)
			}
		}
	}
	return slices.ContainsFunc(b.writableReal, func(r string) bool { return isUnder(p, r) })
}

// missing plans the quarantine of the protected path t, which does not
// exist: from the deepest folder on the way that exists (through
// symlinks, where they lead) down to t. links are the symlinks on the way
// to that folder, which the command could replace. ok is false when that
// folder is not writable: nothing can appear there.
func (b *builder) missing(t protectedTarget) (q Quarantine, links []string, ok bool) {
	rest := ""
	for d := t.Path; d != "/"; d = path.Dir(d) {
		parent := path.Dir(d)
		rest = path.Join(path.Base(d), rest)
		info := b.facts.file(parent)
		if !info.Exists {
			continue
		}
		if !info.Dir || !b.writable(info.Real) {
			return Quarantine{}, info.Links, false
		}
		return Quarantine{Path: path.Join(info.Real, rest), From: info.Real, Why: t.Why}, info.Links, true
	}
	return Quarantine{}, nil, false
}

// homeAlert warns loudly when a write grant covers the home folder: every
// file there that tools run is then one write away from the host.
func (b *builder) homeAlert() {
	home := b.facts.Home
	if home == "" {
		return
	}
	for _, r := range b.writableRoots() {
		if info := b.facts.file(r); info.Exists && info.Dir && isUnder(home, info.Real) {
			msg := fmt.Sprintf("THE HOME FOLDER %s IS WRITABLE in this sandbox (through %s): corral keeps the %d start-up files, tool configs and PATH folders it knows read-only (corral explain lists them), but any other file there is the command's to change; use a project folder as the work dir", home, r, len(policyengine.ProtectedPaths))
			b.warn("%s", msg)
			b.plan.Alerts = append(b.plan.Alerts, msg)
			return
		}
	}
}

// sshSecretWhy starts the reason of a mount hiding a private key.
const sshSecretWhy = "may hold a private ssh key"

// sshSecrets shows the files of ~/.ssh that may hold private keys as empty
// and read-only (a bind of /dev/null), unless a grant names one of them
// or the .ssh folder itself.
func (b *builder) sshSecrets() {
	if len(b.facts.SSHSecrets) == 0 {
		return
	}
	ssh := b.facts.file(path.Join(b.facts.Home, ".ssh")).Real
	named := map[string]bool{}
	for _, list := range [][]policyengine.Entry{b.perms.Read, b.perms.Write} {
		for _, e := range list {
			if g, err := policyengine.CompileGlob(e.Value); err == nil {
				named[b.facts.file(g.Base()).Real] = true
			}
		}
	}
	if named[ssh] {
		return
	}
	for _, k := range b.facts.SSHSecrets {
		if !named[k] {
			b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountBind, Source: "/dev/null", Target: k, ReadOnly: true, Why: sshSecretWhy + ": empty in the sandbox (a grant naming the file or ~/.ssh shows it)"})
		}
	}
}

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
		pins, ro := b.protectWriteRoot(w, named, planned)
		pinMounts = append(pinMounts, pins...)
		roMounts = append(roMounts, ro...)
	}
	byTarget := func(x, y Mount) int { return strings.Compare(x.Target, y.Target) }
	slices.SortStableFunc(pinMounts, byTarget) // parents first
	slices.SortStableFunc(roMounts, byTarget)
	b.plan.Mounts = append(append(b.plan.Mounts, pinMounts...), roMounts...)
	b.sshSecrets()
}

// protectWriteRoot plans what keeps the protected paths inside one
// fs.write grant read-only: the pins (the folders down to each one, bound
// in place so none can be renamed away) and the read-only binds.
func (b *builder) protectWriteRoot(w policyengine.Entry, named, planned map[string]bool) (pinMounts, roMounts []Mount) {
	g, err := policyengine.CompileGlob(w.Value)
	if err != nil || hiddenUnder(g.Base()) != "" {
		return nil, nil
	}
	root := b.facts.file(g.Base())
	if !root.Exists || !root.Dir {
		return nil, nil
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
	git := b.gitProtected(root.Real, pin)
	for _, g := range git {
		b.gitPaths[g] = true
	}
	paths = append(paths, git...)
	dirs := slices.Sorted(maps.Keys(pins)) // parents first
	for _, d := range dirs {
		pinMounts = append(pinMounts, Mount{Kind: MountBind, Source: d, Target: d, NoExec: b.plan.Exec.Restricted, Dir: true, Why: why + " (pinned in place)"})
	}
	roMounts = b.protectPaths(w, root.Real, paths, whys, why)
	if slices.Contains(b.facts.NestedCut, root.Real) {
		b.warn("%s: nested repositories were looked for in the first %d folders only (%d levels deep, not in hidden folders, node_modules, __pycache__ or target); the .git folders of others stay writable", w.Value, nestedBudget, nestedDepth)
	}
	return pinMounts, roMounts
}

// gitProtected are the git files inside the writable root that send git
// elsewhere or run code (hooks, config, commondir, gitdir, attributes),
// of the root's repository, nested ones, submodules and worktrees, and
// the hooks folders git config names; pin is called for the folders that
// must stay in place.
func (b *builder) gitProtected(root string, pin func(string)) []string {
	var paths []string
	gits := []string{path.Join(root, ".git")}
	for _, g := range b.facts.Gits {
		if strings.HasPrefix(g, root+"/") && !slices.Contains(gits, g) {
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
		if strings.HasPrefix(m, root+"/") {
			pin(m)
			paths = append(paths, m+"/hooks", m+"/config", m+"/commondir", m+"/gitdir", m+"/config.worktree", m+"/info/attributes")
		}
	}
	for _, hp := range b.facts.HooksPaths {
		if isUnder(hp, root) && hp != root {
			pin(path.Dir(hp))
			paths = append(paths, hp)
		}
	}
	return paths
}

// protectPaths turns the protected paths inside the writable root granted
// by w into read-only binds, records those that must not appear, and warns
// about symlinks among them.
func (b *builder) protectPaths(w policyengine.Entry, root string, paths []string, whys map[string]string, why string) (roMounts []Mount) {
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
		case !info.Exists || info.Real == p || !slices.ContainsFunc(info.Links, func(l string) bool { return isUnder(l, root) }):
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
	return roMounts
}
