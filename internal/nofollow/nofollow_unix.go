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
