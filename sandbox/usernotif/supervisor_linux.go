package usernotif

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Config says what the supervisor allows.
type Config struct {
	// Proxy is the one address a connect may name (invalid: every
	// connect is refused with EPERM).
	Proxy netip.AddrPort
	// Dial makes the connection that replaces the sandbox's socket: a
	// new socket of corral's own, connected to Proxy, as a *os.File in
	// blocking mode (the supervisor sets O_NONBLOCK itself when the
	// target's fd had it). Needed when Proxy is valid.
	Dial func(family int) (*os.File, error)
	// Writable are the real paths (absolute, clean, symlinks resolved)
	// of the folders and files the command may write: a chmod is
	// allowed only on a file or folder at or below one of them. They
	// are compared as they are: a path with a symlink in it matches
	// nothing.
	Writable []string
	// Redirect, when set, supervises connects as the namespaces tier
	// does (see Redirect) instead of allowing only Proxy.
	Redirect *Redirect
	// Create, if not nil, supervises the syscalls that make a name
	// (CreatePolicy says what the caller must have done first).
	Create *CreatePolicy
	// Log, if not nil, gets one line per refusal (what and why), for
	// the report; at most maxLogged of them per Supervisor.
	Log func(string)
}

// maxLogged caps the refusals logged: a hostile sandbox could otherwise
// fill corral's report (and memory) with them.
const maxLogged = 64

// Supervisor answers the connect and chmod notifications of one sandbox.
type Supervisor struct {
	listener *os.File
	fd       int // listener's fd, valid until serve closes listener
	arch     uint32
	proxy    netip.AddrPort // invalid: no connect is allowed
	dial     func(family int) (*os.File, error)
	writable []string
	euid     uint32
	log      func(string)
	redir    *Redirect
	read     func(pid int, ptr uint64, n int) ([]byte, error)
	logMu    sync.Mutex
	// closing guards the listener's fd for the redirects that answer
	// from goroutines of their own (finishRedirect).
	closing sync.RWMutex
	closed  bool
	logged  int // refusals so far

	createPolicy *CreatePolicy // nil: no creating syscall is supervised
	work         *worker       // makes the names, with the command's rights

	wakeR, wakeW int // Stop writes to wakeW to end serve's poll
	done         chan struct{}
	stopOnce     sync.Once

	nAllowed, nRefused atomic.Int64
}

// StartConfig serves the seccomp listener fd (ownership passes to the
// Supervisor) in a goroutine, allowing what cfg allows.
//
// On error listener is closed too, so the sandbox's notified syscalls
// fail (ENOSYS) instead of waiting for an answer. Dial and Log are called
// from the serving goroutine, one notification at a time; a slow Dial
// holds up the sandbox's other notified syscalls and Stop.
func StartConfig(listener *os.File, cfg Config) (*Supervisor, error) {
	return start(listener, cfg, readMemory)
}

// Start is StartConfig for a connect-only caller: allowed is the proxy
// (it must be valid), and every chmod is refused.
func Start(listener *os.File, allowed netip.AddrPort, dial func(family int) (*os.File, error), log func(string)) (*Supervisor, error) {
	if !allowed.IsValid() {
		if listener != nil {
			listener.Close()
		}
		return nil, errors.New("usernotif: no allowed address")
	}
	return StartConfig(listener, Config{Proxy: allowed, Dial: dial, Log: log})
}

// start is StartConfig with the reader of the target's memory as a
// parameter, so the tests can make it fail.
func start(listener *os.File, cfg Config, read func(int, uint64, int) ([]byte, error)) (*Supervisor, error) {
	if listener == nil {
		return nil, errors.New("usernotif: no listener")
	}
	s, err := newSupervisor(listener, cfg, read)
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("usernotif: %w", err)
	}
	if cfg.Create == nil {
		go s.serve()
		return s, nil
	}
	// Making names, serve runs on a thread of its own without
	// capabilities (worker).
	ready := make(chan error)
	go func() {
		w, err := newWorker()
		s.work = w
		ready <- err
		if err != nil {
			s.listener.Close()
			close(s.done)
			return
		}
		s.serve()
	}()
	if err := <-ready; err != nil {
		unix.Close(s.wakeR)
		unix.Close(s.wakeW)
		return nil, fmt.Errorf("usernotif: the thread that makes names: %w", err)
	}
	return s, nil
}

// newSupervisor checks the arguments and makes the wake pipe.
func newSupervisor(listener *os.File, cfg Config, read func(int, uint64, int) ([]byte, error)) (*Supervisor, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
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
	s := &Supervisor{
		listener: listener, fd: fd, arch: arch, dial: cfg.Dial,
		writable: append([]string(nil), cfg.Writable...), euid: uint32(os.Geteuid()),
		log: cfg.Log, read: read, redir: cfg.Redirect, wakeR: p[0], wakeW: p[1], done: make(chan struct{}),
		createPolicy: cfg.Create,
	}
	if cfg.Proxy.IsValid() {
		// An IPv4 proxy given as ::ffff:a.b.c.d is matched as a.b.c.d.
		s.proxy = netip.AddrPortFrom(cfg.Proxy.Addr().Unmap(), cfg.Proxy.Port())
	}
	return s, nil
}

// checkConfig refuses a proxy that is not one concrete address and port,
// and writable paths that could not match readlink's answers.
func checkConfig(cfg Config) error {
	if p := cfg.Proxy; p.IsValid() {
		if p.Port() == 0 || p.Addr().Zone() != "" || p.Addr().IsUnspecified() {
			return fmt.Errorf("proxy address %v is not one concrete address and port", p)
		}
		if cfg.Dial == nil {
			return errors.New("no dial func")
		}
	}
	if r := cfg.Redirect; r != nil && (!r.Proxy4.IsValid() || !r.Proxy4.Addr().Is4() || r.Originals == nil) {
		return errors.New("a redirect needs the proxy's IPv4 address and Originals")
	}
	if c := cfg.Create; c != nil {
		if c.Deny == nil {
			return errors.New("a create policy without a deny func")
		}
		for _, r := range c.Rules {
			if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
				return fmt.Errorf("rule path %q is not absolute and clean", r.Path)
			}
		}
	}
	for _, w := range cfg.Writable {
		if !filepath.IsAbs(w) || filepath.Clean(w) != w {
			return fmt.Errorf("writable path %q is not absolute and clean", w)
		}
	}
	return nil
}

// Stop ends serving and closes the listener; it waits for the goroutines.
// Closing the listener makes the kernel fail every pending and later
// notified syscall of the sandbox with ENOSYS.
func (s *Supervisor) Stop() {
	s.stopOnce.Do(func() {
		// The pipe is empty and non-blocking: this never blocks.
		unix.Write(s.wakeW, []byte{0})
		<-s.done
		unix.Close(s.wakeR)
		unix.Close(s.wakeW)
	})
}

// Stats: how many notifications were allowed (connects handed the proxy
// connection, modes changed) and how many refused (or failed).
func (s *Supervisor) Stats() (allowed, refused int) {
	return int(s.nAllowed.Load()), int(s.nRefused.Load())
}

// serve answers notifications until Stop or until the sandbox is gone.
// It alone uses and closes the listener, so no fd is closed under a
// thread blocked in it.
func (s *Supervisor) serve() {
	defer close(s.done)
	defer func() {
		// A redirect still connecting answers nothing once the
		// listener is closed (its fd number may be another file's).
		s.closing.Lock()
		s.closed = true
		s.listener.Close()
		s.closing.Unlock()
	}()
	for {
		stop, err := s.wait()
		if err == nil && !stop {
			err = s.serveOne()
		}
		if err != nil {
			s.logf("seccomp supervision ended, later connects and chmods fail with ENOSYS: %v", err)
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
	s.dispatch(&n)
	return nil
}

// dispatch hands n to the handler of its syscall. Another ABI's syscall
// (e.g. i386 on x86_64) numbers its syscalls differently: refused, not
// decoded.
func (s *Supervisor) dispatch(n *notif) {
	d := &n.Data
	switch {
	case d.Arch != s.arch:
	case d.Nr == unix.SYS_CONNECT && s.redir != nil:
		s.redirectConnect(*n)
		return
	case d.Nr == unix.SYS_CONNECT:
		s.connect(n)
		return
	case isChmod(d.Nr):
		s.chmod(n)
		return
	case s.createPolicy != nil && isCreate(d.Nr):
		s.create(n)
		return
	}
	what := fmt.Sprintf("syscall %d arch %#x", d.Nr, d.Arch)
	s.refuse(n, errnoOther, what, "only connect, chmod and (with fs.deny) the calls that make a name are supervised")
}

// refuse answers n with errno and reports what was refused and why.
func (s *Supervisor) refuse(n *notif, errno unix.Errno, what, why string) {
	// ENOENT here means the target is gone; it is refused all the same.
	respond(s.fd, n.ID, errno)
	s.nRefused.Add(1)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.logged++
	switch {
	case s.logged <= maxLogged:
		s.logf("refused %s: %s (%s)", what, why, unix.ErrnoName(errno))
	case s.logged == maxLogged+1:
		s.logf("more refusals not logged")
	}
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.log != nil {
		s.log(fmt.Sprintf(format, args...))
	}
}
