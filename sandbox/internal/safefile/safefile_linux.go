// Package safefile reads and writes the files corral keeps between runs
// (the program index, the mount cache) without following symlinks and
// trusting only what no other user can write.
package safefile

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ReadNoFollow reads at most limit bytes of file, which must not be a
// symlink.
func ReadNoFollow(file string, limit int64) ([]byte, error) {
	fh, err := os.OpenFile(file, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, limit))
}

// Trusted reports whether p is a file (or, with dir, a folder) of root's
// or this user's that no one else can write; a symlink is not.
func Trusted(p string, dir bool) bool {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return false
	}
	return trustedStat(&st, dir)
}

// TrustedFd is Trusted for an open file.
func TrustedFd(fd int, dir bool) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return trustedStat(&st, dir)
}

// trustedStat: a file (or folder) of root's or this user's that no one
// else can write.
func trustedStat(st *unix.Stat_t, dir bool) bool {
	kind := uint32(unix.S_IFREG)
	if dir {
		kind = unix.S_IFDIR
	}
	uid := uint32(os.Getuid())
	return st.Mode&unix.S_IFMT == kind && (st.Uid == 0 || st.Uid == uid) && st.Mode&0o022 == 0
}

// Replace writes data to a new file beside file (named by pattern,
// with mode perm) and renames it over file, so a reader sees the old file
// or the new one, never half of one.
func Replace(file, pattern string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
