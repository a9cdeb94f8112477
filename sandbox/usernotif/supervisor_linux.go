package usernotif

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Supervisor answers the connect notifications of one sandbox.
type Supervisor struct {
	listener *os.File
	fd       int // listener's fd, valid until serve closes listener
	arch     uint32
	allowed  netip.AddrPort
	dial     func(family int) (*os.File, error)
	log      func(string)
	read     func(pid int, ptr uint64, n int) ([]byte, error)

	wakeR, wakeW int // Stop writes to wakeW to end serve's poll
	done         chan struct{}
	stopOnce     sync.Once

	nAllowed, nRefused atomic.Int64
}

// Start serves the seccomp listener fd (ownership passes to the Supervisor)
// in goroutines. allowed is the one address a connect may name (the proxy,
// e.g. 127.0.0.1:P). dial makes the connection that replaces the sandbox's
// socket: Start's caller passes a func that connects a new socket of its own
// to allowed and returns it as a *os.File (blocking mode; the supervisor sets
// O_NONBLOCK itself when the target's fd had it). log, if not nil, gets one
// line per refused connect (address and why), for the report.
//
// On error listener is closed too, so the sandbox's connects fail (ENOSYS)
// instead of waiting for an answer. dial and log are called from the
// serving goroutine, one notification at a time; a slow dial holds up the
// sandbox's other connects and Stop.
func Start(listener *os.File, allowed netip.AddrPort, dial func(family int) (*os.File, error), log func(string)) (*Supervisor, error) {
	return start(listener, allowed, dial, log, readSockaddr)
}

// start is Start with the reader of the target's memory as a parameter,
// so the tests can make it fail.
func start(listener *os.File, allowed netip.AddrPort, dial func(int) (*os.File, error), log func(string), read func(int, uint64, int) ([]byte, error)) (*Supervisor, error) {
	if listener == nil {
		return nil, errors.New("usernotif: no listener")
	}
	s, err := newSupervisor(listener, allowed, dial, log, read)
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("usernotif: %w", err)
	}
	go s.serve()
	return s, nil
}

// newSupervisor checks the arguments and makes the wake pipe.
func newSupervisor(listener *os.File, allowed netip.AddrPort, dial func(int) (*os.File, error), log func(string), read func(int, uint64, int) ([]byte, error)) (*Supervisor, error) {
	if !allowed.IsValid() || allowed.Port() == 0 || allowed.Addr().Zone() != "" || allowed.Addr().IsUnspecified() {
		return nil, fmt.Errorf("allowed address %v is not one concrete address and port", allowed)
	}
	if dial == nil {
		return nil, errors.New("no dial func")
	}
	arch, ok := nativeArch()
	if !ok {
		return nil, errors.New("no AUDIT_ARCH known for this architecture")
	}
	// Fd puts the file in blocking mode, which suits: serve polls first.
	fd := int(listener.Fd())
	if err := checkListener(fd); err != nil {
		return nil, fmt.Errorf("fd %d is not a seccomp listener: %w", fd, err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	return &Supervisor{
		listener: listener, fd: fd, arch: arch,
		// An IPv4 proxy given as ::ffff:a.b.c.d is matched as a.b.c.d.
		allowed: netip.AddrPortFrom(allowed.Addr().Unmap(), allowed.Port()),
		dial:    dial, log: log, read: read,
		wakeR: p[0], wakeW: p[1], done: make(chan struct{}),
	}, nil
}

// Stop ends serving and closes the listener; it waits for the goroutines.
// Closing the listener makes the kernel fail every pending and later
// notified connect of the sandbox with ENOSYS.
func (s *Supervisor) Stop() {
	s.stopOnce.Do(func() {
		// The pipe is empty and non-blocking: this never blocks.
		unix.Write(s.wakeW, []byte{0})
		<-s.done
		unix.Close(s.wakeR)
		unix.Close(s.wakeW)
	})
}

// Stats: how many connects were handed the proxy connection, how many refused.
func (s *Supervisor) Stats() (allowed, refused int) {
	return int(s.nAllowed.Load()), int(s.nRefused.Load())
}

// serve answers notifications until Stop or until the sandbox is gone.
// It alone uses and closes the listener, so no fd is closed under a
// thread blocked in it.
func (s *Supervisor) serve() {
	defer close(s.done)
	defer s.listener.Close()
	for {
		stop, err := s.wait()
		if err == nil && !stop {
			err = s.serveOne()
		}
		if err != nil {
			s.logf("connect supervision ended, later connects fail with ENOSYS: %v", err)
			return
		}
		if stop {
			return
		}
	}
}

// wait polls until a notification is ready (false) or serving should
// end (true): Stop was called, or the listener hung up because no task
// is left under the filter.
func (s *Supervisor) wait() (stop bool, err error) {
	for {
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.wakeR), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, -1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return true, err
		case fds[1].Revents != 0:
			return true, nil
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
			return true, nil
		case fds[0].Revents&unix.POLLIN != 0:
			return false, nil
		}
	}
}

// serveOne receives and answers one notification.
func (s *Supervisor) serveOne() error {
	var n notif
	err := recvNotif(s.fd, &n)
	if err == unix.ENOENT || err == unix.EINTR {
		// The target was killed (or interrupted) after poll saw it.
		return nil
	}
	if err != nil {
		return fmt.Errorf("SECCOMP_IOCTL_NOTIF_RECV: %w", err)
	}
	v, ok := s.inspect(&n)
	switch {
	case !ok:
	case v.errno != 0:
		s.refuse(&n, v)
	default:
		s.handOver(&n, v)
	}
	return nil
}

// refuse answers n with v's errno and reports it.
func (s *Supervisor) refuse(n *notif, v verdict) {
	// ENOENT here means the target is gone; it is refused all the same.
	respond(s.fd, n.ID, v.errno)
	s.nRefused.Add(1)
	s.logf("refused connect to %s: %s (%s)", v.addr, v.why, unix.ErrnoName(v.errno))
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.log != nil {
		s.log(fmt.Sprintf(format, args...))
	}
}
