//go:build unix

package agentpolicy

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of the file it replaces, so that
// root remembering a command into a user's policy leaves the file the
// user's. Failing that, the replacement is refused rather than change the
// file's owner.
func keepOwner(f *os.File, old fs.FileInfo) error {
	want, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if got, ok := st.Sys().(*syscall.Stat_t); ok && got.Uid == want.Uid && got.Gid == want.Gid {
		return nil
	}
	if err := f.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("keeping the file's owner %d:%d: %w", want.Uid, want.Gid, err)
	}
	return nil
}
