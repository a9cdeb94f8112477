package nofollow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Magic is the path of fd in /proc/self/fd: chmod, getxattr and open
// through it act on the file fd is, also for an O_PATH descriptor.
func Magic(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// RemoveTree removes name in the folder dirfd and everything in it,
// following no symlink: each folder is opened from its parent with
// O_NOFOLLOW, given its owner's rights through its own descriptor if the
// command took them (chmod 000), and emptied with unlinkat on it. A
// folder of another user's is not changed. A missing name is no error.
func RemoveTree(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR, unix.EPERM: // EPERM: unlink of a folder, on Linux
	default:
		return err
	}
	fd, err := openOwn(dirfd, name)
	if err != nil {
		return err
	}
	err = emptyFolder(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// openOwn opens the folder name in dirfd for reading, without following
// a symlink; one this user owns but may not read or search gets the
// owner's rights first, on a descriptor of it (O_PATH), so no path is
// resolved twice.
func openOwn(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err != unix.EACCES {
		return fd, err
	}
	p, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(p)
	var st unix.Stat_t
	if err := unix.Fstat(p, &st); err != nil {
		return -1, err
	}
	if int(st.Uid) != os.Geteuid() {
		return -1, unix.EACCES
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, Magic(p), uint32(st.Mode&0o7777)|0o700, 0); err != nil {
		return -1, err
	}
	return unix.Open(Magic(p), flags&^unix.O_NOFOLLOW, 0)
}

// emptyFolder removes everything in the folder fd.
func emptyFolder(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) == os.Geteuid() && st.Mode&0o300 != 0o300 {
		// Writable and searchable for its owner, to remove what is in it.
		if err := unix.Fchmod(fd, uint32(st.Mode&0o7777)|0o700); err != nil {
			return err
		}
	}
	for {
		dup, err := unix.Dup(fd)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(dup), "")
		unix.Seek(dup, 0, 0)
		names, rerr := f.Readdirnames(256)
		f.Close()
		if len(names) == 0 {
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return rerr
			}
			return nil
		}
		for _, n := range names {
			if err := RemoveTree(fd, n); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
	}
}

// dirFlag opens a folder only to name what is in it.
const dirFlag = unix.O_PATH
