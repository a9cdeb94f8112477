//go:build linux && !(arm64 || riscv64 || loong64)

package usernotif

import "golang.org/x/sys/unix"

// sysChmod is chmod(2)'s number; the architectures of the other file
// were born without it (fchmodat only).
const sysChmod = unix.SYS_CHMOD
