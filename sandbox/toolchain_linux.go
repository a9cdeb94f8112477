package sandbox

import (
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// findToolchains looks the exec entries up on the caller's PATH after the
// sandbox's folders (with an exec list), or takes the caller's folders
// outside the baseline (without one), and records each toolchain and the
// sandbox's PATH with their folders after its own.
func (f *Facts) findToolchains(p policyengine.Permissions, spec Spec) {
	// What the command may write, and corral's own state, which later
	// runs trust.
	writable := append([]string{f.stat(spec.WorkDir).Real, spec.HomeStore}, f.StateDirs...)
	for _, e := range p.Write {
		if g, err := policyengine.CompileGlob(e.Value); err == nil {
			writable = append(writable, f.stat(g.Base()).Real)
		}
	}
	real := func(d string) string { return f.stat(d).Real }
	entries := func(dir string) ([]string, bool) {
		f.list(dir)
		names, ok := f.Listings[dir]
		var own []string
		for _, n := range names {
			if c := path.Join(dir, n); f.file(c).Exists && f.file(c).Real == c {
				own = append(own, n)
			}
		}
		return own, ok
	}
	exists := func(p string) bool { return f.stat(p).Exists }
	home := f.stat(spec.Home).Real
	add := func(bin, entry string) {
		for i, t := range f.Toolchains {
			if t.Bin == bin {
				if entry != "" && !slices.Contains(t.For, entry) {
					f.Toolchains[i].For = append(f.Toolchains[i].For, entry)
				}
				return
			}
		}
		t := Toolchain{Bin: bin}
		if entry != "" {
			t.For = []string{entry}
		}
		for _, tree := range toolchainTrees(bin, home, p.ExecRestricted(), entries, exists) {
			if toolchainExcluded(tree, writable) == "" && f.stat(tree).Exists {
				t.Roots = append(t.Roots, tree)
			}
		}
		if len(t.Roots) > 0 {
			f.Toolchains = append(f.Toolchains, t)
		}
	}
	var caller []string
	for _, d := range callerPATH(spec.Env) {
		if info := f.stat(d); info.Exists && info.Dir && !systemBin(d, real) && !systemBin(info.Real, real) && toolchainExcluded(info.Real, writable) == "" {
			caller = append(caller, d)
		}
	}
	if !p.ExecRestricted() {
		for _, d := range caller {
			if !baselineToolDir(d) {
				add(real(d), "")
			}
		}
	} else {
		for _, e := range p.Exec {
			name := e.Value
			if prog, ok := f.Programs[name]; !strings.Contains(name, "/") && (!ok || prog.Err != "") {
				// Not on the sandbox's folders: the caller's PATH.
				delete(f.Programs, name)
				saved := f.Path
				f.Path = caller
				f.program(name)
				f.Path = saved
			}
			prog := f.Programs[name]
			if prog.Err != "" {
				continue
			}
			if d := path.Dir(prog.Real); !systemBin(d, real) {
				add(d, name)
			}
			if d := path.Dir(prog.Path); !strings.Contains(name, "/") && !systemBin(d, real) && !slices.Contains(f.Path, d) {
				f.Path = append(f.Path, d)
			}
		}
	}
	for _, t := range f.Toolchains {
		if !p.ExecRestricted() && !slices.Contains(f.Path, t.Bin) {
			f.Path = append(f.Path, t.Bin)
		}
	}
}
