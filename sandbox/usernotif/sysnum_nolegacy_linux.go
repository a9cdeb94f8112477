//go:build linux && (arm64 || riscv64 || loong64)

package usernotif

// These architectures have only the *at forms: -1 is no syscall's number.
const (
	sysOpen    = -1
	sysCreat   = -1
	sysMkdir   = -1
	sysMknod   = -1
	sysSymlink = -1
	sysLink    = -1
	sysRename  = -1
)
