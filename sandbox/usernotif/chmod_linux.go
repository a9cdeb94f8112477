package usernotif

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	// specialBits are setuid, setgid and sticky. A setuid or setgid
	// file made in the sandbox would run with those ids outside it, and
	// the bits have no use a build needs: a mode with any is refused.
	specialBits = unix.S_ISUID | unix.S_ISGID | unix.S_ISVTX
	// fchmodat2Flags are the flags fchmodat2 knows; the kernel refuses
	// others with EINVAL, and so does the supervisor.
	fchmodat2Flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH
	// errnoChmod refuses a mode change outside the policy: EPERM is
	// what chmod says to a caller who does not own the file, so tools
	// report it sensibly.
	errnoChmod = unix.EPERM
)

// chmodCall is one decoded mode change.
type chmodCall struct {
	name  string // the syscall, for the log
	byFD  bool   // fchmod: the file is fd itself
	fd    int32  // fchmod's fd, or the dirfd (AT_FDCWD for chmod)
	ptr   uint64 // the path's address in the target
	path  string // the path, once read
	read  bool   // whether path was read
	mode  uint32
	flags uint32 // fchmodat2's
}

// refusal is why a notification is answered with an errno.
type refusal struct {
	errno unix.Errno
	why   string
}

// stale says the notification went stale: the target is gone and its
// pid may be another process's, so nothing read or opened is trusted.
var stale = &refusal{errno: unix.ENOENT, why: "stale"}

// isChmod tells the syscalls that change a mode.
func isChmod(nr int32) bool {
	switch nr {
	case sysChmod, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2:
		return true
	}
	return false
}

// decodeChmod reads the arguments as the kernel does: dirfd is an int,
// fchmod's fd and the flags unsigned ints, the mode a umode_t (16 bits)
// of which only the permission bits count (S_IALLUGO).
func decodeChmod(d *seccompData) chmodCall {
	a := d.Args
	mode := func(x uint64) uint32 { return uint32(uint16(x)) & 07777 }
	switch d.Nr {
	case sysChmod:
		return chmodCall{name: "chmod", fd: unix.AT_FDCWD, ptr: a[0], mode: mode(a[1])}
	case unix.SYS_FCHMODAT:
		// fchmodat has no flags: a fourth argument is not read.
		return chmodCall{name: "fchmodat", fd: int32(a[0]), ptr: a[1], mode: mode(a[2])}
	case unix.SYS_FCHMODAT2:
		return chmodCall{name: "fchmodat2", fd: int32(a[0]), ptr: a[1], mode: mode(a[2]), flags: uint32(a[3])}
	}
	return chmodCall{name: "fchmod", byFD: true, fd: int32(uint32(a[0])), mode: mode(a[1])}
}

// String is the call for the log; the path is quoted (it is the
// sandbox's bytes) and cut short.
func (c *chmodCall) String() string {
	switch {
	case c.byFD:
		return fmt.Sprintf("fchmod of fd %d to %#o", c.fd, c.mode)
	case !c.read:
		return fmt.Sprintf("%s to %#o", c.name, c.mode)
	}
	p := c.path
	if len(p) > 200 {
		p = p[:200] + "..."
	}
	return fmt.Sprintf("%s of %s to %#o", c.name, strconv.Quote(p), c.mode)
}

// chmod answers a mode change. The supervisor never lets the target's
// own syscall go ahead (CONTINUE would resolve the path again, after the
// check): it opens the file itself, checks what it opened and changes
// that file's mode through its own fd, so renaming or relinking a path
// component meanwhile changes nothing.
func (s *Supervisor) chmod(n *notif) {
	c := decodeChmod(&n.Data)
	fd, r := s.openTarget(n, &c)
	if r == nil {
		defer unix.Close(fd)
		r = s.check(fd)
	}
	switch {
	case r == stale:
	case r != nil:
		s.refuse(n, r.errno, c.String(), r.why)
	default:
		s.apply(n, fd, &c)
	}
}

// openTarget checks the flags and mode, reads the path and opens the
// file the call names (O_PATH), checking after each read of the target
// that the notification is still pending.
func (s *Supervisor) openTarget(n *notif, c *chmodCall) (int, *refusal) {
	if c.flags&^fchmodat2Flags != 0 {
		return -1, &refusal{unix.EINVAL, fmt.Sprintf("unknown flags %#x", c.flags)}
	}
	if n.Pid == 0 {
		return -1, &refusal{errnoChmod, "the target's pid is not visible to corral"}
	}
	if !c.byFD {
		path, r := s.readPath(int(n.Pid), c.ptr)
		if !idValid(s.fd, n.ID) {
			return -1, stale
		}
		if r != nil {
			return -1, r
		}
		c.path, c.read = path, true
	}
	if c.mode&specialBits != 0 {
		return -1, &refusal{errnoChmod, "setuid, setgid and sticky bits are not allowed"}
	}
	fd, err := openFile(int(n.Pid), c)
	if !idValid(s.fd, n.ID) {
		closeFD(fd)
		return -1, stale
	}
	if err != nil {
		return -1, &refusal{errnoOf(err), "cannot open: " + err.Error()}
	}
	return fd, nil
}

// check decides on the file corral opened: it must be at or below a
// writable path, exist, be owned by corral's uid (the command's: a file
// someone else owns the command could not chmod, but corral as root
// could) and not be a symlink (Linux cannot change a symlink's mode).
func (s *Supervisor) check(fd int) *refusal {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &refusal{errnoChmod, "fstat: " + err.Error()}
	}
	where, err := os.Readlink(procSelfFD(fd))
	switch {
	case err != nil:
		return &refusal{errnoChmod, "cannot name the file: " + err.Error()}
	case strings.HasSuffix(where, " (deleted)"):
		return &refusal{errnoChmod, "the file is deleted"}
	case !within(where, s.writable):
		return &refusal{errnoChmod, strconv.Quote(where) + " is not in a writable path"}
	case st.Uid != s.euid:
		return &refusal{errnoChmod, fmt.Sprintf("%q is owned by uid %d", where, st.Uid)}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &refusal{unix.EOPNOTSUPP, "a symlink's mode cannot change"}
	}
	return nil
}

// apply changes the mode of the file open as fd, through its magic
// link (an O_PATH fd is no good to fchmod; this works for files and
// folders alike), and answers with what chmod said.
func (s *Supervisor) apply(n *notif, fd int, c *chmodCall) {
	err := unix.Fchmodat(unix.AT_FDCWD, procSelfFD(fd), c.mode&0777, 0)
	if err != nil {
		s.refuse(n, errnoOf(err), c.String(), "chmod failed: "+err.Error())
		return
	}
	if respond(s.fd, n.ID, 0) == nil {
		s.nAllowed.Add(1)
	}
}

// within tells whether the absolute path p is at or below one of roots,
// component by component: /ws2 is not below /ws. readlink names
// anonymous files ("pipe:[7]") without a leading slash: never within.
func within(p string, roots []string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, r := range roots {
		// Only "/" of the clean roots ends in a slash.
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// errnoOf is err's errno; an error without one is refused with EPERM.
func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return errnoChmod
}

func procSelfFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// closeFD closes fd if it is one.
func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
