package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Securebits that make uid 0 inside the user namespace an ordinary user:
// no capabilities from being root, from setuid or from ambient raising,
// all locked so the command cannot undo them.
const securebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropPrivileges empties every capability set of the calling thread, locks
// the securebits and sets no_new_privs. The command, forked from this
// thread, starts with nothing and cannot regain anything by exec.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, securebits, 0, 0, 0); err != nil {
		return &os.SyscallError{Syscall: "prctl(PR_SET_SECUREBITS)", Err: err}
	}
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if err != nil {
			return &os.SyscallError{Syscall: "prctl(PR_CAPBSET_DROP)", Err: err}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return &os.SyscallError{Syscall: "prctl(PR_CAP_AMBIENT_CLEAR_ALL)", Err: err}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &os.SyscallError{Syscall: "prctl(PR_SET_NO_NEW_PRIVS)", Err: err}
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable sets.
// It runs after Landlock, which needs no capability once no_new_privs is
// set.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return &os.SyscallError{Syscall: "capset", Err: err}
	}
	return nil
}
