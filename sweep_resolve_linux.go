//go:build linux

package corral

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Pointers (a commondir, a .git file's gitdir:, an included config,
// core.hooksPath) are followed the way git and the kernel follow them:
// component by component, each symlink read and followed before the ".."
// after it, a NUL ending the string as in C. Never by cleaning the path
// as a string: "sl/../c" is c next to where sl leads, not next to sl.
// What cannot be followed to the end (a folder corral cannot search, a
// loop, a symlink to an absolute path made during the run inside a
// writable root) is reported, and the caller takes the pointer as changed
// and unverifiable.

// errAbsLink is a symlink to an absolute path, made during the run inside
// a writable root, on the way to a pointer's target.
var errAbsLink = errors.New("a symlink to an absolute path the command made is on the way")

// errProcLink is a symlink in /proc on the way: /proc/self is the
// process that reads it.
var errProcLink = errors.New("a symlink in /proc is on the way")

// resolveErr says where following a pointer stopped: the entry name in
// the folder fd (whose path is dir).
type resolveErr struct {
	fd        int
	dir, name string
	err       error
}

func (e *resolveErr) Error() string { return e.dir + "/" + e.name + ": " + e.err.Error() }
func (e *resolveErr) Unwrap() error { return e.err }

// fdPath is the path of the open folder fd as the kernel knows it ("" if
// it is longer than PATH_MAX or gone).
func fdPath(fd int) string {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil || n >= len(buf) || n == 0 || buf[0] != '/' {
		return ""
	}
	return string(buf[:n])
}

// cString is data up to its first NUL byte, and whether it had one.
func cString(data []byte) (string, bool) {
	if i := strings.IndexByte(string(data), 0); i >= 0 {
		return string(data[:i]), true
	}
	return string(data), false
}

// resolve follows p from the folder dirfd (path dir) to the folder that
// holds its last component, and returns that folder (an O_PATH descriptor
// the caller closes, its path as the kernel sees it) and the last
// component's name, itself never a symlink (followed too), but "." when p
// ends in "." or "..". A folder on the way that corral's user owns but
// cannot search gets the owner's search right until undo runs. On error
// the returned descriptor is -1 and err a *resolveErr when it is known
// where the walk stopped (its fd is the caller's to close).
func (s *sweep) resolve(dirfd int, p string, restore *[]func()) (fd int, real, name string, err error) {
	fail := func(cur int, nm string, e error) (int, string, string, error) {
		re := &resolveErr{fd: cur, dir: fdPath(cur), name: nm, err: e}
		if re.dir == "" {
			re.dir = "(a folder deeper than PATH_MAX)"
		}
		return -1, "", "", re
	}
	var cur int
	if strings.HasPrefix(p, "/") {
		cur, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	} else {
		cur, err = unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	if err != nil {
		return -1, "", "", err
	}
	comps := strings.Split(p, "/")
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		last := true
		for _, r := range comps {
			if r != "" {
				last = false
				break
			}
		}
		if c == "" || c == "." {
			if last {
				name = "."
			}
			continue
		}
		if c == ".." {
			nfd, err := s.openSearch(cur, "..", restore)
			if err != nil {
				return fail(cur, "..", err)
			}
			unix.Close(cur)
			cur = nfd
			if last {
				name = "."
			}
			continue
		}
		var st unix.Stat_t
		err := s.statSearch(cur, c, &st, restore)
		if err != nil {
			if last && err == unix.ENOENT {
				name = c // a missing last component: the caller's to see
				break
			}
			return fail(cur, c, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if links++; links > 40 {
				return fail(cur, c, unix.ELOOP)
			}
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(cur, c, buf)
			if err != nil || n >= len(buf) {
				if err == nil {
					err = unix.ENAMETOOLONG
				}
				return fail(cur, c, err)
			}
			target := string(buf[:n])
			here := fdPath(cur)
			if here == "/proc" || strings.HasPrefix(here, "/proc/") {
				// /proc/self and the magic links below it lead
				// elsewhere for git than for corral.
				return fail(cur, c, errProcLink)
			}
			if strings.HasPrefix(target, "/") {
				// A system layout (/home -> /data/home) is followed; a
				// symlink the command could have made is not.
				if here == "" || s.under(here) && s.fresh(&st) {
					return fail(cur, c, errAbsLink)
				}
				nfd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fail(cur, c, err)
				}
				unix.Close(cur)
				cur = nfd
			}
			comps = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), comps...)
			continue
		}
		if last {
			name = c
			break
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fail(cur, c, unix.ENOTDIR)
		}
		nfd, err := s.openSearch(cur, c, restore)
		if err != nil {
			return fail(cur, c, err)
		}
		unix.Close(cur)
		cur = nfd
	}
	if name == "" {
		name = "."
	}
	real = fdPath(cur)
	if real == "" {
		unix.Close(cur)
		return -1, "", "", fmt.Errorf("%s: deeper than PATH_MAX", p)
	}
	return cur, real, name, nil
}

// statSearch is fstatat of dirfd/name without following a symlink; if
// corral's user owns dirfd and may not search it, the owner's search
// right is added (put back by the restore functions).
func (s *sweep) statSearch(dirfd int, name string, st *unix.Stat_t, restore *[]func()) error {
	err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.EACCES && s.grantSearch(dirfd, restore) {
		err = unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
	}
	return err
}

// openSearch opens the folder dirfd/name as O_PATH, not following a
// symlink, with statSearch's treatment of a folder corral cannot search.
func (s *sweep) openSearch(dirfd int, name string, restore *[]func()) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == unix.EACCES && s.grantSearch(dirfd, restore) {
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	return fd, err
}

// grantSearch adds the owner's search right to the folder fd if corral's
// user owns it and it lacks it, recording how to put the mode back.
func (s *sweep) grantSearch(fd int, restore *[]func()) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != s.uid || st.Mode&0o100 != 0 {
		return false
	}
	mode := st.Mode & 0o7777
	if chmodFd(fd, mode|0o100) != nil {
		return false
	}
	s.touched(&st)
	dup, err := unix.Dup(fd)
	if err != nil {
		chmodFd(fd, mode)
		return false
	}
	id := [2]uint64{st.Dev, st.Ino}
	*restore = append(*restore, func() {
		chmodFd(dup, s.keep(id, mode))
		unix.Close(dup)
	})
	return true
}

// keep is mode, which the walk puts back on the file id, without the bits
// closeToOthers took off meanwhile.
func (s *sweep) keep(id [2]uint64, mode uint32) uint32 {
	return mode &^ s.closed[id]
}

// touched records that corral changes the mode of st's file: its ctime
// moves, and fresh must answer as before.
func (s *sweep) touched(st *unix.Stat_t) {
	id := [2]uint64{st.Dev, st.Ino}
	if _, ok := s.chmodded[id]; !ok {
		s.chmodded[id] = s.freshTime(st)
	}
}

// undo runs restore functions, the last recorded first.
func undoAll(restore []func()) {
	for i := len(restore) - 1; i >= 0; i-- {
		restore[i]()
	}
}

// unverifiable reports a pointer (what) the sweep could not follow: if
// the entry where it stopped is inside a writable root and changed during
// the run, that entry is quarantined; a warning either way.
func (s *sweep) unverifiable(err error, what string) {
	var re *resolveErr
	if errors.As(err, &re) {
		defer unix.Close(re.fd)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return // nothing there, for git either
	}
	if re != nil {
		if st, ok := s.stat(re.fd, re.name); ok && re.name != ".." && s.under(re.dir) && s.fresh(&st) {
			s.quarantine(re.fd, re.dir, re.name, what+", and the command changed "+re.name+" on the way, which corral cannot follow ("+re.err.Error()+")")
			return
		}
	}
	s.Errs = append(s.Errs, fmt.Sprintf("%s, which corral cannot follow (%v)", what, err))
}

// searchable makes the folder fd searchable for the inspection that
// follows if corral's user owns it and lacks the right (undo puts the mode
// back); false if corral may not search it.
func (s *sweep) searchable(fd int, st *unix.Stat_t) (undo func(), ok bool) {
	var restore []func()
	undo = func() { undoAll(restore) }
	if s.uid == 0 || unix.Faccessat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.X_OK, unix.AT_EACCESS) == nil {
		return undo, true
	}
	return undo, s.grantSearch(fd, &restore)
}
