package main

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writeBlocking writes all of p to f, a descriptor the command may share
// with corral (stderr, or stdout for --report -). The command can set
// O_NONBLOCK on the open file they share and fill the pipe behind it, so
// that a plain write fails with EAGAIN and corral's line or report is
// lost while the command's forgery stays: corral clears the flag again
// whenever it finds it and waits for room, as a blocking write would.
func writeBlocking(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Write(p)
	}
	done := 0
	var werr error
	cerr := rc.Control(func(fd uintptr) {
		for done < len(p) {
			n, err := unix.Write(int(fd), p[done:])
			if n > 0 {
				done += n
			}
			switch {
			case err == nil && n == 0:
				werr = io.ErrShortWrite
				return
			case err == nil, errors.Is(err, unix.EINTR):
			case errors.Is(err, unix.EAGAIN):
				if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK != 0 {
					unix.FcntlInt(fd, unix.F_SETFL, fl&^unix.O_NONBLOCK)
				}
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
				if _, err := unix.Poll(pfd, -1); err != nil && !errors.Is(err, unix.EINTR) {
					werr = err
					return
				}
			default:
				werr = err
				return
			}
		}
	})
	if cerr != nil {
		return done, cerr
	}
	return done, werr
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return err == nil
}
