package sandbox

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

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
			// Said on stderr too: a skill that names a program it needs
			// and finds it missing fails later with "not found" alone.
			msg := fmt.Sprintf("exec entry %s (%s) is not installed on the sandbox's PATH (%s) nor in a folder of the caller's PATH outside the work dir and the write grants; nothing to allow", e.Value, strings.Join(e.From, ", "), policyengine.SandboxPATH)
			b.warn("%s", msg)
			b.plan.Alerts = append(b.plan.Alerts, msg)
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
		if b.inToolchain(f) {
			continue // a toolchain's own programs run
		}
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
