package usernotif

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// readPath reads the NUL-terminated path at ptr in process pid, as the
// kernel's getname does: at most PATH_MAX bytes with the NUL. It reads
// page by page so that a path ending just before an unmapped page reads
// whole.
func (s *Supervisor) readPath(pid int, ptr uint64) (string, *refusal) {
	var path []byte
	page := uint64(os.Getpagesize())
	for len(path) < unix.PathMax {
		n := min(page-ptr%page, uint64(unix.PathMax-len(path)))
		b, err := s.read(pid, ptr, int(n))
		if errors.Is(err, unix.EFAULT) {
			return "", &refusal{unix.EFAULT, "the path is not in the target's memory"}
		}
		if err != nil {
			// Fail closed, e.g. without ptrace access to the target.
			return "", &refusal{errnoChmod, "cannot read the path: " + err.Error()}
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(append(path, b[:i]...)), nil
		}
		path = append(path, b...)
		ptr += n
	}
	return "", &refusal{unix.ENAMETOOLONG, "the path is longer than PATH_MAX"}
}

// openFile opens (O_PATH) the file c names, resolving the path as the
// target would: from its cwd or its dirfd, both reached through /proc,
// and from the shared root for an absolute path (the tier has no mount
// namespace).
func openFile(tid int, c *chmodCall) (int, error) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if c.flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		flags |= unix.O_NOFOLLOW
	}
	switch {
	case c.byFD:
		return openTargetFD(tid, c.fd)
	case c.path == "" && c.flags&unix.AT_EMPTY_PATH != 0:
		return openBase(tid, c.fd)
	case c.path == "":
		return -1, unix.ENOENT
	case c.path[0] == '/':
		return unix.Openat(unix.AT_FDCWD, inTarget(c.path, tid), flags, 0)
	}
	base, err := openBase(tid, c.fd)
	if err != nil {
		return -1, err
	}
	defer unix.Close(base)
	return unix.Openat(base, c.path, flags, 0)
}

// openBase opens what a relative path starts from: the target's cwd for
// AT_FDCWD, else its fd dirfd. The magic link is followed to the file
// itself, as the kernel does with the fd.
func openBase(tid int, dirfd int32) (int, error) {
	if dirfd == unix.AT_FDCWD {
		return unix.Open(fmt.Sprintf("/proc/%d/cwd", tid), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	}
	if dirfd < 0 {
		return -1, unix.EBADF
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/fd/%d", tid, dirfd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return -1, unix.EBADF // no such fd in the target
	}
	return fd, err
}

// openTargetFD opens the file of fchmod's fd. fchmod refuses an O_PATH
// fd (EBADF), so the supervisor does too.
func openTargetFD(tid int, fd int32) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	flags, err := fdFlags(tid, int(fd))
	if err != nil || flags&unix.O_PATH != 0 {
		return -1, unix.EBADF
	}
	return openBase(tid, fd)
}

// inTarget makes /proc/self and /proc/thread-self name the target, as
// they do when the target resolves them: corral would resolve them as
// itself. (glibc and musl chmod an O_PATH fd through /proc/self/fd/N.)
// A path that reaches corral's /proc/self some other way ("/proc//self")
// is still checked like any other, so it can reach no more than a file
// in the writable paths that corral has open.
func inTarget(path string, tid int) string {
	for _, self := range []string{"/proc/self", "/proc/thread-self"} {
		if rest, ok := strings.CutPrefix(path, self); ok && (rest == "" || rest[0] == '/') {
			return fmt.Sprintf("/proc/%d%s", tid, rest)
		}
	}
	return path
}
