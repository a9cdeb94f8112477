package usernotif

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// worker runs the names the supervisor makes for the sandbox on one OS
// thread of its own, which holds no capability and has a umask of its own
// (unshared CLONE_FS): the kernel then checks each folder's permissions,
// sticky bits and protected hard links as it would for the command, which
// has the same uid and no capability either. (corral as root would
// otherwise make names where the command's root, without
// CAP_DAC_OVERRIDE, cannot.) The thread is never given back to Go's
// scheduler: it ends with the worker.
type worker struct {
	jobs chan func()
}

func newWorker() (*worker, error) {
	w := &worker{jobs: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		if err := w.setup(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for job := range w.jobs {
			job()
		}
	}()
	if err := <-ready; err != nil {
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

// do runs job on the worker's thread with the target's umask and waits.
func (w *worker) do(umask int, job func()) {
	done := make(chan struct{})
	w.jobs <- func() {
		unix.Umask(umask)
		job()
		close(done)
	}
	<-done
}

func (w *worker) stop() { close(w.jobs) }

type osError struct {
	call string
	err  error
}

func (e *osError) Error() string { return e.call + ": " + e.err.Error() }
func (e *osError) Unwrap() error { return e.err }
