//go:build linux && !(arm64 || riscv64 || loong64)

package usernotif

import "golang.org/x/sys/unix"

// The syscalls that make a name by a path alone, which the architectures
// of the other file were born without (only the *at forms).
const (
	sysOpen    = unix.SYS_OPEN
	sysCreat   = unix.SYS_CREAT
	sysMkdir   = unix.SYS_MKDIR
	sysMknod   = unix.SYS_MKNOD
	sysSymlink = unix.SYS_SYMLINK
	sysLink    = unix.SYS_LINK
	sysRename  = unix.SYS_RENAME
)
