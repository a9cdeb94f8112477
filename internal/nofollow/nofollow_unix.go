//go:build unix

// Package nofollow acts on paths the way corral's cleanup must after (or
// between) runs, when a sandbox may have changed them or may still be
// changing them (another run on the same folders): by descriptors, one
// component at a time, never through a symlink, with each change made on
// a descriptor of the file it checked.
package nofollow

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink means a component of a path was a symlink (or no folder).
var ErrSymlink = errors.New("a component is a symlink or not a folder")

// OpenDir opens the folder dir (absolute; O_PATH on Linux), one component at a time
// from /, failing with ErrSymlink where a component is a symlink: the
// caller's paths are real paths, so a symlink on the way is one planted
// since.
func OpenDir(dir string) (int, error) {
	if !strings.HasPrefix(dir, "/") {
		return -1, fmt.Errorf("%s: not an absolute path", dir)
	}
	fd, err := unix.Open("/", dirFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", dir, ErrSymlink)
		}
		next, err := unix.Openat(fd, c, dirFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return -1, fmt.Errorf("%s: %w", dir, ErrSymlink)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// MkdirBelow makes the folder rel (relative, clean) and its missing
// parents below the folder root (0700), walking from root one descriptor
// at a time without following a symlink: a link a sandbox planted there
// (this run's last one, or another's that runs now) must not send the
// mkdir elsewhere. root itself is the caller's (the work dir, as given).
// It returns the folders it made.
func MkdirBelow(root, rel string) ([]string, error) {
	fd, err := unix.Open(root, dirFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { unix.Close(fd) }()
	var made []string
	p := root
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return made, fmt.Errorf("%s: not a path below %s", rel, root)
		}
		p += "/" + part
		switch err := unix.Mkdirat(fd, part, 0o700); err {
		case nil:
			made = append(made, p)
		case unix.EEXIST:
		default:
			return made, &os.PathError{Op: "mkdir", Path: p, Err: err}
		}
		next, err := unix.Openat(fd, part, dirFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return made, fmt.Errorf("%s is a symlink or not a folder", p)
		}
		if err != nil {
			return made, &os.PathError{Op: "open", Path: p, Err: err}
		}
		unix.Close(fd)
		fd = next
	}
	return made, nil
}
