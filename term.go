package corral

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminal is one of the run's streams that is a terminal, with its
// settings before the command started.
type terminal struct {
	f       *os.File
	termios unix.Termios
}

// saveTerminals records the termios of every stream that is a terminal
// (one ioctl each, about a microsecond). The command inherits the
// caller's terminal and may put it in raw mode or turn echo off;
// restoreTerminals puts it back when the run ends, however it ended (the
// command's exit, a signal, the timeout, corral's own SIGINT or
// SIGTERM). The window size, exclusive mode, output flow and line
// discipline the command cannot change at all (seccomp), so a resize by
// the user during the run is kept.
func saveTerminals(files ...*os.File) []terminal {
	var saved []terminal
	for _, f := range files {
		if f == nil {
			continue
		}
		t, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
		if err == nil {
			saved = append(saved, terminal{f: f, termios: *t})
		}
	}
	return saved
}

// restoreTerminals puts back the settings that changed.
func restoreTerminals(saved []terminal) {
	for _, s := range saved {
		fd := int(s.f.Fd())
		now, err := unix.IoctlGetTermios(fd, getTermios)
		if err != nil || *now == s.termios {
			continue
		}
		withoutTTOU(func() { unix.IoctlSetTermios(fd, setTermios, &s.termios) })
	}
}
