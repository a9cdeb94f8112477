//go:build linux

package corral

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/internal/nofollow"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// The git sweep: after every run, corral walks each writable root whole
// and quarantines what the command left in any git folder that could make
// git on the host run a program. The read-only binds of the plan only
// cover the git folders that exist at launch, within a small search; a
// command can make new ones anywhere (git init, a bare-shaped folder, a
// .git file pointing elsewhere), deeper than the search goes, and git on
// the host finds them from any folder below (a shell prompt runs git
// status in every folder the user enters).
//
// What the walk costs: one getdents per folder, with no stat per file
// (the entries' types come with the names); an fstat per git folder and
// one per candidate file in it. Folders are opened relative to their
// parent without following symlinks, so neither a link nor a path longer
// than PATH_MAX leads it elsewhere, and at most maxSweepFds folders are
// held open: deeper, a parent is reopened through "..".
//
// What counts as changed: a file's ctime (inode change time) is at or
// after the run's start, which the command cannot set back. A git folder
// that changed (created, renamed into place, an entry added) makes all
// that is in it count as changed, since a folder renamed into place keeps
// the files' old times; so does a .git file or commondir that changed
// and points at it. The git folders the plan protected at launch are the
// exception: the command could neither change their config and hooks nor
// move them.

// maxSweepFds is how many folders the walk holds open at once.
const maxSweepFds = 128

// sweepClock is the run's start as ctime counts it: the kernel stamps
// files from the coarse clock (or a finer one, never earlier).
type sweepClock = unix.Timespec

func sweepStart() sweepClock {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts)
	return ts
}

// sweepGit walks the writable roots after a run. protected are the paths
// the plan bound read-only: a git folder whose config was among them is
// not taken as changed because git ran in it. top checks the protected
// names at the top of each root too (the landlock tier, which binds none
// read-only there).
func sweepGit(roots, protected []string, home string, since sweepClock, top bool) *sweep {
	s := &sweep{top: top, since: since, home: home, uid: os.Geteuid(), known: map[string]bool{}, done: map[[2]uint64]int{}, chmodded: map[[2]uint64]bool{}, closed: map[[2]uint64]uint32{}, buf: make([]byte, 32<<10), names: map[string]string{}, exact: map[string]bool{}}
	for _, e := range policyengine.ProtectedPaths {
		if !e.Home && !strings.Contains(e.Path, "/") {
			s.names[e.Path] = e.Why
		}
	}
	// A protected path a write grant names exactly is a root of its own
	// (the grant's base).
	for _, r := range roots {
		s.exact[r] = true
	}
	for _, p := range protected {
		if path.Base(p) == "config" {
			s.known[path.Dir(p)] = true
		}
	}
	roots = slices.Clone(roots)
	slices.Sort(roots)
	for _, r := range roots {
		if !s.under(r) { // one inside another is walked with it
			s.roots = append(s.roots, r)
		}
	}
	// A relative core.hooksPath in the user's global config names a
	// folder in every repository (gitFolder); an absolute one is checked
	// with what the global config includes (global).
	if hp := sandbox.GlobalHooksPath(home); hp != "" && !path.IsAbs(hp) && !strings.HasPrefix(hp, "~/") {
		s.globalHooks = hp
	}
	s.global()
	for _, r := range s.roots {
		s.above(r)
		s.run(r)
	}
	return s
}

// sweep is one walk over the writable roots.
type sweep struct {
	since unix.Timespec // the run's start on the coarse clock ctime uses
	top   bool          // check the protected names at the roots' tops too
	roots []string
	known map[string]bool // git folders whose config and hooks were bound read-only
	uid   int
	home  string
	// globalHooks is a relative core.hooksPath of the user's global git
	// config: a folder of every repository's work tree.
	globalHooks string
	// names are the root-relative protected names (and why), quarantined
	// in sub-folders too; exact the roots, which a grant names exactly.
	names map[string]string
	exact map[string]bool
	done  map[[2]uint64]int // git folders inspected (by device and inode): 1 as found, 2 as changed
	// chmodded are the folders whose mode corral changed to look
	// inside, and whether they had changed during the run before.
	chmodded map[[2]uint64]bool
	// closed are the bits closeToOthers took off a file or folder: the
	// walk's own mode changes, undone later, keep them off.
	closed  map[[2]uint64]uint32
	buf     []byte
	Folders int // folders read
	Gits    int // git folders inspected
	Moved   []Quarantined
	Reset   []Reset  // modes set back (modes_linux.go)
	Errs    []string // what could not be checked
}

// sweepFrame is one folder on the walk's stack.
type sweepFrame struct {
	fd       int // -1 while closed to save descriptors
	name     string
	dev, ino uint64
	subdirs  []string
	next     int
	mode     uint32 // restored on leaving when chmodded
	id       [2]uint64
	chmodded bool
	git      bool // a git folder (its objects folder is trimmed)
}

// run walks root.
func (s *sweep) run(root string) {
	// Opened from its parent, so that a root the command made
	// unreadable is opened as any folder in it is; the way there is
	// walked without following a symlink (roots are real paths: one
	// there now is another sandbox's, on a grant above this root).
	pfd, err := nofollow.OpenDir(path.Dir(root))
	if err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: %v", root, err))
		return
	}
	defer unix.Close(pfd)
	first := &sweepFrame{name: root}
	if first.fd, err = s.open(pfd, path.Base(root), first); err != nil {
		if err != unix.ENOENT {
			s.Errs = append(s.Errs, fmt.Sprintf("%s: %v", root, err))
		}
		return
	}
	stack := []*sweepFrame{first}
	s.visit(stack)
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if top.next == len(top.subdirs) {
			ok := s.leave(stack)
			stack = stack[:len(stack)-1]
			if !ok {
				n := s.reach(stack)
				for _, f := range stack[n:] {
					if f.fd >= 0 {
						s.restore(f)
						unix.Close(f.fd)
					}
				}
				stack = stack[:n]
			}
			continue
		}
		name := top.subdirs[top.next]
		top.next++
		child := &sweepFrame{name: name, fd: -1}
		child.fd, err = s.open(top.fd, name, child)
		if err == unix.EACCES && s.searchFrame(top) {
			child.fd, err = s.open(top.fd, name, child)
		}
		if err != nil {
			s.Errs = append(s.Errs, fmt.Sprintf("%s: %v", framePath(stack)+"/"+name, err))
			continue
		}
		stack = append(stack, child)
		// The root's folder stays open: reach starts from it.
		if n := len(stack) - 1 - maxSweepFds; n >= 1 && stack[n].fd >= 0 {
			var st unix.Stat_t
			unix.Fstat(stack[n].fd, &st)
			stack[n].dev, stack[n].ino = st.Dev, st.Ino
			unix.Close(stack[n].fd)
			stack[n].fd = -1
		}
		s.visit(stack)
	}
}

// open opens the folder name in parent without following a symlink. A
// folder the command made unreadable (chmod 000) is opened after adding
// the owner's rights, if corral's user owns it; leave restores its mode.
func (s *sweep) open(parent int, name string, f *sweepFrame) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if err != unix.EACCES {
		return fd, err
	}
	// Through a descriptor of the folder itself (O_PATH needs no right
	// on it), so the mode changes on what was checked.
	p, perr := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if perr != nil {
		return -1, err
	}
	defer unix.Close(p)
	var st unix.Stat_t
	if unix.Fstat(p, &st) != nil || int(st.Uid) != s.uid {
		return -1, err
	}
	s.touched(&st)
	if cerr := chmodFd(p, uint32(st.Mode&0o7777|0o700)); cerr != nil {
		return -1, err
	}
	f.mode, f.id, f.chmodded = st.Mode&0o7777, [2]uint64{st.Dev, st.Ino}, true
	fd, err = unix.Open(nofollow.Magic(p), flags&^unix.O_NOFOLLOW, 0)
	if err != nil {
		chmodFd(p, f.mode)
		f.chmodded = false
	}
	return fd, err
}

// restore puts back the mode of the folder f if the walk changed it to
// look inside, through its descriptor.
func (s *sweep) restore(f *sweepFrame) {
	if f.chmodded && f.fd >= 0 {
		unix.Fchmod(f.fd, s.keep(f.id, f.mode))
		f.chmodded = false
	}
}

// searchFrame gives the folder f the owner's search right until the walk
// leaves it, if corral's user owns it and it lacks it (chmod 600: its
// entries are listed, but none can be opened).
func (s *sweep) searchFrame(f *sweepFrame) bool {
	var st unix.Stat_t
	if f.chmodded || unix.Fstat(f.fd, &st) != nil || int(st.Uid) != s.uid || st.Mode&0o100 != 0 {
		return false
	}
	s.touched(&st)
	if unix.Fchmod(f.fd, st.Mode&0o7777|0o100) != nil {
		return false
	}
	f.mode, f.id, f.chmodded = st.Mode&0o7777, [2]uint64{st.Dev, st.Ino}, true
	return true
}

// leave closes the top folder, reopening its parent through ".." if it
// was closed (false when that fails: the walk of this root ends).
func (s *sweep) leave(stack []*sweepFrame) bool {
	top := stack[len(stack)-1]
	defer func() {
		s.restore(top)
		unix.Close(top.fd)
		top.fd = -1
	}()
	if len(stack) == 1 {
		return true
	}
	parent := stack[len(stack)-2]
	if parent.fd < 0 {
		fd, err := unix.Openat(top.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil && !sameFolder(fd, parent) {
			unix.Close(fd)
			err = fmt.Errorf("moved while corral walked it")
		}
		if err != nil {
			return false
		}
		parent.fd = fd
	}
	return true
}

// sameFolder reports whether fd is the folder f was when the walk closed
// it.
func sameFolder(fd int, f *sweepFrame) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Dev == f.dev && st.Ino == f.ino
}

// reach reopens, after leave could not (the folder above the top was
// moved while corral walked below it: another sandbox on the same
// folders), the closed folders of stack by name from the deepest one
// still open (the root's is never closed), each checked to be the folder
// it was. It returns how many frames are still reachable: the walk goes
// on from the last of them, and what is left below is reported as not
// checked, never skipped in silence.
func (s *sweep) reach(stack []*sweepFrame) int {
	open := 0
	for i, f := range stack {
		if f.fd >= 0 {
			open = i
		} else {
			break
		}
	}
	for i := open + 1; i < len(stack); i++ {
		f := stack[i]
		fd, err := unix.Openat(stack[i-1].fd, f.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil && !sameFolder(fd, f) {
			unix.Close(fd)
			err = fmt.Errorf("moved while corral walked it")
		}
		if err != nil {
			s.Errs = append(s.Errs, fmt.Sprintf("%s: %v; what is left of it was not checked: check it before running git there", framePath(stack[:i+1]), err))
			return i
		}
		f.fd = fd
	}
	return len(stack)
}

// framePath is the path of the top of the stack.
func framePath(stack []*sweepFrame) string {
	names := make([]string, len(stack))
	for i, f := range stack {
		names[i] = f.name
	}
	return strings.Join(names, "/")
}

// visit reads the top folder: its sub-folders go on the walk, and what
// makes it (or a file in it) a git folder is inspected.
func (s *sweep) visit(stack []*sweepFrame) {
	top := stack[len(stack)-1]
	s.Folders++
	var head, gitfile, gitmodules bool
	var named, files []string
	err := s.entries(top.fd, func(name string, typ byte) {
		if _, ok := s.names[name]; ok && (len(stack) > 1 || s.top) {
			named = append(named, name)
		}
		if typ == unix.DT_REG || typ == unix.DT_UNKNOWN {
			files = append(files, name) // their modes are checked (modes_linux.go)
		}
		switch {
		case typ == unix.DT_DIR:
			top.subdirs = append(top.subdirs, name)
		case name == ".git":
			gitfile = true
		case name == ".gitmodules":
			gitmodules = true
		}
		if name == "HEAD" {
			head = true
		}
	})
	if err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: reading: %v", framePath(stack), err))
		return
	}
	inGit := head || top.name == ".git" || insideGit(stack) || slices.ContainsFunc(stack[:len(stack)-1], func(f *sweepFrame) bool { return f.git })
	if inGit {
		s.gitEntryOpen(top, framePath(stack))
	}
	if len(files) > 0 {
		s.fileModes(top.fd, framePath(stack), files, inGit)
	}
	if top.name == "objects" && len(stack) > 1 && stack[len(stack)-2].git {
		s.objects(top)
	}
	if len(named) > 0 {
		s.protectedNames(top, framePath(stack), named)
	}
	if !head && top.name != ".git" && slices.Contains(top.subdirs, "hooks") && insideGit(stack) {
		// A folder inside a git folder that is no git folder yet (no
		// HEAD: a submodule's git folder the command made or renamed
		// into place) holds hooks git runs once it is one.
		s.hooks(top.fd, framePath(stack), "hooks", false)
	}
	s.otherRepo(stack)
	if !head && top.name != ".git" && !gitfile && !gitmodules {
		return // most folders: no path to build
	}
	dir := framePath(stack)
	// Git takes a folder for a git folder only if it holds HEAD (a .git
	// folder without one is not a repository, but costs nothing to check).
	if head || path.Base(dir) == ".git" {
		top.git = true
		s.gitFolder(top.fd, dir, false)
	}
	if gitfile {
		s.gitFile(top.fd, dir)
	}
	if gitmodules {
		s.gitmodules(top.fd, dir)
	}
}

// otherRepo quarantines the repository config of Mercurial (.hg/hgrc)
// and Jujutsu (.jj/repo/config.toml) when the command made or changed it,
// at any depth: both run code from it (hooks, extensions, aliases). At the
// top of a writable root the namespaces tier binds them read-only.
func (s *sweep) otherRepo(stack []*sweepFrame) {
	top := stack[len(stack)-1]
	name := ""
	switch {
	case top.name == ".hg":
		name = "hgrc"
	case top.name == "repo" && len(stack) > 1 && stack[len(stack)-2].name == ".jj":
		name = "config.toml"
	default:
		return
	}
	if st, ok := s.stat(top.fd, name); ok && s.fresh(&st) {
		s.quarantine(top.fd, framePath(stack), name, "a repository config the command made or changed: "+map[string]string{"hgrc": "Mercurial runs its hooks and extensions", "config.toml": "Jujutsu runs its aliases"}[name])
	}
}

// insideGit reports whether a folder of the walk above the top one is a
// .git folder.
func insideGit(stack []*sweepFrame) bool {
	for _, f := range stack[:len(stack)-1] {
		if f.name == ".git" {
			return true
		}
	}
	return false
}

// protectedNames quarantines the names of the root-relative protected
// paths (.envrc, .vscode, .mcp.json, shell start-up files...) found in the
// sub-folder dir of a root (f) that the command made or changed (a
// folder: anything in it), unless a write grant names the path exactly.
// The plan protects them only at the top of each root, but direnv, IDEs
// and agents read them in whatever folder the user opens.
func (s *sweep) protectedNames(f *sweepFrame, dir string, names []string) {
	for _, n := range names {
		p := dir + "/" + n
		if s.exact[p] {
			continue
		}
		st, ok := s.stat(f.fd, n)
		if !ok || !s.fresh(&st) && !(st.Mode&unix.S_IFMT == unix.S_IFDIR && s.changedInside(f.fd, n, 0)) {
			continue
		}
		moved := len(s.Moved)
		s.quarantine(f.fd, dir, n, "a "+n+" the command made or changed in a sub-folder: "+s.names[n])
		// The walk goes on into the folder under its new name.
		if len(s.Moved) > moved && s.Moved[moved].To != "" {
			if i := slices.Index(f.subdirs, n); i >= 0 {
				f.subdirs[i] = path.Base(s.Moved[moved].To)
			}
		}
	}
}

// changedInside says if anything in the folder dirfd/name changed during
// the run (up to 8 folders deep; deeper counts as changed).
func (s *sweep) changedInside(dirfd int, name string, depth int) bool {
	if depth > 8 {
		return true
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true // the command may have made it unreadable
	}
	defer unix.Close(fd)
	// Listed first: entries' buffer is the sweep's one.
	var names []string
	if err := s.entries(fd, func(n string, _ byte) { names = append(names, n) }); err != nil {
		return true
	}
	for _, n := range names {
		st, ok := s.stat(fd, n)
		switch {
		case !ok:
		case s.fresh(&st):
			return true
		case st.Mode&unix.S_IFMT == unix.S_IFDIR && s.changedInside(fd, n, depth+1):
			return true
		}
	}
	return false
}

// objects trims the walk of a git folder's objects folder (f): up to 256
// folders of object files would double the walk of a typical repository,
// yet a repository hidden in one runs for git started there or reached
// through a symlink. A sub-folder is skipped only if it did not change
// during the run and holds no folder (a link count of 2: nothing to hide
// a repository in); any other is walked. A file system that does not
// count sub-folders in the link count (btrfs: 1) has all of them walked.
func (s *sweep) objects(f *sweepFrame) {
	f.subdirs = slices.DeleteFunc(f.subdirs, func(n string) bool {
		var st unix.Stat_t
		return unix.Fstatat(f.fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Nlink == 2 && !s.fresh(&st)
	})
}

// entries calls fn with the name and type of each entry of the folder fd
// (but . and ..), reading with getdents64.
func (s *sweep) entries(fd int, fn func(name string, typ byte)) error {
	for {
		n, err := unix.Getdents(fd, s.buf)
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.LittleEndian.Uint16(s.buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				return fmt.Errorf("bad directory entry")
			}
			name := s.buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if nm := string(name); nm != "." && nm != ".." {
				typ := s.buf[off+18]
				if typ == unix.DT_UNKNOWN { // some file systems leave it to stat
					var st unix.Stat_t
					if unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
						typ = unix.DT_DIR
					}
				}
				fn(nm, typ)
			}
			off += reclen
		}
	}
}

// fresh reports whether st changed during the run (before corral changed
// its mode to look inside).
func (s *sweep) fresh(st *unix.Stat_t) bool {
	if len(s.chmodded) > 0 {
		if f, ok := s.chmodded[[2]uint64{st.Dev, st.Ino}]; ok {
			return f
		}
	}
	return s.freshTime(st)
}

// freshTime reports whether st's ctime is at or after the run's start.
func (s *sweep) freshTime(st *unix.Stat_t) bool {
	return st.Ctim.Sec > s.since.Sec || st.Ctim.Sec == s.since.Sec && st.Ctim.Nsec >= s.since.Nsec
}

// under returns whether p is inside one of the writable roots.
func (s *sweep) under(p string) bool {
	for _, r := range s.roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// quarantine moves dir/name (dirfd) aside with moveAsideAt, mode 0400
// if it is a file, and records why.
func (s *sweep) quarantine(dirfd int, dir, name, why string) {
	target, removed, err := moveAsideAt(dirfd, dir, name, s.uid)
	if err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s/%s %s, and quarantining it failed: %v", dir, name, why, err))
		return
	}
	if removed {
		s.Moved = append(s.Moved, Quarantined{Path: dir + "/" + name, Why: why + "; no name to move it to was free, so corral REMOVED it"})
		return
	}
	// Not a file with other names: the command may have linked one of
	// the user's files here, whose mode is not corral's to change. On a
	// descriptor of the renamed file itself: another sandbox running on
	// the same folders could swap the name for a symlink meanwhile.
	if fd, err := unix.Openat(dirfd, target, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 {
			chmodFd(fd, 0o400)
		}
		unix.Close(fd)
	}
	s.Moved = append(s.Moved, Quarantined{Path: dir + "/" + name, To: dir + "/" + target, Why: why})
}
