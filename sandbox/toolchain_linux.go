package sandbox

import (
	"os"
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// findToolchains looks the exec entries up on the caller's PATH after the
// sandbox's folders (with an exec list), or takes the caller's folders
// outside the baseline (without one), and records each toolchain and the
// sandbox's PATH with their folders after its own, in the caller's order.
func (f *Facts) findToolchains(p policyengine.Permissions, spec Spec) {
	// What the command may write, what the private home binds from its
	// store, and corral's own state, which later runs trust.
	avoid := append([]string{f.stat(spec.WorkDir).Real, spec.HomeStore}, f.StateDirs...)
	for _, e := range p.Write {
		if g, err := policyengine.CompileGlob(e.Value); err == nil {
			avoid = append(avoid, f.stat(g.Base()).Real)
		}
	}
	home := ""
	if spec.Home != "" {
		home = f.stat(spec.Home).Real
		for _, c := range HomeCaches {
			avoid = append(avoid, path.Join(home, c.Rel))
		}
	}
	// A tree an fs.deny glob reaches into is left out whole, and said:
	// the deny walk covers the grants, not the toolchains.
	type denied struct{ base, glob string }
	var denies []denied
	for _, e := range p.Deny {
		if g, err := policyengine.CompileGlob(e.Value); err == nil {
			denies = append(denies, denied{f.stat(g.Base()).Real, e.Value})
		}
	}
	real := func(d string) string { return f.stat(d).Real }
	own := func(p string) bool { info := f.stat(p); return info.Exists && info.Real == p }
	add := func(bin, entry string) bool {
		for i, t := range f.Toolchains {
			if t.Bin == bin {
				if entry != "" && !slices.Contains(t.For, entry) {
					f.Toolchains[i].For = append(f.Toolchains[i].For, entry)
				}
				return len(t.Roots) > 0
			}
		}
		t := Toolchain{Bin: bin}
		if entry != "" {
			t.For = []string{entry}
		}
		for _, tree := range toolchainTrees(bin, home, p.ExecRestricted(), firstNames, own) {
			if toolchainExcluded(tree, avoid) != "" {
				continue
			}
			if i := slices.IndexFunc(denies, func(d denied) bool { return isUnder(tree, d.base) || isUnder(d.base, tree) }); i >= 0 {
				t.Left = append(t.Left, tree+" (fs.deny "+denies[i].glob+" may reach into it)")
				continue
			}
			t.Roots = append(t.Roots, tree)
		}
		if len(t.Roots) == 0 {
			if len(t.Left) > 0 {
				f.Toolchains = append(f.Toolchains, t) // to say what was left out
			}
			return false
		}
		f.Toolchains = append(f.Toolchains, t)
		return true
	}
	var caller []string
	for _, d := range callerPATH(spec.Env) {
		if info := f.stat(d); info.Exists && info.Dir && !systemBin(d, real) && !systemBin(info.Real, real) && toolchainExcluded(info.Real, avoid) == "" {
			caller = append(caller, d)
		}
	}
	var onPath []string // with an exec list, the folders where it found entries
	if !p.ExecRestricted() {
		for _, d := range caller {
			if !baselineToolDir(d) && add(real(d), "") {
				if !slices.Contains(f.Path, real(d)) {
					f.Path = append(f.Path, real(d))
				}
			}
		}
	} else {
		for _, e := range p.Exec {
			name := e.Value
			if prog, ok := f.Programs[name]; !strings.Contains(name, "/") && (!ok || prog.Err != "") {
				// Not on the sandbox's folders: the caller's PATH. The
				// program itself must not be what the command may
				// write either (~/bin/tool -> the work dir's build).
				delete(f.Programs, name)
				saved := f.Path
				f.Path = caller
				f.program(name)
				f.Path = saved
				if prog := f.Programs[name]; prog.Err == "" && (toolchainExcluded(prog.Real, avoid) != "" || slices.ContainsFunc(prog.Interpreters, func(in string) bool { return toolchainExcluded(in, avoid) != "" })) {
					f.Programs[name] = Program{Err: "not found"}
				}
			}
			prog := f.Programs[name]
			if prog.Err != "" {
				continue
			}
			if d := path.Dir(prog.Real); !systemBin(d, real) {
				add(d, name)
			}
			if d := path.Dir(prog.Path); !strings.Contains(name, "/") && !systemBin(d, real) {
				onPath = append(onPath, d)
			}
		}
	}
	// In the caller's order (an exec list is sorted by name), by real
	// path: a symlinked folder (SDKMAN's java/current/bin) is not in the
	// sandbox, its target is.
	for _, d := range caller {
		if slices.Contains(onPath, d) && !slices.Contains(f.Path, real(d)) {
			f.Path = append(f.Path, real(d))
		}
	}
}

// firstNames lists at most maxToolchainEntries+1 names in dir, without
// reading further: a folder that big is no toolchain's, and a huge one
// (or a dead network mount) must not cost every run.
func firstNames(dir string) ([]string, bool) {
	fh, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer fh.Close()
	names, err := fh.Readdirnames(maxToolchainEntries + 1)
	if err != nil && len(names) == 0 {
		return nil, false
	}
	slices.Sort(names)
	return names, true
}
