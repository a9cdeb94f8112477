package sandbox

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

// fs.deny in the plan. In the namespaces tier every path a deny glob
// matches inside a granted tree at launch gets a mask (MountMask): an
// empty, read-only, mode-000 file or folder mounted over it, which no
// path to it gets past. No mount can keep a name from being made, so
// where a deny glob could match a new path inside a write grant, corral's
// seccomp supervisor makes every new name itself (superviseCreate),
// unless the masks already hold every such name: the glob's base folder
// is masked and cannot be moved (it is the write grant's root or right
// inside it). The landlock tier has no mounts: it refuses every deny glob
// that reaches into a grant, and supervises the rest the same way.

// maxDenyMasks bounds the masks of one run: each is a mount (about
// 10 µs to place), and a glob that matches thousands of files is better
// narrowed or made a folder.
const maxDenyMasks = 512

// DeniedPath is a path inside a granted tree that an fs.deny glob matches
// at launch (Facts.Denied).
type DeniedPath struct {
	Path string `json:"path"` // real, clean, absolute
	Dir  bool   `json:"dir,omitempty"`
	Glob string `json:"glob"`
}

// DenyRule is one fs.deny glob and the skills that declared it.
type DenyRule struct {
	Glob string `json:"glob"`
	From string `json:"from"`
}

// denyWhy is the Why of a mask, naming the glob and its skills.
func (b *builder) denyWhy(glob string) string {
	for _, e := range b.perms.Deny {
		if e.Value == glob {
			return "fs.deny " + glob + " (" + strings.Join(e.From, ", ") + ")"
		}
	}
	return "fs.deny " + glob
}

// deny puts the deny globs in the plan and masks what they match; it
// runs after finishMounts, so the masks go on top of every bind.
func (b *builder) deny() {
	if !b.denyRules() {
		return
	}
	for _, cut := range b.facts.DenyCut {
		b.errs = append(b.errs, fmt.Sprintf("fs.deny: the search of the granted trees for paths to mask stopped at %s; narrow the grant or the deny glob (corral refuses rather than leave a match unmasked)", printable.String(cut)))
	}
	var masks []Mount
	for _, d := range b.facts.Denied {
		if m := b.plan.topMount(d.Path); m == nil || m.Kind != MountBind {
			continue // not in the sandbox: nothing to mask
		}
		masks = append(masks, Mount{Kind: MountMask, Target: d.Path, Dir: d.Dir, ReadOnly: true, Why: b.denyWhy(d.Glob)})
	}
	if len(masks) > maxDenyMasks {
		b.errs = append(b.errs, fmt.Sprintf("fs.deny matches %d paths in the granted trees, more than the %d masks corral places; deny the folders that hold them instead", len(masks), maxDenyMasks))
		return
	}
	b.plan.Mounts = append(b.plan.Mounts, masks...)
	if n := len(masks); n > 0 {
		b.warn("fs.deny: %d path(s) matching at launch are masked (empty, read-only, mode 000)", n)
	}
	creatable := ""
	for _, e := range b.perms.Deny {
		if w := b.creatable(e.Value); w != "" {
			creatable = w
			if b.plan.Landlock.ABI < 1 {
				b.errs = append(b.errs, fmt.Sprintf("fs.deny %s (%s) could match a path the command makes inside the write grant %s, and without Landlock corral cannot keep the command from making a name: narrow the write grant, deny a folder that exists at launch right inside it, or run without this deny", e.Value, strings.Join(e.From, ", "), printable.String(w)))
			}
		}
	}
	if creatable == "" || b.plan.Landlock.ABI < 1 {
		b.plan.Protections = append(b.plan.Protections, Protection{Name: "fs-deny", Enforced: true,
			Detail: fmt.Sprintf("%d fs.deny glob(s): the %d path(s) they match inside the grants at launch are masked (empty, read-only, mode 000); no write grant can make a name they match", len(b.perms.Deny), len(masks))})
		return
	}
	b.plan.Protections = append(b.plan.Protections, Protection{Name: "fs-deny", Enforced: true,
		Detail: fmt.Sprintf("%d fs.deny glob(s): the %d path(s) they match inside the grants at launch are masked (empty, read-only, mode 000); corral's seccomp supervisor makes every new name itself and refuses the ones they match", len(b.perms.Deny), len(masks))})
	b.superviseCreate()
	b.warn("fs.deny: a glob could match a name made in the write grant %s: corral's supervisor makes every new file, folder, link and rename's name itself (the kernel rules hold no make right) and refuses the names fs.deny matches", printable.String(creatable))
}

// superviseCreate has corral's seccomp supervisor make every new name:
// the filter notifies the calls that make one, and the Landlock rules the
// kernel gets lose their make rights (CreateRules keeps them as they
// were, for the supervisor and for check), so the command can make no
// name by itself.
func (b *builder) superviseCreate() {
	p := b.plan
	p.Notify = createNotify
	p.CreateRules = slices.Clone(p.Landlock.Rules)
	for i := range p.Landlock.Rules {
		p.Landlock.Rules[i].Access &^= makeRights
		p.Landlock.Rules[i].Rights = rightsString(p.Landlock.Rules[i].Access)
	}
}

// creatable returns the writable root in which the deny glob could
// match a path made during the run, or "". Such a path is below the
// glob's base folder; it cannot be made there only when that folder is
// masked and cannot be moved.
func (b *builder) creatable(glob string) string {
	g, err := policyengine.CompileGlob(glob)
	if err != nil {
		return ""
	}
	base := g.Base()
	real := base
	if info := b.facts.file(base); info.Exists {
		real = info.Real
	}
	for _, w := range b.writeMountRoots() {
		if !isUnder(real, w) && !isUnder(w, real) && !isUnder(base, w) && !isUnder(w, base) {
			continue
		}
		if b.pinnedMask(real, g) {
			continue
		}
		return w
	}
	return ""
}

// pinnedMask reports whether the glob's base p is masked as a whole and
// cannot be renamed away: it is a mount point (busy), and so is the
// folder holding it (the root of a bind), so the path keeps the mask.
func (b *builder) pinnedMask(p string, g *policyengine.Glob) bool {
	masked := slices.ContainsFunc(b.plan.Mounts, func(m Mount) bool { return m.Kind == MountMask && m.Target == p })
	if !masked || !(g.Literal() || g.Match(p)) {
		return false
	}
	parent := path.Dir(p)
	return slices.ContainsFunc(b.plan.Mounts, func(m Mount) bool { return m.Kind == MountBind && m.Dir && m.Target == parent })
}

// writeMountRoots are the targets of the writable binds (and the
// private HOME's grants bound on it): where the command can make names.
func (b *builder) writeMountRoots() []string {
	var out []string
	for _, m := range b.plan.Mounts {
		if m.Kind == MountBind && !m.ReadOnly && m.Dir {
			out = append(out, m.Target)
		}
	}
	return out
}

// denyRules puts the deny globs and where they apply in the plan, for
// check and explain; false when there are none.
func (b *builder) denyRules() bool {
	if len(b.perms.Deny) == 0 {
		return false
	}
	for _, e := range b.perms.Deny {
		b.plan.Deny = append(b.plan.Deny, DenyRule{Glob: e.Value, From: strings.Join(e.From, ", ")})
	}
	for _, base := range policyengine.GrantBases(b.perms) {
		b.plan.DenyWithin = append(b.plan.DenyWithin, base)
		if info := b.facts.file(base); info.Exists && info.Real != base {
			b.plan.DenyWithin = append(b.plan.DenyWithin, info.Real)
		}
	}
	return true
}

// NotifyRule is a syscall the sandbox's filter sends to corral's
// supervisor: always (Arg -1), or when argument Arg has a bit of Mask.
type NotifyRule struct {
	Syscall string `json:"syscall"`
	Arg     int    `json:"arg"`
	Mask    uint64 `json:"mask,omitempty"`
}

// oCreat is O_CREAT (the same on every architecture corral builds for).
const oCreat = 0o100

// createNotify are the calls that may make a name (the plain forms are
// left out where the architecture has none).
var createNotify = []NotifyRule{
	{"open", 1, oCreat}, {"openat", 2, oCreat}, {"openat2", -1, 0}, {"creat", -1, 0},
	{"mkdir", -1, 0}, {"mkdirat", -1, 0}, {"mknod", -1, 0}, {"mknodat", -1, 0},
	{"symlink", -1, 0}, {"symlinkat", -1, 0}, {"link", -1, 0}, {"linkat", -1, 0},
	{"rename", -1, 0}, {"renameat", -1, 0}, {"renameat2", -1, 0},
}

// makeRights are the Landlock rights that make a name.
const makeRights = fsMakeReg | fsMakeDir | fsMakeSym | fsMakeFifo | fsMakeSock | fsMakeChar | fsMakeBlock

// landlockDeny enforces fs.deny in the landlock tier, which has no mounts:
// a deny glob that matches a path inside a grant at launch is refused
// (Landlock grants whole trees and cannot carve one out); one that could
// match a name made in a write grant gets the supervisor, which makes
// every name itself: the kernel rules lose their make rights.
func (b *builder) landlockDeny() {
	if !b.denyRules() {
		return
	}
	supervise := false
	for _, e := range b.perms.Deny {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil {
			continue
		}
		var hit []string
		for _, d := range b.facts.Denied {
			if d.Glob == e.Value {
				hit = append(hit, d.Path)
			}
		}
		w := ""
		for _, r := range b.writableReal {
			if isUnder(g.Base(), r) || isUnder(r, g.Base()) {
				w = r
				break
			}
		}
		switch {
		case len(hit) > 0:
			b.errs = append(b.errs, fmt.Sprintf("fs.deny %s (%s) matches %s inside a grant: the landlock tier cannot carve fs.deny out of a grant (it has no mounts to mask with, and Landlock grants whole trees); run where user namespaces are allowed, or narrow the grant", e.Value, strings.Join(e.From, ", "), printable.String(hit[0])))
		case w != "":
			supervise = true
		}
	}
	if len(b.errs) > 0 {
		return
	}
	if !supervise {
		b.plan.Protections = append(b.plan.Protections, Protection{Name: "fs-deny", Enforced: true,
			Detail: fmt.Sprintf("%d fs.deny glob(s): nothing matches inside the grants at launch, and no write grant can make a name they match", len(b.perms.Deny))})
		return
	}
	b.plan.Protections = append(b.plan.Protections, Protection{Name: "fs-deny", Enforced: true,
		Detail: fmt.Sprintf("%d fs.deny glob(s): nothing matches inside the grants at launch; corral's seccomp supervisor makes every new name itself and refuses the ones they match", len(b.perms.Deny))})
	b.superviseCreate()
	b.warn("fs.deny in the landlock tier: corral's supervisor makes every new file, folder, link and rename's name itself (the kernel rules hold no make right) and refuses the names fs.deny matches")
}

// deniedBy returns the deny rule that carves real out of the grants, as
// policyengine decides it: a glob matching real or a folder above it,
// inside a grant's base.
func (p *Plan) deniedBy(real string) (DenyRule, bool) {
	if len(p.Deny) == 0 || !slices.ContainsFunc(p.DenyWithin, func(r string) bool { return isUnder(real, r) }) {
		return DenyRule{}, false
	}
	for q := real; ; q = path.Dir(q) {
		for _, d := range p.Deny {
			if g, err := policyengine.CompileGlob(d.Glob); err == nil && g.Match(q) {
				return d, true
			}
		}
		if q == "/" {
			return DenyRule{}, false
		}
	}
}
