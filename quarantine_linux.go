package corral

import (
	"strconv"

	"golang.org/x/sys/unix"

	"corral.dev/corral/internal/nofollow"
)

// dirPathFlag opens a folder only to name what is in it.
const dirPathFlag = unix.O_PATH

// renameNoReplaceAt renames dirfd/from to dirfd/to, failing with EEXIST
// if to exists.
func renameNoReplaceAt(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// chmodFd changes the mode of the folder open as fd, an O_PATH descriptor
// too (fchmod refuses those: the magic link in /proc does not).
func chmodFd(fd int, mode uint32) error {
	return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0)
}

// removeAllAt removes dir/name (open as dirfd) and all that is in it,
// through dirfd (dir may be longer than PATH_MAX), following no symlink
// and opening folders the command made unreadable.
func removeAllAt(dirfd int, dir, name string) error {
	return nofollow.RemoveTree(dirfd, name)
}
