package sandbox

import (
	"os"
	"path"
	"slices"
	"strconv"

	"corral.dev/corral/policyengine"
)

// The walk for fs.deny: which paths inside the granted trees a deny glob
// matches at launch. It reads folders only where a deny glob could match
// below (a glob's base folder, or anywhere for "/**/NAME"), never follows
// a symlink, and does not go into a folder that matches (it is masked
// whole). Past maxDenyEntries entries it stops and says where, and the
// plan refuses to run: a match left unmasked would be readable.
const (
	// maxDenyEntries bounds the folder entries the walk reads on every
	// launch with fs.deny (about 0.25 s on this project's machines for a
	// tree this size; docs/deny.md has the measurements).
	maxDenyEntries = 200_000
	// maxDenyDepth bounds how deep the walk goes below a grant's base.
	maxDenyDepth = 64
)

// denyWalk is one walk's state.
type denyWalk struct {
	globs   []*policyengine.Glob
	entries []policyengine.Entry
	seen    map[string]bool
	n       int
	f       *Facts
}

// walkDenied fills f.Denied and f.DenyCut; it costs nothing without
// deny globs.
func (f *Facts) walkDenied(p policyengine.Permissions) {
	if len(p.Deny) == 0 {
		return
	}
	w := &denyWalk{seen: map[string]bool{}, f: f}
	for _, e := range p.Deny {
		if g, err := policyengine.CompileGlob(e.Value); err == nil {
			w.globs, w.entries = append(w.globs, g), append(w.entries, e)
		}
	}
	for _, base := range policyengine.GrantBases(p) {
		info := f.stat(base)
		if !info.Exists || w.seen[info.Real] {
			continue
		}
		w.visit(info.Real, base, info.Dir, 0)
	}
	slices.SortFunc(f.Denied, func(a, b DeniedPath) int {
		if a.Path < b.Path {
			return -1
		}
		if a.Path > b.Path {
			return 1
		}
		return 0
	})
}

// visit matches the file or folder real (reached as alias, the path the
// grant names it by) and walks a folder that does not match.
func (w *denyWalk) visit(real, alias string, dir bool, depth int) {
	if dir {
		// Only folders can be reached twice (by two grants).
		if w.seen[real] {
			return
		}
		w.seen[real] = true
	}
	if i := w.match(real, alias); i >= 0 {
		w.f.Denied = append(w.f.Denied, DeniedPath{Path: real, Dir: dir, Glob: w.entries[i].Value})
		return
	}
	if !dir || !w.below(real, alias) {
		return
	}
	if depth >= maxDenyDepth {
		w.f.DenyCut = append(w.f.DenyCut, real+": deeper than "+strconv.Itoa(maxDenyDepth)+" folders")
		return
	}
	list, err := os.ReadDir(real)
	if err != nil {
		if !os.IsNotExist(err) {
			// A folder corral cannot read may still hold a match the
			// command could reach (as another uid): fail closed.
			w.f.DenyCut = append(w.f.DenyCut, real+": "+err.Error())
		}
		return
	}
	w.n += len(list)
	if w.n > maxDenyEntries {
		w.f.DenyCut = append(w.f.DenyCut, real+": more than "+strconv.Itoa(maxDenyEntries)+" entries in the granted trees")
		return
	}
	for _, e := range list {
		t := e.Type()
		if t&os.ModeSymlink != 0 {
			continue // judged by where it leads, as the kernel and check do
		}
		// Entry names hold no "/" and are never "." or "..": the
		// joined paths are clean as they are.
		w.visit(join(real, e.Name()), join(alias, e.Name()), t.IsDir(), depth+1)
	}
}

// match returns the index of the first glob that matches real or alias
// (the same name ends both).
func (w *denyWalk) match(real, alias string) int {
	name := path.Base(real)
	for i, g := range w.globs {
		if g.NameMayMatch(name) && (g.Match(real) || alias != real && g.Match(alias)) {
			return i
		}
	}
	return -1
}

// join joins a clean folder path and an entry name.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// below reports whether a deny glob could match something below the
// folder real (alias): the folder holds a glob's base or lies below it.
func (w *denyWalk) below(real, alias string) bool {
	for _, g := range w.globs {
		b := g.Base()
		if isUnder(b, real) || isUnder(real, b) || isUnder(b, alias) || isUnder(alias, b) {
			return true
		}
	}
	return false
}
