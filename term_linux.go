package corral

import (
	"runtime"

	"golang.org/x/sys/unix"
)

const getTermios, setTermios = unix.TCGETS, unix.TCSETS

// withoutTTOU runs f with SIGTTOU blocked on its thread: corral in a
// background job would otherwise be stopped by the kernel for setting
// its terminal (a blocked SIGTTOU lets the change through).
func withoutTTOU(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	sig := uint(unix.SIGTTOU) - 1
	set.Val[sig/64] |= 1 << (sig % 64)
	if unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old) != nil {
		f()
		return
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	f()
}
