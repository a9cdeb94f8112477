//go:build linux

package main

import (
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// modeCalls give a file a mode through one raw syscall each, so no libc
// wrapper can change what the kernel is asked: "mode CALL PATH MODE"
// (MODE in octal). The creating calls make PATH; the others change it.
var modeCalls = map[string]func(path string, mode uint32) error{
	"fchmodat": func(p string, m uint32) error {
		return raw3(unix.SYS_FCHMODAT, unix.AT_FDCWD, p, uintptr(m))
	},
	"fchmod": func(p string, m uint32) error {
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchmod(fd, m)
	},
	"fchmodat2": func(p string, m uint32) error {
		b, err := unix.BytePtrFromString(p)
		if err != nil {
			return err
		}
		_, _, e := unix.Syscall6(452, uintptr(unix.AT_FDCWD&0xffffffff), uintptr(unsafe.Pointer(b)), uintptr(m), 0, 0, 0)
		return rawErr(e)
	},
	"open": func(p string, m uint32) error {
		fd, err := unix.Openat(unix.AT_FDCWD, p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, m)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"tmpfile": func(p string, m uint32) error {
		// An unnamed file in the folder p, named p/tmpfile by linkat.
		fd, err := unix.Openat(unix.AT_FDCWD, p, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, m)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(fd, "", unix.AT_FDCWD, p+"/tmpfile", unix.AT_EMPTY_PATH)
	},
	"openat2": func(p string, m uint32) error {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY | unix.O_CLOEXEC, Mode: uint64(m)})
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"mknod": func(p string, m uint32) error {
		return unix.Mknodat(unix.AT_FDCWD, p, unix.S_IFREG|m, 0)
	},
	"mkdir": func(p string, m uint32) error {
		return unix.Mkdirat(unix.AT_FDCWD, p, m)
	},
}

// raw3 makes a syscall whose second argument is a path.
func raw3(nr uintptr, a0 int, p string, a2 uintptr) error {
	b, err := unix.BytePtrFromString(p)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall(nr, uintptr(a0&0xffffffff), uintptr(unsafe.Pointer(b)), a2)
	return rawErr(e)
}

// modeCommand is "mode CALL PATH MODE".
func modeCommand(a []string) {
	need(a, 3)
	call, ok := modeCalls[a[0]]
	if !ok {
		usage()
	}
	m, err := strconv.ParseUint(a[2], 8, 32)
	if err != nil {
		usage()
	}
	check(a[0]+" "+a[1]+" "+a[2], call(a[1], uint32(m)))
}

// xattrCommand is "xattr PATH NAME VALUE": set an extended attribute
// (a POSIX ACL, a file capability) without following a symlink.
func xattrCommand(a []string) {
	need(a, 3)
	check("setxattr "+a[0]+" "+a[1], unix.Lsetxattr(a[0], a[1], []byte(a[2]), 0))
}
