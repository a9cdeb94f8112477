package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// ResolveHost resolves p (relative paths start in workDir) as the kernel
// would, one component at a time: a symlink is followed where it stands,
// so "link/.." is the link target's parent, not the folder holding the
// link. A missing component ends the walk; the rest is kept as written,
// cleaned. It reads the host, so it is for `check`, never the plan.
func ResolveHost(p, workDir string) HostPath {
	if !path.IsAbs(p) {
		p = workDir + "/" + p
	}
	h := HostPath{Path: p} // as written: cleaning would resolve ".." before the links
	real := "/"
	todo := strings.Split(p, "/")
	for hops := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			real = path.Dir(real)
			continue
		}
		next := path.Join(real, name)
		st, err := os.Lstat(next)
		if err == nil && len(todo) > 0 && !st.IsDir() && st.Mode()&fs.ModeSymlink == 0 {
			h.Real, h.Err = path.Clean(next+"/"+strings.Join(todo, "/")), next+" is not a folder"
			return h
		}
		if err != nil {
			// Missing (or unreadable): the rest cannot be resolved.
			h.Real = path.Clean(next + "/" + strings.Join(todo, "/"))
			if slices.Contains(todo, "..") {
				h.Err = next + " does not exist, so \"..\" after it leads nowhere"
			}
			return h
		}
		if st.Mode()&fs.ModeSymlink == 0 || real == "/proc" {
			// /proc's links (self, thread-self) name this process, not the
			// sandbox's: /proc is answered as written.
			real = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			h.Real, h.Err = path.Clean(next+"/"+strings.Join(todo, "/")), "too many levels of symbolic links at "+next
			return h
		}
		h.Links = append(h.Links, next)
		if path.IsAbs(target) {
			real = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	h.Real = real
	st, err := os.Stat(real)
	h.Exists = err == nil || !errors.Is(err, fs.ErrNotExist)
	h.Dir = err == nil && st.IsDir()
	return h
}
