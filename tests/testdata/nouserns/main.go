//go:build linux

// Command nouserns runs a program the way Docker's default seccomp profile
// would (moby profiles/seccomp/default.json without CAP_SYS_ADMIN): unshare
// and clone with CLONE_NEWUSER get EPERM, clone3 gets ENOSYS (its flags are
// in memory a filter cannot read), everything else is allowed. The tests
// start corral through it to see the landlock tier chosen where a
// container refuses user namespaces.
//
//	nouserns PROGRAM [ARG]...
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nouserns PROGRAM [ARG]...")
		os.Exit(2)
	}
	runtime.LockOSThread()
	if err := install(); err != nil {
		fmt.Fprintln(os.Stderr, "nouserns:", err)
		os.Exit(125)
	}
	path := os.Args[1]
	if p, err := lookPath(path); err == nil {
		path = p
	}
	err := syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "nouserns: exec:", err)
	os.Exit(127)
}

func lookPath(name string) (string, error) {
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		if p := dir + "/" + name; name[0] != '/' {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return name, nil
}

const (
	retAllow = 0x7fff0000
	retErrno = 0x00050000
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

// install loads the filter on every thread (TSYNC) with no_new_privs.
func install() error {
	const (
		offNr   = 0
		offArch = 4
		offArg0 = 16 // low half on little-endian
	)
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	prog := []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch),
		jeq(arch, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, retAllow),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
		jeq(unix.SYS_CLONE3, 0, 1),
		stmt(unix.BPF_RET|unix.BPF_K, retErrno|uint32(unix.ENOSYS)),
		jeq(unix.SYS_UNSHARE, 1, 0),
		jeq(unix.SYS_CLONE, 0, 3),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0),
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: unix.CLONE_NEWUSER, Jt: 0, Jf: 1},
		stmt(unix.BPF_RET|unix.BPF_K, retErrno|uint32(unix.EPERM)),
		stmt(unix.BPF_RET|unix.BPF_K, retAllow),
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
