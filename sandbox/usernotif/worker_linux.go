package usernotif

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// worker is the OS thread the supervisor serves on when it makes names
// for the sandbox: locked, holding no capability and with a umask of its
// own (unshared CLONE_FS). The kernel then checks each folder's
// permissions, sticky bits and protected hard links as it would for the
// command, which has the same uid and no capability either (corral as
// root would otherwise make names where the command's root, without
// CAP_DAC_OVERRIDE, cannot). Serving there needs no capability either:
// reading the command's memory and /proc entries takes only the same uid
// and a command whose capabilities are a subset of none, which the
// sandbox's init makes sure of. The thread is never given back to Go's
// scheduler: it ends with serve's goroutine. (A thread of its own that
// serve hands each job to cost twice as much per name: two wake-ups.)
type worker struct{}

// newWorker turns the calling goroutine's thread into the worker; the
// goroutine must be the one that serves, and stays locked.
func newWorker() (*worker, error) {
	runtime.LockOSThread()
	// No UnlockOSThread: the thread ends with this goroutine.
	w := &worker{}
	if err := w.setup(); err != nil {
		return nil, err
	}
	return w, nil
}

// setup unshares the umask and drops every capability of this thread.
func (w *worker) setup() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return &osError{"unshare(CLONE_FS)", err}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return &osError{"capset", e}
	}
	return nil
}

// do runs job with the target's umask, on the worker's thread (serve's).
func (w *worker) do(umask int, job func()) {
	unix.Umask(umask)
	job()
}

type osError struct {
	call string
	err  error
}

func (e *osError) Error() string { return e.call + ": " + e.err.Error() }
func (e *osError) Unwrap() error { return e.err }
