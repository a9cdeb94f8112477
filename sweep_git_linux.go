//go:build linux

package corral

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"corral/sandbox"
)

// maxGitFile is the largest git config, .git file or .gitmodules the
// sweep reads; a larger changed one is quarantined unread.
const maxGitFile = 1 << 20

// gitFolder inspects the git folder dir (open as fd). inherited says it
// counts as changed because a changed pointer (.git file, commondir) names
// it.
func (s *sweep) gitFolder(fd int, dir string, inherited bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	// Once as the walk finds it, once more at most as a changed
	// pointer's target (a commondir cycle ends here).
	id, pass := [2]uint64{st.Dev, st.Ino}, 1
	if inherited {
		pass = 2
	}
	if s.done[id] >= pass {
		return
	}
	s.done[id] = pass
	s.Gits++
	// A git folder protected at launch had its config and hooks bound
	// read-only and could not be moved: what changed in it is git's
	// work, even when a new worktree's commondir names it.
	changed := (inherited || s.fresh(&st)) && !s.known[dir]
	for _, name := range []string{"config", "config.worktree"} {
		s.config(fd, dir, name, "", changed, 0)
	}
	s.hooks(fd, dir, "hooks", changed)
	s.attributes(fd, dir, changed)
	s.commondir(fd, dir, changed)
}

// attributes quarantines info/attributes the command wrote: attributes
// choose the filters and diff drivers the user's config defines.
func (s *sweep) attributes(fd int, dir string, changed bool) {
	ist, ok := s.stat(fd, "info")
	if !ok {
		return
	}
	// In a git folder protected at launch git itself may have written to
	// info/ (sparse-checkout): only the file's own time counts there.
	changed = changed || s.fresh(&ist) && !s.known[dir]
	if ist.Mode&unix.S_IFMT == unix.S_IFLNK {
		if changed {
			s.quarantine(fd, dir, "info", "an info symlink the command made, which sends git to attributes it chose")
		}
		return
	}
	info, err := unix.Openat(fd, "info", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(info)
	if ast, ok := s.stat(info, "attributes"); ok && (changed || s.fresh(&ast)) {
		s.quarantine(info, dir+"/info", "attributes", "git attributes the command wrote, which choose filters and diff drivers")
	}
}

// stat is fstatat without following a symlink.
func (s *sweep) stat(dirfd int, name string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	return st, unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// read reads dirfd/name, a regular file, without following a symlink.
func (s *sweep) read(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGitFile+1))
	if err == nil && len(data) > maxGitFile {
		err = fmt.Errorf("larger than %d bytes", maxGitFile)
	}
	return data, err
}

// config checks the git config file dir/name: changed, it must hold only
// inert keys (gitconfig.go); unchanged (the user's own), what it includes
// and its core.hooksPath are checked for what the command changed.
// top is the work tree's top for a relative core.hooksPath ("": the
// folder above a .git folder, else the git folder itself).
func (s *sweep) config(dirfd int, dir, name, top string, changed bool, depth int) {
	st, ok := s.stat(dirfd, name)
	if !ok {
		return
	}
	data, err := s.read(dirfd, name)
	// A config outside the roots (a repository above the work dir) is
	// not the command's; only what it names inside them is checked.
	if s.under(dir) && (changed || s.fresh(&st)) {
		why := ""
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			why = "a symlink to a git config"
		case err != nil:
			why = "unreadable (" + err.Error() + ")"
		default:
			why = runsNothing(data)
		}
		if why != "" {
			s.quarantine(dirfd, dir, name, "git config the command wrote: "+why)
		}
		return
	}
	if err != nil {
		return
	}
	entries, err := parseGitConfig(data)
	if err != nil {
		return
	}
	for _, e := range entries {
		v := e.Value
		if strings.HasPrefix(v, "~/") {
			v = path.Join(s.home, v[2:])
		}
		hooksPath := e.pattern() == "core.hookspath"
		switch {
		case hooksPath && !path.IsAbs(v):
			// Relative, hooks are run from the top of the work tree
			// (for a bare repository, the git folder).
			if top == "" {
				top = dir
				if path.Base(dir) == ".git" {
					top = path.Dir(dir)
				}
			}
			s.hooksAt(path.Join(top, v))
		case hooksPath:
			s.hooksAt(v)
		case e.Key == "path" && (e.Section == "include" || e.Section == "includeif") && depth < 10:
			if !path.IsAbs(v) {
				v = path.Join(dir, v)
			}
			s.included(path.Clean(v), depth+1)
		}
	}
}

// openIn opens the folder p inside a writable root, refusing any path
// that leaves the root on the way (a symlink the command planted, or ".."):
// the sweep reads and renames only inside the roots.
func (s *sweep) openIn(p string) (int, error) {
	for _, r := range s.roots {
		if p != r && !strings.HasPrefix(p, r+"/") {
			continue
		}
		rfd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		defer unix.Close(rfd)
		rel := strings.TrimPrefix(strings.TrimPrefix(p, r), "/")
		if rel == "" {
			rel = "."
		}
		return unix.Openat2(rfd, rel, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
	}
	return -1, unix.EXDEV
}

// included checks a config file the user's config includes.
func (s *sweep) included(file string, depth int) {
	fd, err := s.openIn(path.Dir(file))
	if err != nil {
		return
	}
	defer unix.Close(fd)
	s.config(fd, path.Dir(file), path.Base(file), "", false, depth)
}

// hooksAt checks a core.hooksPath folder of the user's config.
func (s *sweep) hooksAt(dir string) {
	dir = path.Clean(dir)
	fd, err := s.openIn(path.Dir(dir))
	if err != nil {
		return
	}
	defer unix.Close(fd)
	s.hooks(fd, path.Dir(dir), path.Base(dir), false)
}

// hooks quarantines what changed in the hooks folder dir/name (but the
// .sample files git init writes, which git never runs).
func (s *sweep) hooks(dirfd int, dir, name string, changed bool) {
	st, ok := s.stat(dirfd, name)
	if !ok {
		return
	}
	changed = changed || s.fresh(&st)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if changed {
			s.quarantine(dirfd, dir, name, "a hooks folder the command replaced")
		}
		return
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if changed {
			s.quarantine(dirfd, dir, name, "a hooks folder the command changed and corral cannot read ("+err.Error()+")")
		}
		return
	}
	defer unix.Close(fd)
	var names []string
	if err := s.entries(fd, func(n string, _ byte) { names = append(names, n) }); err != nil && changed {
		s.quarantine(dirfd, dir, name, "a hooks folder the command changed and corral cannot read ("+err.Error()+")")
		return
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".sample") || strings.Contains(n, sandbox.QuarantineSuffix) {
			continue
		}
		if hst, ok := s.stat(fd, n); ok && (changed || s.fresh(&hst)) {
			s.quarantine(fd, dir+"/"+name, n, "a git hook the command wrote")
		}
	}
}

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
	target := strings.TrimRight(string(data), "\r\n")
	if err != nil || target == "" {
		if changed {
			s.quarantine(dirfd, dir, "commondir", "a commondir the command wrote that corral cannot read")
		}
		return
	}
	if !path.IsAbs(target) {
		target = path.Join(dir, target)
	}
	s.pointsTo(dirfd, dir, "commondir", path.Clean(target), changed)
}

// pointsTo inspects the git folder target that dir/name names, or, if it
// is outside the writable roots and name changed, quarantines name.
func (s *sweep) pointsTo(dirfd int, dir, name, target string, changed bool) {
	fd, err := s.openIn(target)
	switch {
	case err == unix.EXDEV || err == unix.ELOOP:
		if changed {
			s.quarantine(dirfd, dir, name, "it sends git to "+target+", outside the folders corral checks")
		}
		return
	case err != nil:
		return // git finds no repository there either
	}
	defer unix.Close(fd)
	s.gitFolder(fd, target, changed)
}

// gitFile checks the .git entry of dir that is not a folder: a .git file
// ("gitdir: PATH") or a symlink the command made.
func (s *sweep) gitFile(dirfd int, dir string) {
	st, ok := s.stat(dirfd, ".git")
	if !ok || !s.fresh(&st) {
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		s.quarantine(dirfd, dir, ".git", "a .git symlink the command made")
		return
	}
	data, err := s.read(dirfd, ".git")
	target, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if err != nil || !ok || target == "" {
		s.quarantine(dirfd, dir, ".git", "a .git file the command wrote that corral cannot read")
		return
	}
	if !path.IsAbs(target) {
		target = path.Join(dir, target)
	}
	s.pointsTo(dirfd, dir, ".git", path.Clean(target), true)
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
			git := d + "/.git"
			if st.Mode&unix.S_IFMT == unix.S_IFREG {
				data, _ := s.read(unix.AT_FDCWD, git)
				target, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
				if !ok {
					return
				}
				if !path.IsAbs(target) {
					target = path.Join(d, target)
				}
				git = target
			}
			if fd, err := unix.Open(git, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				s.config(fd, git, "config", d, false, 0)
				s.commonConfig(fd, git, d)
				unix.Close(fd)
			}
			return
		}
		if d == "/" {
			return
		}
	}
}

// commonConfig checks the config of a linked worktree's common git folder.
func (s *sweep) commonConfig(fd int, git, top string) {
	data, err := s.read(fd, "commondir")
	common := strings.TrimRight(string(data), "\r\n")
	if err != nil || common == "" {
		return
	}
	if !path.IsAbs(common) {
		common = path.Join(git, common)
	}
	if cfd, err := unix.Open(common, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		s.config(cfd, common, "config", top, false, 0)
		unix.Close(cfd)
	}
}
