//go:build linux && (arm64 || riscv64 || loong64)

package usernotif

// sysChmod is -1 here: these architectures have no chmod(2), only
// fchmodat, and -1 is no syscall's number.
const sysChmod = -1
