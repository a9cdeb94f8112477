//go:build linux

package corral

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// commondir follows the git folder's commondir (where a linked worktree's
// or a submodule's config and hooks live): inside a writable root its
// target is a git folder to inspect too, outside one a changed commondir
// sends git to config the sweep does not see.
func (s *sweep) commondir(dirfd int, dir string, changed bool) {
	st, ok := s.stat(dirfd, "commondir")
	if !ok {
		return
	}
	changed = changed || s.fresh(&st)
	data, err := s.read(dirfd, "commondir")
	// As git reads it: trailing line ends cut, then a C string.
	target, nul := cString([]byte(strings.TrimRight(string(data), "\r\n")))
	switch {
	case (err != nil || target == "" || nul) && changed:
		s.quarantine(dirfd, dir, "commondir", "a commondir the command wrote that corral cannot read or that holds a NUL byte")
		return
	case err != nil || target == "":
		return
	}
	s.pointsTo(dirfd, dir, "commondir", target, changed, -1)
}

// pointsTo inspects the git folder target that dir/name names, followed
// as git does. If name changed and the target is outside the writable
// roots, or cannot be followed to a folder (missing, a loop, a folder
// corral cannot search, a new symlink to an absolute path on the way),
// name is quarantined: never taken as "no repository there". wt (open, or
// -1) is the top of the work tree that uses the target through name: a
// relative core.hooksPath there is found from it, whatever git folder
// the target is (a new .git file next to hooks the command wrote chooses
// them for an existing repository).
func (s *sweep) pointsTo(dirfd int, dir, name, target string, changed bool, wt int) {
	var restore []func()
	defer func() { undoAll(restore) }()
	pfd, _, last, err := s.resolve(dirfd, target, &restore)
	fd, real := -1, ""
	if err == nil {
		fd, err = s.openSearch(pfd, last, &restore)
		unix.Close(pfd)
		if err == nil {
			defer unix.Close(fd)
			if real = fdPath(fd); real == "" {
				err = unix.ENAMETOOLONG
			}
		}
	}
	switch {
	case err != nil && changed:
		var re *resolveErr
		if errors.As(err, &re) {
			unix.Close(re.fd)
		}
		s.quarantine(dirfd, dir, name, fmt.Sprintf("it sends git to %q, which corral cannot follow to a folder it checks (%v)", target, err))
	case err != nil:
		// The user's own pointer: what the command changed on the way
		// is quarantined, a warning otherwise.
		s.unverifiable(err, fmt.Sprintf("%s/%s names %q", dir, name, target))
	case !s.under(real):
		if changed {
			s.quarantine(dirfd, dir, name, "it sends git to "+real+", outside the folders corral checks")
		}
	default:
		s.gitFolder(fd, real, changed)
		if wt >= 0 {
			s.relativeHooksIn(fd, real, wt, changed)
		}
	}
}

// gitFile checks the .git entry of dir that is not a folder: a .git file
// ("gitdir: PATH") or a symlink the command made.
func (s *sweep) gitFile(dirfd int, dir string) {
	st, ok := s.stat(dirfd, ".git")
	if !ok {
		return
	}
	fresh := s.fresh(&st)
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		if fresh {
			s.quarantine(dirfd, dir, ".git", "a .git "+fileKind(st.Mode)+" the command made")
		}
		return
	}
	data, err := s.read(dirfd, ".git")
	text, nul := cString([]byte(strings.TrimRight(string(data), "\r\n")))
	target, ok := strings.CutPrefix(text, "gitdir: ")
	if err != nil || !ok || target == "" || nul {
		if fresh {
			s.quarantine(dirfd, dir, ".git", "a .git file the command wrote that corral cannot read or that holds a NUL byte")
		}
		return
	}
	if fresh {
		s.pointsTo(dirfd, dir, ".git", target, true, dirfd)
		return
	}
	// The user's own .git file (a linked worktree, a submodule) is
	// followed too: its folder is a work tree where a relative
	// core.hooksPath finds hooks the command wrote.
	var restore []func()
	defer func() { undoAll(restore) }()
	if fd, real := s.openPointer(dirfd, target, &restore); fd >= 0 {
		s.relativeHooksIn(fd, real, dirfd, false)
		unix.Close(fd)
	}
}

// fileKind names the type of a file that is not a regular file.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFDIR:
		return "folder"
	}
	return "file of unknown type"
}

// gitmodules checks a .gitmodules the command changed: git ignores an
// `update = !command` there since 2.24, older ones ran it.
func (s *sweep) gitmodules(dirfd int, dir string) {
	st, ok := s.stat(dirfd, ".gitmodules")
	if !ok || !s.fresh(&st) || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	data, err := s.read(dirfd, ".gitmodules")
	if err != nil {
		return
	}
	entries, err := parseGitConfig(data)
	if err != nil {
		s.quarantine(dirfd, dir, ".gitmodules", "a .gitmodules the command wrote in syntax corral does not check: "+err.Error())
		return
	}
	for _, e := range entries {
		if e.pattern() == "submodule.*.update" && strings.HasPrefix(strings.TrimSpace(e.Value), "!") {
			s.quarantine(dirfd, dir, ".gitmodules", "a .gitmodules the command wrote with a submodule update command")
			return
		}
	}
}

// above checks the repository a root lies in, if its git folder is above
// the root (the work dir is a sub-folder of the user's repository): its
// core.hooksPath or an included config may name a path inside the root.
func (s *sweep) above(root string) {
	for d := path.Dir(root); ; d = path.Dir(d) {
		var st unix.Stat_t
		if unix.Lstat(d+"/.git", &st) == nil {
			dfd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return
			}
			defer unix.Close(dfd)
			target := ".git"
			if st.Mode&unix.S_IFMT == unix.S_IFREG {
				data, _ := s.read(dfd, ".git")
				text, _ := cString([]byte(strings.TrimRight(string(data), "\r\n")))
				var ok bool
				if target, ok = strings.CutPrefix(text, "gitdir: "); !ok {
					return
				}
			}
			var restore []func()
			defer func() { undoAll(restore) }()
			gfd, real := s.openPointer(dfd, target, &restore)
			if gfd < 0 {
				return
			}
			defer unix.Close(gfd)
			s.config(gfd, real, "config", dfd, false, 0)
			data, err := s.read(gfd, "commondir")
			common, _ := cString([]byte(strings.TrimRight(string(data), "\r\n")))
			if err != nil || common == "" {
				return
			}
			if cfd, creal := s.openPointer(gfd, common, &restore); cfd >= 0 {
				s.config(cfd, creal, "config", dfd, false, 0)
				unix.Close(cfd)
			}
			return
		}
		if d == "/" {
			return
		}
	}
}

// global checks what the user's global git configs (~/.gitconfig,
// $XDG_CONFIG_HOME/git/config) include: a file inside a writable root
// the command may have rewritten. (Their relative core.hooksPath is
// checked in each repository.)
func (s *sweep) global() {
	if s.home == "" {
		return
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = path.Join(s.home, ".config")
	}
	for _, g := range []string{path.Join(s.home, ".gitconfig"), path.Join(xdg, "git/config")} {
		fd, err := unix.Open(path.Dir(g), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		s.config(fd, path.Dir(g), path.Base(g), noWorkTree, false, 0)
		unix.Close(fd)
	}
}

// openPointer opens the folder p names from dirfd, as pointsTo follows
// it (-1 on failure).
func (s *sweep) openPointer(dirfd int, p string, restore *[]func()) (int, string) {
	pfd, _, last, err := s.resolve(dirfd, p, restore)
	if err != nil {
		var re *resolveErr
		if errors.As(err, &re) {
			unix.Close(re.fd)
		}
		return -1, ""
	}
	defer unix.Close(pfd)
	fd, err := s.openSearch(pfd, last, restore)
	if err != nil {
		return -1, ""
	}
	real := fdPath(fd)
	if real == "" {
		unix.Close(fd)
		return -1, ""
	}
	return fd, real
}
