package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"corral.dev/corral/internal/nofollow"
	"corral.dev/corral/printable"
)

// RemoveMustNotAppear removes what the command left at the plan's
// MustNotAppear paths (files that would send git on the host elsewhere
// for config and hooks), through a descriptor of their folder opened
// without following a symlink, and returns what it removed.
func RemoveMustNotAppear(paths []string, warn func(string)) (removed []string) {
	for _, f := range paths {
		dir, name := filepath.Split(f)
		fd, err := nofollow.OpenDir(filepath.Clean(dir))
		if err != nil {
			continue // gone, or no longer the folder it was: the sweep looks there
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			unix.Close(fd)
			continue
		}
		err = unix.Unlinkat(fd, name, 0)
		if err == unix.EISDIR || err == unix.EPERM && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = nofollow.RemoveTree(fd, name)
		}
		unix.Close(fd)
		if err != nil {
			warn(fmt.Sprintf("the command created %s, which sends git on the host to a config and hooks it chose; removing it failed: %v", printable.String(f), err))
			continue
		}
		removed = append(removed, f)
		warn(fmt.Sprintf("the command created %s, which would send git on the host to a config and hooks it chose; removed it", printable.String(f)))
	}
	return removed
}

// RemoveRunTmp removes the landlock tier's TMPDIR of a run, dir (a
// folder corral made and recorded: package corral's run records), and
// all in it, following no symlink (nofollow.RemoveTree). Only a folder
// of this user's is removed.
func RemoveRunTmp(dir string, warn func(string)) {
	parent, err := nofollow.OpenDir(filepath.Dir(dir))
	if err != nil {
		warn(fmt.Sprintf("removing the run's TMPDIR %s: %v", dir, err))
		return
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	name := filepath.Base(dir)
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return // never made, or removed already
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		warn(fmt.Sprintf("%s is not the folder corral made as a run's TMPDIR: left as it is", dir))
		return
	}
	if err := nofollow.RemoveTree(parent, name); err != nil {
		warn(fmt.Sprintf("removing the run's TMPDIR %s: %v", dir, err))
	}
}
