package sandbox

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/policyengine"
)

// probeProtected stats what protected() plans from: the protected paths
// inside each writable root, the folders above them (to pin or to start a
// quarantine from), the symlinks on the way, and the files of ~/.ssh that
// a grant reaches. About 1 µs a path; the home entries only where a
// writable root holds them.
func (f *Facts) probeProtected(p policyengine.Permissions, spec Spec) {
	if spec.Home != "" && path.IsAbs(spec.Home) {
		if info := f.stat(path.Clean(spec.Home)); info.Exists && info.Dir {
			f.Home = info.Real
		}
	}
	for _, k := range spec.Keep {
		f.stat(k)
	}
	buf := make([]byte, 16<<10)
	for _, e := range p.Write {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil {
			continue
		}
		root := f.Files[g.Base()]
		if !root.Exists || !root.Dir {
			continue
		}
		// One read of the root's names spares an lstat for each missing
		// entry at its top (most of them, in a project folder).
		present := map[string]bool{}
		readNames(root.Real, buf, func(name string, _ byte) { present[name] = true })
		for _, t := range append(protectedIn(root.Real, f.Home), keptIn(root.Real, spec.Keep, f)...) {
			first, _, _ := strings.Cut(strings.TrimPrefix(t.Path, root.Real+"/"), "/")
			if _, known := f.Files[t.Path]; !known && !present[first] {
				f.Files[t.Path] = FileInfo{Real: t.Path}
				continue
			}
			info := f.stat(t.Path)
			for d := path.Dir(t.Path); d != root.Real && isUnder(d, root.Real); d = path.Dir(d) {
				if above := f.stat(d); above.Exists {
					for _, l := range above.Links {
						f.stat(l)
					}
					break // and so are the folders above it
				}
			}
			for _, l := range info.Links {
				f.stat(l)
			}
			if info.Exists && info.Real != t.Path {
				f.stat(info.Real)
			}
		}
	}
	f.probeSSH(p)
}

// probeSSH lists the files of ~/.ssh (and of its folders) that may hold
// private keys, when a grant reaches the folder.
func (f *Facts) probeSSH(p policyengine.Permissions) {
	if f.Home == "" {
		return
	}
	info := f.stat(path.Join(f.Home, ".ssh"))
	if !info.Exists || !info.Dir {
		return
	}
	ssh := info.Real
	reached := false
	for _, list := range [][]policyengine.Entry{p.Read, p.Write} {
		for _, e := range list {
			if g, err := policyengine.CompileGlob(e.Value); err == nil {
				if info := f.stat(g.Base()); info.Exists && info.Dir && isUnder(ssh, info.Real) {
					reached = true
				}
			}
		}
	}
	if !reached {
		return
	}
	buf := make([]byte, 8<<10)
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		var dirs []string
		readNames(dir, buf, func(name string, typ byte) {
			p := dir + "/" + name
			switch {
			case typ == unix.DT_REG && (depth > 0 || !sshPublic(name)):
				f.SSHSecrets = append(f.SSHSecrets, p)
			case typ == unix.DT_DIR && depth < 2:
				dirs = append(dirs, p)
			}
		})
		for _, d := range dirs {
			walk(d, depth+1)
		}
	}
	walk(ssh, 0)
}
