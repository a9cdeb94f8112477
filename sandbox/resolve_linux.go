package sandbox

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// resolver resolves symlinks like filepath.EvalSymlinks, but remembers
// every folder it has resolved: the plan's paths share prefixes (/usr/bin,
// /etc), so one lstat per new component is enough.
type resolver struct {
	seen map[string]resolved
}

type resolved struct {
	real  string
	mode  uint32   // unix.S_IFMT bits of the final file
	size  int64    // of the final file
	links []string // the symlinks followed on the way, as paths
	err   error
}

var (
	errLoop     = errors.New("too many levels of symbolic links")
	errRelative = errors.New("not an absolute path")
)

func newResolver() *resolver {
	return &resolver{seen: map[string]resolved{"/": {real: "/", mode: unix.S_IFDIR}}}
}

// resolve returns the real path of the absolute, clean path p.
func (r *resolver) resolve(p string, depth int) resolved {
	if v, ok := r.seen[p]; ok {
		return v
	}
	if !filepath.IsAbs(p) {
		return resolved{err: &os.PathError{Op: "resolve", Path: p, Err: errRelative}}
	}
	if depth > 40 {
		return resolved{err: errLoop}
	}
	parent := r.resolve(filepath.Dir(p), depth)
	if parent.err != nil {
		return parent
	}
	if parent.mode != unix.S_IFDIR {
		return resolved{err: unix.ENOTDIR}
	}
	candidate := filepath.Join(parent.real, filepath.Base(p))
	var st unix.Stat_t
	var v resolved
	if err := unix.Lstat(candidate, &st); err != nil {
		v = resolved{err: &os.PathError{Op: "lstat", Path: candidate, Err: err}}
	} else if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := os.Readlink(candidate)
		if err != nil {
			v = resolved{err: err}
		} else {
			if !filepath.IsAbs(target) {
				target = filepath.Join(parent.real, target)
			}
			v = r.resolve(filepath.Clean(target), depth+1)
			if v.err == nil {
				v.links = append(append(append([]string{}, parent.links...), candidate), v.links...)
			}
		}
	} else {
		v = resolved{real: candidate, mode: st.Mode & unix.S_IFMT, size: st.Size, links: parent.links}
	}
	r.seen[p] = v
	return v
}
