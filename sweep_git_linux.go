//go:build linux

package corral

import (
	"errors"
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
	// A git folder its owner may not search (chmod 600) hides every
	// file in it from fstatat: searched with the owner's right added.
	undo, ok := s.searchable(fd, &st)
	defer undo()
	if !ok {
		s.Errs = append(s.Errs, dir+": a git folder corral may not search")
		return
	}
	// A git folder protected at launch had its config and hooks bound
	// read-only and could not be moved: what changed in it is git's
	// work, even when a new worktree's commondir names it.
	changed := (inherited || s.fresh(&st)) && !s.known[dir]
	for _, name := range []string{"config", "config.worktree"} {
		s.config(fd, dir, name, -1, changed, 0)
	}
	s.hooks(fd, dir, "hooks", changed)
	s.relativeHooksIn(fd, dir, -1, changed)
	s.attributes(fd, dir, changed)
	s.commondir(fd, dir, changed)
}

// relativeHooksIn checks the folder a relative core.hooksPath names for
// the git folder dir (fd), as git finds it: the last core.hooksPath of
// the user's global config, then the config of its commondir (itself if
// none) and its own config.worktree;
// relative to the top of the work tree, which is core.worktree of those
// if set, else wt (open: the folder holding a .git file or folder that
// leads here), else the folder above a .git folder, else the git folder
// itself. (A relative core.hooksPath of the user's own config with no wt
// is checked by config too.)
func (s *sweep) relativeHooksIn(fd int, dir string, wt int, changed bool) {
	hp, from := s.globalHooks, "the user's global git config"
	cfd, cdir := fd, dir
	if data, err := s.read(fd, "commondir"); err == nil {
		if common, nul := cString([]byte(strings.TrimRight(string(data), "\r\n"))); common != "" && !nul {
			var restore []func()
			defer func() { undoAll(restore) }()
			if c, real := s.openPointer(fd, common, &restore); c >= 0 {
				defer unix.Close(c)
				cfd, cdir = c, real
			}
		}
	}
	var entries []gitEntry
	for _, f := range []struct {
		fd        int
		dir, name string
	}{{cfd, cdir, "config"}, {fd, dir, "config.worktree"}} {
		data, err := s.read(f.fd, f.name)
		if err != nil {
			continue
		}
		name := f.dir + "/" + f.name
		es, err := parseGitConfig(data)
		if err != nil {
			es = looseGitEntries(data)
		}
		for _, e := range es {
			if e.pattern() == "core.hookspath" {
				hp, from = e.Value, name
			}
		}
		entries = append(entries, es...)
	}
	if hp == "" || path.IsAbs(hp) || strings.HasPrefix(hp, "~/") {
		return // none, or the same folder for every work tree: config checks it
	}
	var top int
	var err error
	if wt >= 0 && !hasWorkTree(entries) {
		top, err = unix.FcntlInt(uintptr(wt), unix.F_DUPFD_CLOEXEC, 0)
	} else {
		top, err = s.workTree(fd, dir, entries)
	}
	if err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: the top of its work tree, where core.hooksPath %q of %s is: %v", dir, hp, from, err))
		return
	}
	defer unix.Close(top)
	s.follow(top, hp, fmt.Sprintf("%s (its work tree's %s: core.hooksPath of %s)", dir, hp, from), func(pfd int, real, last string) {
		s.hooks(pfd, real, last, changed)
	})
}

// hasWorkTree says if entries set core.worktree.
func hasWorkTree(entries []gitEntry) bool {
	for _, e := range entries {
		if e.pattern() == "core.worktree" {
			return true
		}
	}
	return false
}

// workTree opens (O_PATH) the top of the work tree of the git folder dir
// (fd), where git runs hooks and finds a relative core.hooksPath: the
// core.worktree of its config (entries) if set, relative to the git
// folder; else the folder above a .git folder; else the git folder itself.
func (s *sweep) workTree(fd int, dir string, entries []gitEntry) (int, error) {
	wt := ""
	for _, e := range entries {
		if e.pattern() == "core.worktree" {
			wt = e.Value
		}
	}
	switch {
	case wt != "":
		var restore []func()
		defer func() { undoAll(restore) }()
		top, _ := s.openPointer(fd, wt, &restore)
		if top < 0 {
			return -1, fmt.Errorf("core.worktree %q cannot be followed", wt)
		}
		return top, nil
	case path.Base(dir) == ".git":
		return unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
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
		// git never makes info a symlink: a new one is the command's,
		// in a git folder protected at launch too.
		if changed || s.fresh(&ist) {
			s.quarantine(fd, dir, "info", "an info symlink the command made, which sends git to attributes it chose")
		}
		return
	}
	info, err := unix.Openat(fd, "info", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if changed {
			s.quarantine(fd, dir, "info", "an info folder the command changed and corral cannot open ("+err.Error()+")")
		}
		return
	}
	defer unix.Close(info)
	if undo, ok := s.searchable(info, &ist); !ok {
		if changed {
			s.quarantine(fd, dir, "info", "an info folder the command changed and corral cannot search")
		}
		return
	} else {
		defer undo()
	}
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
// top is the work tree's top, open, for a relative core.hooksPath (-1:
// the folder above a .git folder, else the git folder itself).
func (s *sweep) config(dirfd int, dir, name string, top int, changed bool, depth int) {
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
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			s.Errs = append(s.Errs, fmt.Sprintf("%s/%s: the includes and core.hooksPath of this git config, which corral cannot read (%v)", dir, name, err))
		}
		return
	}
	entries, err := parseGitConfig(data)
	if err != nil {
		// Checked as far as a loose reading finds them, and said.
		s.Errs = append(s.Errs, fmt.Sprintf("%s/%s: the includes and core.hooksPath of this git config, in syntax corral does not parse (%v); those a loose reading finds were checked", dir, name, err))
		entries = looseGitEntries(data)
	}
	// The top of the work tree, opened when first needed: a relative
	// core.hooksPath is from there, in an included file too.
	opened := false
	defer func() {
		if opened {
			unix.Close(top)
		}
	}()
	getTop := func() int {
		if top == -1 {
			t, err := s.workTree(dirfd, dir, entries)
			if err != nil {
				s.Errs = append(s.Errs, fmt.Sprintf("%s: the top of its work tree, where a relative core.hooksPath is: %v", dir, err))
				t = noWorkTree
			}
			top, opened = t, err == nil
		}
		return top
	}
	for _, e := range entries {
		v := e.Value
		if strings.HasPrefix(v, "~/") {
			v = path.Join(s.home, v[2:])
		}
		switch {
		case e.pattern() == "core.hookspath":
			if !path.IsAbs(v) && getTop() == noWorkTree {
				continue
			}
			s.follow(top, v, fmt.Sprintf("%s/%s sets core.hooksPath %q", dir, name, v), func(fd int, real, last string) {
				s.hooks(fd, real, last, false)
			})
		case e.Key == "path" && (e.Section == "include" || e.Section == "includeif") && depth < 10:
			// Relative to the folder of the file that includes it.
			t := getTop()
			s.follow(dirfd, v, fmt.Sprintf("%s/%s includes %q", dir, name, v), func(fd int, real, last string) {
				s.config(fd, real, last, t, false, depth+1)
			})
		}
	}
}

// follow resolves the pointer p from the folder dirfd and calls fn with
// the folder that holds its last component (open, its path, the name), or
// reports it as unverifiable (what says where it was read).
func (s *sweep) follow(dirfd int, p, what string, fn func(fd int, real, last string)) {
	var restore []func()
	defer func() { undoAll(restore) }()
	pfd, real, last, err := s.resolve(dirfd, p, &restore)
	if err != nil {
		s.unverifiable(err, what)
		return
	}
	defer unix.Close(pfd)
	fn(pfd, real, last)
}

// hooks quarantines what changed in the hooks folder dir/name (but the
// .sample files git init writes, which git never runs).
func (s *sweep) hooks(dirfd int, dir, name string, changed bool) {
	if !s.under(path.Join(dir, name)) {
		return // not the command's to change
	}
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
	// Listed but not searchable (chmod 600), its hooks would escape the
	// fstatat below, and run once the user makes it searchable again.
	if undo, ok := s.searchable(fd, &st); !ok {
		if changed {
			s.quarantine(dirfd, dir, name, "a hooks folder the command changed and corral cannot search")
		}
		return
	} else {
		defer undo()
	}
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

// noWorkTree is config's top for a config of no repository: a relative
// core.hooksPath in it is not followed from there.
const noWorkTree = -2

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
