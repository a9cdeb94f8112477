//go:build !linux

package corral

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirPathFlag opens a folder to name what is in it.
const dirPathFlag = unix.O_RDONLY

// renameNoReplaceAt renames dirfd/from to dirfd/to unless to exists
// (checked first: there is no renameat2 here).
func renameNoReplaceAt(dirfd int, from, to string) error {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return unix.EEXIST
	}
	return unix.Renameat(dirfd, from, dirfd, to)
}

// chmodFd changes the mode of the folder open as fd.
func chmodFd(fd int, mode uint32) error {
	return unix.Fchmod(fd, mode)
}

// removeAllAt removes dir/name (open as dirfd) and all that is in it.
func removeAllAt(dirfd int, dir, name string) error {
	return os.RemoveAll(dir + "/" + name)
}
