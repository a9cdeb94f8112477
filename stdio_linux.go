package corral

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// netSocket tells a socket that is not a UNIX one: its connection is in
// the host's network namespace, where the command must not hold it.
func netSocket(f *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	domain, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_DOMAIN)
	return err != nil || domain != unix.AF_UNIX
}

// outputKind tells what kind of output stream f is.
func outputKind(f *os.File) int {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return outputOther
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return outputPipe
	case unix.S_IFSOCK:
		if netSocket(f) {
			return outputNet
		}
		return outputPipe
	case unix.S_IFREG:
		return outputFile
	}
	return outputOther
}

// sameFile reports whether f and w are the same file (one pipe given as
// both stdout and stderr).
func sameFile(f *os.File, w io.Writer) bool {
	g, ok := w.(*os.File)
	if !ok {
		return false
	}
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Fstat(int(g.Fd()), &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// fileOutput is where writes to the regular file f land: its size when
// it appends, else its offset (shared with the command, which moves it).
func fileOutput(f *os.File) (int64, bool) {
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return 0, false
	}
	if fl&unix.O_APPEND != 0 {
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil {
			return 0, false
		}
		return st.Size, true
	}
	off, err := unix.Seek(int(f.Fd()), 0, io.SeekCurrent)
	return off, err == nil
}
