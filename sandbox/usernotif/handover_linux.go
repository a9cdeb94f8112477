package usernotif

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// handOver answers an allowed connect: corral dials the proxy itself and
// puts its socket in place of the target's fd, then makes connect return
// 0. The target's own socket never connects, so rewriting the sockaddr
// after inspect read it changes nothing.
func (s *Supervisor) handOver(n *notif, v verdict) {
	fd := int(n.Data.Args[0]) // inspect checked it fits
	flags, err := fdFlags(int(n.Pid), fd)
	if !idValid(s.fd, n.ID) {
		return // the pid may be another process's by now
	}
	if err != nil {
		s.refuseConnect(n, verdict{errno: errnoFD, addr: v.addr, why: fmt.Sprintf("fd %d: %v", fd, err)})
		return
	}
	conn, err := s.dial(v.family)
	if err == nil && conn == nil {
		err = errors.New("dial returned no file")
	}
	if err != nil {
		s.refuseConnect(n, verdict{errno: errnoDial, addr: v.addr, why: "cannot dial the proxy: " + err.Error()})
		return
	}
	err = install(s.fd, n.ID, conn, fd, flags)
	conn.Close() // the target has its own reference now
	if errors.Is(err, unix.ENOENT) {
		return // the target is gone
	}
	if err != nil {
		var errno unix.Errno
		if !errors.As(err, &errno) {
			errno = errnoOther
		}
		s.refuseConnect(n, verdict{errno: errno, addr: v.addr, why: "cannot install the proxy connection: " + err.Error()})
		return
	}
	if respond(s.fd, n.ID, 0) == nil {
		s.nAllowed.Add(1)
	}
}

// install makes conn the target's fd newfd, with the non-blocking and
// close-on-exec state the target's own fd had (flags, from fdinfo).
func install(listener int, id uint64, conn *os.File, newfd int, flags uint64) error {
	src := int(conn.Fd())
	// O_NONBLOCK lives in the open file description, which the target
	// will share with conn, so setting it here sets it there.
	if err := unix.SetNonblock(src, flags&unix.O_NONBLOCK != 0); err != nil {
		return err
	}
	return addFD(listener, id, src, newfd, flags&unix.O_CLOEXEC != 0)
}

// fdFlags reads the flags of fd in process pid from /proc: the open
// file's f_flags, with O_CLOEXEC added when the fd is close-on-exec.
func fdFlags(pid, fd int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// flags is the second line; fdinfo of some files goes on for long.
	buf := make([]byte, 4096)
	got, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, err
	}
	return parseFlags(string(buf[:got]))
}

// parseFlags finds "flags:\t0100002" (octal) in fdinfo text.
func parseFlags(info string) (uint64, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 8, 32)
		}
	}
	return 0, errors.New("fdinfo has no flags")
}
