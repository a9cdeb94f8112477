//go:build linux

package corral

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox"
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
	if changed {
		s.closeToOthers(fd, dir, "a git folder", &st)
	}
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
		} else if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&othersWrite != 0 && !s.known[dir] {
			s.closeFile(dirfd, dir, name, "a git config")
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
	if changed && !s.known[dir] {
		s.closeToOthers(fd, dir+"/"+name, "a hooks folder", &st)
	}
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

// noWorkTree is config's top for a config of no repository: a relative
// core.hooksPath in it is not followed from there.
const noWorkTree = -2
