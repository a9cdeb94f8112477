package usernotif

import (
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CreatePolicy turns on the supervision of the syscalls that make a name
// (open and openat with O_CREAT, openat2, creat, mkdir, mknod, symlink,
// link, rename and their *at forms), for fs.deny: Landlock's rules are on
// inodes, and a name that does not exist has none, so only the supervisor
// can keep the command from making a denied one.
//
// The caller must have taken every make right (MAKE_REG, MAKE_DIR,
// MAKE_SYM, MAKE_FIFO, MAKE_SOCK, MAKE_CHAR, MAKE_BLOCK) out of the
// sandbox's Landlock rules, so the command cannot make any name itself.
// The supervisor then makes the names it allows, through a folder it
// opened as the command would and on a thread with the command's uid, no
// capability and the command's umask, and lets the command's own syscall
// go ahead (SECCOMP_USER_NOTIF_FLAG_CONTINUE) only where it makes nothing
// itself: an open of a file that exists, a call it does not handle. A
// path the command rewrites after the check can then make nothing, since
// the kernel refuses the command every name.
type CreatePolicy struct {
	// Rules are the sandbox's Landlock rules as they were before the
	// make rights were taken out (real paths), and Handled the rights
	// the ruleset handles: the supervisor makes a name only where they
	// would have let the command make it.
	Rules   []Rule
	Handled uint64
	// Deny returns the fs.deny glob that carves the real path p out of
	// the grants; a name it denies is refused with EACCES.
	Deny func(p string) (glob string, denied bool)
	// OwnRoot says the command has a root of its own, in a mount
	// namespace of its own (the namespaces tier): every path is then
	// resolved in /proc/PID/root (openat2 with RESOLVE_IN_ROOT), a
	// relative one from its start's path there, and Rules, Deny and
	// the refusals name paths as the command sees them. Without it the
	// command shares corral's root.
	OwnRoot bool
}

// Rule is one Landlock path rule: Access beneath Path.
type Rule struct {
	Path   string
	Access uint64
}

const (
	errnoDenied = unix.EACCES // a denied name, as Landlock says
	// maxRenameCheck bounds the entries of a folder the supervisor
	// reads to see whether renaming it would give a denied path to
	// something inside; a bigger folder is not renamed (EACCES).
	maxRenameCheck = 10_000

	makeRights = unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
)

// MakeRights are the Landlock rights CreatePolicy's caller takes out.
const MakeRights uint64 = makeRights

type createKind int

const (
	kindOpen createKind = iota
	kindMkdir
	kindMknod
	kindSymlink
	kindLink
	kindRename
)

// createCall is one decoded syscall that may make a name.
type createCall struct {
	name    string
	kind    createKind
	dirfd   int32  // the new name's dirfd (AT_FDCWD for the plain forms)
	ptr     uint64 // the new name
	flags   uint64 // open's, linkat's or renameat2's
	mode    uint32
	dev     uint64
	oldfd   int32  // link and rename: the old name's dirfd
	oldptr  uint64 // link, rename: the old name; symlink: the target
	howPtr  uint64 // openat2's struct open_how
	howSize uint64
}

// isCreate tells the syscalls that may make a name.
func isCreate(nr int32) bool {
	_, ok := decodeCreate(&seccompData{Nr: nr})
	return ok
}

// decodeCreate reads the arguments as the kernel does.
func decodeCreate(d *seccompData) (createCall, bool) {
	a := d.Args
	at := int32(unix.AT_FDCWD)
	nr := int64(d.Nr)
	switch nr {
	case unix.SYS_OPENAT:
		return createCall{name: "openat", kind: kindOpen, dirfd: int32(a[0]), ptr: a[1], flags: uint64(uint32(a[2])), mode: uint32(a[3])}, true
	case unix.SYS_OPENAT2:
		return createCall{name: "openat2", kind: kindOpen, dirfd: int32(a[0]), ptr: a[1], howPtr: a[2], howSize: a[3]}, true
	case unix.SYS_MKDIRAT:
		return createCall{name: "mkdirat", kind: kindMkdir, dirfd: int32(a[0]), ptr: a[1], mode: uint32(a[2])}, true
	case unix.SYS_MKNODAT:
		return createCall{name: "mknodat", kind: kindMknod, dirfd: int32(a[0]), ptr: a[1], mode: uint32(a[2]), dev: a[3]}, true
	case unix.SYS_SYMLINKAT:
		return createCall{name: "symlinkat", kind: kindSymlink, oldptr: a[0], dirfd: int32(a[1]), ptr: a[2]}, true
	case unix.SYS_LINKAT:
		return createCall{name: "linkat", kind: kindLink, oldfd: int32(a[0]), oldptr: a[1], dirfd: int32(a[2]), ptr: a[3], flags: uint64(uint32(a[4]))}, true
	case unix.SYS_RENAMEAT:
		return createCall{name: "renameat", kind: kindRename, oldfd: int32(a[0]), oldptr: a[1], dirfd: int32(a[2]), ptr: a[3]}, true
	case unix.SYS_RENAMEAT2:
		return createCall{name: "renameat2", kind: kindRename, oldfd: int32(a[0]), oldptr: a[1], dirfd: int32(a[2]), ptr: a[3], flags: uint64(uint32(a[4]))}, true
	}
	// The plain forms, where the architecture has them (-1 where not:
	// no syscall has that number, so none matches).
	switch {
	case nr == sysOpen:
		return createCall{name: "open", kind: kindOpen, dirfd: at, ptr: a[0], flags: uint64(uint32(a[1])), mode: uint32(a[2])}, true
	case nr == sysCreat:
		return createCall{name: "creat", kind: kindOpen, dirfd: at, ptr: a[0], flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, mode: uint32(a[1])}, true
	case nr == sysMkdir:
		return createCall{name: "mkdir", kind: kindMkdir, dirfd: at, ptr: a[0], mode: uint32(a[1])}, true
	case nr == sysMknod:
		return createCall{name: "mknod", kind: kindMknod, dirfd: at, ptr: a[0], mode: uint32(a[1]), dev: a[2]}, true
	case nr == sysSymlink:
		return createCall{name: "symlink", kind: kindSymlink, oldptr: a[0], dirfd: at, ptr: a[1]}, true
	case nr == sysLink:
		return createCall{name: "link", kind: kindLink, oldfd: at, oldptr: a[0], dirfd: at, ptr: a[1]}, true
	case nr == sysRename:
		return createCall{name: "rename", kind: kindRename, oldfd: at, oldptr: a[0], dirfd: at, ptr: a[1]}, true
	}
	return createCall{}, false
}

// outcome is what the supervisor does with a creating syscall.
type outcome struct {
	cont  bool // let the command's own syscall go ahead: it makes nothing
	errno unix.Errno
	why   string // for a refusal's log line
	fd    int    // open: the file made, to install in the target
}

var goAhead = outcome{cont: true, fd: -1}

func failed(err error) outcome {
	return outcome{errno: errnoOf(err), why: err.Error(), fd: -1}
}

// create answers a syscall that may make a name.
func (s *Supervisor) create(n *notif) {
	c, _ := decodeCreate(&n.Data)
	pid := int(n.Pid)
	o, what := s.createOutcome(n, &c, pid)
	switch {
	case o == staleOutcome:
	case o.cont:
		continueSyscall(s.fd, n.ID)
	case o.errno != 0 && o.errno == errnoDenied && strings.HasPrefix(o.why, "fs.deny"):
		s.refuse(n, o.errno, what, o.why)
	case o.errno != 0:
		// The kernel's own answer for what the supervisor tried: not a
		// refusal of policy, so not logged.
		respond(s.fd, n.ID, o.errno)
	case o.fd >= 0:
		err := addFDSend(s.fd, n.ID, o.fd, c.flags&unix.O_CLOEXEC != 0)
		unix.Close(o.fd)
		if err == nil {
			s.nAllowed.Add(1)
		} else if err != unix.ENOENT {
			respond(s.fd, n.ID, errnoOf(err))
		}
	default:
		if respond(s.fd, n.ID, 0) == nil {
			s.nAllowed.Add(1)
		}
	}
}

// staleOutcome is the outcome of a notification that went stale.
var staleOutcome = outcome{errno: unix.ENOENT, why: "stale", fd: -1}

// createOutcome reads what the call names and decides on it, making the
// name on the worker's thread when it is allowed.
func (s *Supervisor) createOutcome(n *notif, c *createCall, pid int) (outcome, string) {
	what := c.name
	if c.kind == kindOpen && c.howPtr != 0 {
		if c.howSize < 24 {
			return goAhead, what // EINVAL, from the kernel
		}
		b, err := s.read(pid, c.howPtr, 24)
		if err != nil {
			return goAhead, what // EFAULT or a read corral cannot do: nothing made
		}
		c.flags, c.mode = binary.NativeEndian.Uint64(b[0:]), uint32(binary.NativeEndian.Uint64(b[8:]))
		if binary.NativeEndian.Uint64(b[16:]) != 0 {
			return goAhead, what // RESOLVE_* flags: not emulated, so the kernel refuses the name
		}
	}
	switch {
	case c.kind == kindOpen && (c.flags&unix.O_CREAT == 0 || c.flags&unix.O_TMPFILE == unix.O_TMPFILE):
		return goAhead, what // makes no name
	case c.kind == kindMknod && c.mode&unix.S_IFMT != 0 && c.mode&unix.S_IFMT != unix.S_IFREG && c.mode&unix.S_IFMT != unix.S_IFIFO:
		return goAhead, what // a device or socket: the kernel refuses it
	case c.kind == kindRename && c.flags&^unix.RENAME_NOREPLACE != 0:
		return goAhead, what // exchange or whiteout: the kernel refuses them without the make rights
	case c.kind == kindLink && c.flags&^unix.AT_SYMLINK_FOLLOW != 0:
		return goAhead, what // AT_EMPTY_PATH: the kernel refuses the name
	}
	p, r := s.readPath(pid, c.ptr)
	if !idValid(s.fd, n.ID) {
		return staleOutcome, what
	}
	if r != nil {
		return outcome{errno: r.errno, why: r.why, fd: -1}, what
	}
	what = c.name + " of " + quoteShort(p)
	var old string
	if c.kind == kindSymlink || c.kind == kindLink || c.kind == kindRename {
		old, r = s.readPath(pid, c.oldptr)
		if r != nil {
			return outcome{errno: r.errno, why: r.why, fd: -1}, what
		}
	}
	umask := readUmask(pid)
	at, err := s.openCreateBase(pid, c.dirfd, p)
	if err != nil {
		return failed(err), what
	}
	defer closeFD(at.fd)
	oldAt := resolveFrom{fd: -1, path: old} // symlink: its target
	if c.kind == kindLink || c.kind == kindRename {
		if oldAt, err = s.openCreateBase(pid, c.oldfd, old); err != nil {
			return failed(err), what
		}
		defer closeFD(oldAt.fd)
	}
	if !idValid(s.fd, n.ID) {
		return staleOutcome, what
	}
	var o outcome
	s.work.do(umask, func() { o = s.makeName(c, pid, at, oldAt) })
	return o, what
}

// resolveFrom is where a path is resolved from: fd (-1: corral's own root,
// for an absolute path) and the path itself; inRoot says fd is the
// command's own root (OwnRoot) and path is absolute in it.
type resolveFrom struct {
	fd     int
	path   string
	inRoot bool
	// rootName is the kernel's name for the command's root ("/" unless
	// the host's own root is mounted below the top of its namespace),
	// which starts the kernel's name of every file in it.
	rootName string
}

// nameOf names the file open as fd as the command sees it, "" when it is
// deleted, unnamed or not in the command's root.
func (at resolveFrom) nameOf(fd int) string {
	p := realOf(fd)
	if !at.inRoot || at.rootName == "/" || p == "" {
		return p
	}
	switch rest, ok := strings.CutPrefix(p, at.rootName); {
	case ok && rest == "":
		return "/"
	case ok && rest[0] == '/':
		return rest
	}
	return ""
}

// openCreateBase opens what a path p starts from: without OwnRoot the
// target's cwd or dirfd for a relative path (through /proc), nothing
// for an absolute one. With OwnRoot it is the target's root, and a
// relative path is made absolute in it: its start's path there (the
// kernel names an fd of another mount namespace from that namespace's
// root), checked to lead to the same folder on the same mount.
// /proc/self and /proc/thread-self are corral's /proc/PID either way
// (inTarget), resolved from corral's root.
func (s *Supervisor) openCreateBase(pid int, dirfd int32, p string) (resolveFrom, error) {
	abs := strings.HasPrefix(p, "/")
	if !s.createPolicy.OwnRoot || (abs && inTarget(p, pid) != p) {
		if abs {
			return resolveFrom{fd: -1, path: p}, nil
		}
		fd, err := openBase(pid, dirfd)
		return resolveFrom{fd: fd, path: p}, err
	}
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return resolveFrom{fd: -1}, err
	}
	rootName := realOf(root)
	if rootName == "" {
		unix.Close(root)
		return resolveFrom{fd: -1}, unix.ENOENT
	}
	if abs {
		return resolveFrom{fd: root, path: p, inRoot: true, rootName: rootName}, nil
	}
	base, err := openBase(pid, dirfd)
	if err != nil {
		unix.Close(root)
		return resolveFrom{fd: -1}, err
	}
	defer unix.Close(base)
	at := resolveFrom{inRoot: true, rootName: rootName}.nameOf(base)
	if at == "" {
		unix.Close(root)
		return resolveFrom{fd: -1}, unix.ENOENT // a deleted folder
	}
	// The path must lead from the root to base itself: the folder may
	// have moved since, or be on a mount the name does not reach.
	same, err := sameFile(root, at, base)
	if err != nil || !same {
		unix.Close(root)
		if err == nil {
			err = unix.ENOENT
		}
		return resolveFrom{fd: -1}, err
	}
	return resolveFrom{fd: root, path: strings.TrimSuffix(at, "/") + "/" + p, inRoot: true, rootName: rootName}, nil
}

// underRoot tells whether the folder open as fd is in the command's own
// root, as the command reaches it (same folder, same mount); always true
// without OwnRoot (the landlock tier shares corral's root).
func (s *Supervisor) underRoot(pid, fd int) bool {
	if !s.createPolicy.OwnRoot {
		return true
	}
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(root)
	name := resolveFrom{inRoot: true, rootName: realOf(root)}.nameOf(fd)
	if name == "" {
		return false
	}
	same, err := sameFile(root, name, fd)
	return err == nil && same
}

// sameFile tells whether the real path p, resolved in root, is the file
// open as fd, on the same mount.
func sameFile(root int, p string, fd int) (bool, error) {
	other, err := unix.Openat2(root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false, err
	}
	defer unix.Close(other)
	return sameMount(fd, other)
}

// openParent opens (O_PATH) the folder that holds the last component of
// p as the target resolves it, on the worker's thread (so the folders'
// search permissions are the command's), and returns it with that
// component. A path whose last component is empty, "." or ".." names no
// new entry.
func openParent(pid int, at resolveFrom, dirOK bool) (int, string, error) {
	base, p := at.fd, at.path
	if dirOK {
		for len(p) > 1 && strings.HasSuffix(p, "/") {
			p = p[:len(p)-1]
		}
	}
	dir, name := path.Split(p)
	if name == "" || name == "." || name == ".." {
		return -1, "", nil
	}
	flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if at.inRoot {
		// Absolute symlinks and ".." stay in the command's root.
		fd, err := unix.Openat2(base, dir, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT})
		if err != nil {
			if walked, werr := walkInRoot(pid, base, dir); werr == nil {
				return walked, name, nil
			}
		}
		return fd, name, err
	}
	if base < 0 {
		// Not cleaned: ".." after a symlink is the kernel's to resolve.
		fd, err := unix.Open(inTarget(dir, pid), flags, 0)
		return fd, name, err
	}
	if dir == "" {
		dir = "."
	}
	fd, err := unix.Openat(base, dir, flags, 0)
	return fd, name, err
}

// maxLinks is the kernel's bound on the symlinks one path follows.
const maxLinks = 40

// walkInRoot opens the folder dir in the command's root one component at
// a time, for a path openat2(RESOLVE_IN_ROOT) does not resolve: through a
// symlink to /proc/self or /proc/thread-self (the sandbox's /dev/fd),
// which in the sandbox's /proc names no process for corral, and is
// corral's /proc/PID instead (no symlink past it is followed). Other
// symlinks are followed as the kernel follows them, absolute ones from
// the root; ".." stops at the root.
func walkInRoot(pid, root int, dir string) (int, error) {
	cur, err := unix.FcntlInt(uintptr(root), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	fail := func(err error) (int, error) {
		unix.Close(cur)
		return -1, err
	}
	comps, links := strings.Split(dir, "/"), 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		if c == "" || c == "." {
			continue
		}
		var next int
		if c == ".." {
			if same, err := sameMount(cur, root); err != nil || same {
				if err != nil {
					return fail(err)
				}
				continue
			}
			next, err = unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		} else {
			next, err = unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return fail(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return fail(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(cur)
			cur = next
			continue
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(next, "", buf)
		unix.Close(next)
		if links++; err != nil || links > maxLinks {
			if err == nil {
				err = unix.ELOOP
			}
			return fail(err)
		}
		target := string(buf[:n])
		if host := inTarget(target, pid); host != target {
			proc, err := unix.Openat2(unix.AT_FDCWD, host, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
			if err != nil {
				return fail(err)
			}
			unix.Close(cur)
			cur = proc
			continue
		}
		if strings.HasPrefix(target, "/") {
			top, err := unix.FcntlInt(uintptr(root), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return fail(err)
			}
			unix.Close(cur)
			cur = top
		}
		comps = append(strings.Split(target, "/"), comps...)
	}
	var st unix.Stat_t
	if err := unix.Fstat(cur, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err == nil {
			err = unix.ENOTDIR
		}
		return fail(err)
	}
	return cur, nil
}

// sameMount tells whether a and b are the same folder on the same mount.
func sameMount(a, b int) (bool, error) {
	var x, y unix.Statx_t
	const mask = unix.STATX_INO | unix.STATX_MNT_ID
	if err := unix.Statx(a, "", unix.AT_EMPTY_PATH, mask, &x); err != nil {
		return false, err
	}
	if err := unix.Statx(b, "", unix.AT_EMPTY_PATH, mask, &y); err != nil {
		return false, err
	}
	return x.Ino == y.Ino && x.Dev_major == y.Dev_major && x.Dev_minor == y.Dev_minor && x.Mnt_id == y.Mnt_id && x.Mask&unix.STATX_MNT_ID != 0, nil
}

// realOf names the file open as fd, "" when it is deleted or unnamed.
func realOf(fd int) string {
	where, err := os.Readlink(procSelfFD(fd))
	if err != nil || !strings.HasPrefix(where, "/") || strings.HasSuffix(where, " (deleted)") {
		return ""
	}
	return where
}

// rights is the union of the Landlock rules on p and the folders above
// it, with the rights the ruleset does not handle.
func (s *Supervisor) rights(p string) uint64 {
	have := ^s.createPolicy.Handled
	for _, r := range s.createPolicy.Rules {
		if within(p, []string{r.Path}) {
			have |= r.Access
		}
	}
	return have
}

// makeRight is the Landlock right that makes an entry of mode's type.
func makeRight(mode uint32) uint64 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	case unix.S_IFLNK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	case unix.S_IFIFO:
		return unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	case unix.S_IFSOCK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	case unix.S_IFCHR:
		return unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	case unix.S_IFBLK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	}
	return unix.LANDLOCK_ACCESS_FS_MAKE_REG
}

// makeName decides on the new name and makes it, on the worker's thread.
func (s *Supervisor) makeName(c *createCall, pid int, at, oldAt resolveFrom) outcome {
	old := oldAt.path
	parent, name, err := openParent(pid, at, c.kind == kindMkdir)
	if err != nil {
		return failed(err)
	}
	if parent < 0 {
		return goAhead // the kernel's EEXIST, EISDIR or ENOENT
	}
	defer unix.Close(parent)
	if strings.HasSuffix(at.path, "/") && c.kind != kindMkdir {
		return goAhead // a folder's name where a file is made: the kernel's error
	}
	preal := at.nameOf(parent)
	if preal == "" {
		return goAhead // a deleted folder: ENOENT
	}
	full := path.Join(preal, name)
	var st unix.Stat_t
	exists := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	if c.kind == kindOpen && exists {
		return goAhead // opens what is there; the kernel makes nothing
	}
	// Nothing is made outside the command's own root: a path through
	// /proc/self/.. (corral's /proc/PID, resolved from corral's root)
	// would otherwise lead to the host's own folders.
	if !s.underRoot(pid, parent) {
		return outcome{errno: unix.EACCES, why: "the folder is not in the sandbox's own root", fd: -1}
	}
	switch c.kind {
	case kindOpen:
		return s.makeFile(c, parent, name, full)
	case kindMkdir:
		return s.makeEntry(parent, full, unix.S_IFDIR, func() error { return unix.Mkdirat(parent, name, c.mode) })
	case kindMknod:
		return s.makeEntry(parent, full, c.mode&unix.S_IFMT, func() error { return unix.Mknodat(parent, name, c.mode, int(c.dev)) })
	case kindSymlink:
		return s.makeEntry(parent, full, unix.S_IFLNK, func() error { return unix.Symlinkat(old, parent, name) })
	}
	// link and rename: the old name, opened as the target would.
	oldParent, oldName, err := openParent(pid, oldAt, false)
	if err != nil {
		return failed(err)
	}
	if oldParent < 0 {
		return goAhead
	}
	defer unix.Close(oldParent)
	if !s.underRoot(pid, oldParent) {
		return outcome{errno: unix.EACCES, why: "the old name's folder is not in the sandbox's own root", fd: -1}
	}
	oldReal := oldAt.nameOf(oldParent)
	var ost unix.Stat_t
	follow := 0
	if c.kind == kindRename || c.flags&unix.AT_SYMLINK_FOLLOW == 0 {
		follow = unix.AT_SYMLINK_NOFOLLOW
	}
	if oldReal == "" {
		return goAhead // a deleted folder: ENOENT
	}
	if follow == 0 {
		// A link through a symlink (AT_SYMLINK_FOLLOW) is made by the
		// kernel, which refuses it (no make rights): checked here, the
		// rights and denies would be the symlink's folder's, not those
		// of the file it leads to.
		var lst unix.Stat_t
		if unix.Fstatat(oldParent, oldName, &lst, unix.AT_SYMLINK_NOFOLLOW) != nil || lst.Mode&unix.S_IFMT == unix.S_IFLNK {
			return goAhead
		}
	}
	// The old name's file, as the command reaches it: a symlink link
	// follows is resolved in the command's root, and a mount on the
	// name (a mask, a read-only bind) is crossed.
	var src int
	switch {
	case follow == 0 && oldAt.inRoot:
		src, err = unix.Openat2(oldAt.fd, oldReal+"/"+oldName, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
	case follow == 0:
		src, err = unix.Openat(oldParent, oldName, unix.O_PATH|unix.O_CLOEXEC, 0)
	default:
		src, err = unix.Openat(oldParent, oldName, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return failed(err)
	}
	defer unix.Close(src)
	if err := unix.Fstat(src, &ost); err != nil {
		return failed(err)
	}
	if !s.mayMove(c.kind, oldReal, preal, ost.Mode, exists) {
		return goAhead // where Landlock would not let it: the kernel says so
	}
	if o, bad := s.denied(full); bad {
		return o
	}
	// Nor may a denied file get another name: a masked one is the
	// mask's only where the mask is mounted.
	if o, bad := s.denied(path.Join(oldReal, oldName)); bad {
		return o
	}
	if c.kind == kindLink {
		return result(unix.Linkat(unix.AT_FDCWD, procSelfFD(src), parent, name, unix.AT_SYMLINK_FOLLOW))
	}
	// A mount point cannot be renamed, nor renamed over (EBUSY): the
	// kernel checks that only in the caller's mount namespace, and the
	// command's mounts are not corral's.
	if mountRoot(src) || (exists && mountedOn(parent, name)) {
		return outcome{errno: unix.EBUSY, fd: -1}
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		if o, bad := s.deniedInside(oldParent, oldName, full); bad {
			return o
		}
	}
	return result(unix.Renameat2(oldParent, oldName, parent, name, uint(c.flags)))
}

// mountRoot tells whether fd is the root of a mount: a mount point, for
// a name that is not its mount's root folder.
func mountRoot(fd int) bool {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &st); err != nil {
		return true // unknown: as busy
	}
	return st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// mountedOn tells whether a mount covers the entry name in parent.
func mountedOn(parent int, name string) bool {
	fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err != unix.ENOENT
	}
	defer unix.Close(fd)
	return mountRoot(fd)
}

// makeFile makes the file an open with O_CREAT names and opens it with
// the target's flags; O_EXCL makes sure it is the supervisor's new file.
func (s *Supervisor) makeFile(c *createCall, parent int, name, full string) outcome {
	// The new file gets the folder's rights: Landlock would also check
	// the open's own access to it.
	need := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_REG)
	switch c.flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		need |= unix.LANDLOCK_ACCESS_FS_READ_FILE
	case unix.O_WRONLY:
		need |= unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	default:
		need |= unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	}
	if c.flags&unix.O_TRUNC != 0 {
		need |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if s.rights(path.Dir(full))&need != need {
		return goAhead
	}
	if o, bad := s.denied(full); bad {
		return o
	}
	flags := int(c.flags&^unix.O_CLOEXEC) | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, c.mode)
	switch {
	case err == unix.EEXIST && c.flags&unix.O_EXCL == 0:
		return goAhead // made meanwhile (by the host): an open of what is there
	case err != nil:
		return failed(err)
	}
	return outcome{fd: fd}
}

// makeEntry makes a folder, node or symlink where Landlock would let the
// command make one of that type and no fs.deny glob matches.
func (s *Supervisor) makeEntry(parent int, full string, mode uint32, mk func() error) outcome {
	if s.rights(path.Dir(full))&makeRight(mode) == 0 {
		return goAhead
	}
	if o, bad := s.denied(full); bad {
		return o
	}
	return result(mk())
}

// mayMove tells whether Landlock would let the command link or rename a
// file of mode from the folder oldDir to newDir: the make right of its
// type there, the remove right here for a rename, and across folders the
// refer right on both and nothing more rights there than here.
func (s *Supervisor) mayMove(kind createKind, oldDir, newDir string, mode uint32, replaces bool) bool {
	to, from := s.rights(newDir), s.rights(oldDir)
	if to&makeRight(mode) == 0 {
		return false
	}
	if kind == kindRename {
		remove := uint64(unix.LANDLOCK_ACCESS_FS_REMOVE_FILE)
		if mode&unix.S_IFMT == unix.S_IFDIR {
			remove = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
		}
		if from&remove == 0 || (replaces && to&(unix.LANDLOCK_ACCESS_FS_REMOVE_FILE|unix.LANDLOCK_ACCESS_FS_REMOVE_DIR) == 0) {
			return false
		}
	}
	if oldDir == newDir {
		return true
	}
	const refer = unix.LANDLOCK_ACCESS_FS_REFER
	if s.createPolicy.Handled&refer == 0 {
		return false // Landlock ABI 1: never to another folder
	}
	return to&from&refer != 0 && to&^from&s.createPolicy.Handled&^makeRights == 0
}

// denied refuses a name an fs.deny glob matches.
func (s *Supervisor) denied(full string) (outcome, bool) {
	if glob, bad := s.createPolicy.Deny(full); bad {
		return outcome{errno: errnoDenied, why: "fs.deny " + glob + " matches " + strconv.Quote(full), fd: -1}, true
	}
	return outcome{}, false
}

// deniedInside refuses a folder's rename to full when something inside
// would get a path an fs.deny glob matches, or when the folder is too
// big to look through.
func (s *Supervisor) deniedInside(parent int, name, full string) (outcome, bool) {
	dir, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return failed(err), true
	}
	f := os.NewFile(uintptr(dir), full)
	defer f.Close()
	budget := maxRenameCheck
	var walk func(d *os.File, at string) (outcome, bool)
	walk = func(d *os.File, at string) (outcome, bool) {
		list, err := d.ReadDir(-1)
		if err != nil {
			return failed(err), true
		}
		for _, e := range list {
			if budget--; budget < 0 {
				return outcome{errno: errnoDenied, why: fmt.Sprintf("fs.deny: the folder holds more than %d entries to check", maxRenameCheck), fd: -1}, true
			}
			p := path.Join(at, e.Name())
			if o, bad := s.denied(p); bad {
				return o, true
			}
			if e.IsDir() {
				sub, err := unix.Openat(int(d.Fd()), e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return failed(err), true
				}
				sf := os.NewFile(uintptr(sub), p)
				o, bad := walk(sf, p)
				sf.Close()
				if bad {
					return o, true
				}
			}
		}
		return outcome{}, false
	}
	return walk(f, full)
}

// result is the outcome of a call the supervisor made: its errno, or 0.
func result(err error) outcome {
	if err != nil {
		return failed(err)
	}
	return outcome{fd: -1}
}

// readUmask reads the target's umask from /proc (the second line of
// status, so one short read); 077 when it cannot.
func readUmask(pid int) int {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0o077
	}
	defer unix.Close(fd)
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return 0o077
	}
	for line := range strings.SplitSeq(string(buf[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return int(m)
			}
		}
	}
	return 0o077
}

func quoteShort(p string) string {
	if len(p) > 200 {
		p = p[:200] + "..."
	}
	return strconv.Quote(p)
}

// createNumbers are the numbers of the calls that may make a name on
// this architecture (-1: it has no such call).
var createNumbers = map[string]int64{
	"open": sysOpen, "creat": sysCreat, "openat": unix.SYS_OPENAT, "openat2": unix.SYS_OPENAT2,
	"mkdir": sysMkdir, "mkdirat": unix.SYS_MKDIRAT, "mknod": sysMknod, "mknodat": unix.SYS_MKNODAT,
	"symlink": sysSymlink, "symlinkat": unix.SYS_SYMLINKAT, "link": sysLink, "linkat": unix.SYS_LINKAT,
	"rename": sysRename, "renameat": unix.SYS_RENAMEAT, "renameat2": unix.SYS_RENAMEAT2,
}

// CreateSyscall is the number of the named call that may make a name,
// false when it is not one or this architecture does not have it.
func CreateSyscall(name string) (int, bool) {
	nr, ok := createNumbers[name]
	return int(nr), ok && nr >= 0
}
