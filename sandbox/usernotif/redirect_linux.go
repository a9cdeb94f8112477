package usernotif

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Redirect configures the supervision of a sandbox in a network namespace
// of its own (the namespaces tier with transparent egress). There the
// namespace is the boundary: it has only lo, so no socket in it reaches
// anything but the sandbox's own listeners and the proxy's. The
// supervisor only makes the command's connects to outside addresses land
// in the proxy: it takes the command's own socket (pidfd_getfd), connects
// it to the proxy's listener, and records in Originals where the command
// was going. The socket stays the command's, in the sandbox's namespace.
//
// Every other connect goes ahead as the command made it
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): connects to loopback, UNIX and
// datagram sockets, and anything the supervisor cannot read. The command
// may rewrite its arguments after the check, which can change nothing
// here: whatever address the kernel then reads, it connects inside the
// namespace, under the Landlock rules of the sandbox.
type Redirect struct {
	// Proxy4 is the proxy's IPv4 listener in the sandbox (127.0.0.1:P);
	// Proxy6 its IPv6 one ([::1]:P), invalid when the sandbox has no
	// IPv6 (IPv6 sockets then go to Proxy4, v4-mapped).
	Proxy4, Proxy6 netip.AddrPort
	// Originals get each redirected connection's destination.
	Originals *Originals
	// Loopback are ports of the sandbox's own loopback whose connects go
	// to the proxy too, as the host's loopback there is what a grant
	// names (preset:loopback:PORT) and nothing of the sandbox's listens.
	Loopback []uint16
}

// errnoRedirect is what a connect gets when the supervisor cannot take
// or connect the socket: as if there were no route, which is what the
// namespace would have said.
const errnoRedirect = unix.ENETUNREACH

// userNotifContinue is SECCOMP_USER_NOTIF_FLAG_CONTINUE.
const userNotifContinue = 1

// proceed lets the notified syscall go ahead as the target made it.
func proceed(fd int, id uint64) error {
	r := notifResp{ID: id, Flags: userNotifContinue}
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// redirectConnect answers a connect in the namespaces tier. It runs on
// the serving goroutine, but for the connect of a blocking socket, which
// waits for the proxy to accept and gets a goroutine of its own. (A
// goroutine for every connect cost a proxied fetch 4 ms: the serving
// goroutine goes straight back into poll(2) holding its P, and the new
// one waits for the runtime to take the P back.)
func (s *Supervisor) redirectConnect(n notif) {
	d := &n.Data
	pass := func() {
		if proceed(s.fd, n.ID) == nil {
			s.nAllowed.Add(1)
		}
	}
	if d.Args[0] > math.MaxInt32 || d.Args[2] > maxSockaddr || n.Pid == 0 {
		pass() // the kernel refuses it itself
		return
	}
	sa, err := s.read(int(n.Pid), d.Args[1], int(d.Args[2]))
	if !idValid(s.fd, n.ID) {
		return
	}
	dest, ok := inetDest(sa)
	if err != nil || !ok || isInside(dest.Addr()) && !(dest.Addr().Unmap().IsLoopback() && slices.Contains(s.redir.Loopback, dest.Port())) {
		pass()
		return
	}
	sock, errno, why := s.takeSocket(n)
	if errno != 0 {
		s.refuse(&n, errno, "connect to "+dest.String(), why)
		return
	}
	if sock < 0 {
		pass()
		return
	}
	// The socket's file is the command's: O_NONBLOCK is its flag.
	if fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK == 0 {
		go s.finishRedirect(n, sock, dest)
		return
	}
	s.finishRedirect(n, sock, dest)
}

// finishRedirect connects sock to the proxy for dest, answers n and
// closes sock.
func (s *Supervisor) finishRedirect(n notif, sock int, dest netip.AddrPort) {
	defer unix.Close(sock)
	errno, why := s.redirect(sock, dest)
	// The connect may have waited: the listener is held open (not
	// closed under the answer) only while answering.
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return
	}
	switch errno {
	case 0, unix.EINPROGRESS:
		if respond(s.fd, n.ID, errno) == nil {
			s.nAllowed.Add(1)
		}
	default:
		s.refuse(&n, errno, "connect to "+dest.String(), why)
	}
}

// takeSocket gets the target's socket for the connect n, if it is one the
// supervisor redirects: a TCP socket of AF_INET or AF_INET6 that is not
// connected yet. It returns -1 (and errno 0) for any other, whose connect
// goes ahead as made.
func (s *Supervisor) takeSocket(n notif) (sock int, errno unix.Errno, why string) {
	pidfd, err := openThread(int(n.Pid))
	if err != nil {
		return -1, errnoRedirect, fmt.Sprintf("pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	if !idValid(s.fd, n.ID) {
		return -1, 0, "" // gone; the answer goes nowhere
	}
	sock, err = unix.PidfdGetfd(pidfd, int(n.Data.Args[0]), 0)
	switch {
	case errors.Is(err, unix.EBADF):
		return -1, unix.EBADF, fmt.Sprintf("fd %d is not open", n.Data.Args[0])
	case err != nil:
		return -1, errnoRedirect, fmt.Sprintf("cannot take the socket (pidfd_getfd: %v; Yama ptrace_scope above 1 forbids it)", err)
	}
	typ, err1 := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, err2 := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err1 != nil || err2 != nil || typ != unix.SOCK_STREAM || proto != unix.IPPROTO_TCP {
		unix.Close(sock)
		return -1, 0, "" // not a TCP socket (ENOTSOCK and the like come from the kernel)
	}
	if _, err := unix.Getpeername(sock); err == nil {
		unix.Close(sock)
		return -1, 0, "" // connected already: the kernel says EISCONN
	}
	// Only a socket made in the sandbox's namespace is connected: one
	// the command was handed from outside (a TCP stream as stdin) would
	// be connected in the host's, to whatever listens on the proxy's
	// port there.
	if err := sameNetns(sock, int(n.Pid)); err != nil {
		unix.Close(sock)
		return -1, errnoRedirect, err.Error()
	}
	return sock, 0, ""
}

// sameNetns checks that sock is in pid's network namespace.
func sameNetns(sock, pid int) error {
	ns, err := unix.IoctlRetInt(sock, unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("cannot tell the socket's network namespace (SIOCGSKNS: %v)", err)
	}
	defer unix.Close(ns)
	var have, want unix.Stat_t
	if err := unix.Fstat(ns, &have); err != nil {
		return err
	}
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &want); err != nil {
		return err
	}
	if have.Dev != want.Dev || have.Ino != want.Ino {
		return errors.New("the socket is not in the sandbox's network namespace (it came from outside)")
	}
	return nil
}

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for one thread, whose
// fd table pidfd_getfd then reads.
const pidfdThread = unix.O_EXCL

// openThread opens a pidfd for the thread tid, which made the connect: on
// kernels before 6.9, one for its thread group (pidfd_open refuses a
// thread that does not lead its group), whose fd table its threads share
// unless made with clone without CLONE_FILES. Such a thread could then
// get the group leader's socket of the same number connected instead of
// its own: a socket of the command's, in the sandbox's namespace, to the
// proxy, which decides the destination the command asked for, so nothing
// is gained by it.
func openThread(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != unix.EINVAL {
		return fd, err
	}
	if fd, err = unix.PidfdOpen(tid, 0); err != unix.EINVAL {
		return fd, err
	}
	tgid, err := threadGroup(tid)
	if err != nil {
		return -1, err
	}
	return unix.PidfdOpen(tgid, 0)
}

// threadGroup reads the thread group of tid from /proc.
func threadGroup(tid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Tgid in /proc status")
}

// redirect connects sock to the proxy and records dest as where it was
// going. A socket with no address yet is bound to loopback first, so its
// address, by which the proxy finds the record, is known before the
// connection exists.
func (s *Supervisor) redirect(sock int, dest netip.AddrPort) (unix.Errno, string) {
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return errnoRedirect, "SO_DOMAIN: " + err.Error()
	}
	r := s.redir
	proxy, local := r.Proxy4, netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if domain == unix.AF_INET6 {
		if r.Proxy6.IsValid() {
			proxy, local = r.Proxy6, netip.IPv6Loopback()
		} else {
			proxy = netip.AddrPortFrom(netip.AddrFrom16(r.Proxy4.Addr().As16()), r.Proxy4.Port())
			local = netip.AddrFrom16(local.As16())
		}
	} else if domain != unix.AF_INET || dest.Addr().Is6() && !dest.Addr().Is4In6() {
		return unix.EAFNOSUPPORT, "an IPv6 address on an IPv4 socket"
	}
	from, err := sockAddr(sock)
	if err != nil {
		return errnoRedirect, "getsockname: " + err.Error()
	}
	if from.Port() == 0 {
		if err := unix.Bind(sock, sockaddr(netip.AddrPortFrom(local, 0))); err != nil {
			return errnoOf(err), "binding the socket to loopback: " + err.Error()
		}
		if from, err = sockAddr(sock); err != nil {
			return errnoRedirect, "getsockname: " + err.Error()
		}
	}
	if from.Addr().IsUnspecified() {
		from = netip.AddrPortFrom(local, from.Port())
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if !r.Originals.record(from, dest) {
		return errnoRedirect, "too many connections waiting for the proxy"
	}
	err = unix.Connect(sock, sockaddr(proxy))
	if err == unix.EINTR {
		// A signal (Go's preemption) interrupted a blocking connect,
		// which goes on in the kernel: its outcome, not EINTR, is the
		// command's answer (one to the loopback proxy takes no time).
		err = waitConnected(sock, 2*time.Second)
	}
	if err != nil && err != unix.EINPROGRESS {
		r.Originals.forget(from)
		return errnoOf(err), "connecting to the proxy: " + err.Error()
	} else if err == unix.EINPROGRESS {
		return unix.EINPROGRESS, ""
	}
	return 0, ""
}

// ConnectWait connects the blocking socket fd to sa. A connect a signal
// interrupts (EINTR: Go preempts goroutines with SIGURG) goes on in the
// kernel, and calling connect again would say EALREADY: it waits, at
// most d, for the socket to be writable and reads the outcome from
// SO_ERROR, as Go's net package does.
func ConnectWait(fd int, sa unix.Sockaddr, d time.Duration) error {
	err := unix.Connect(fd, sa)
	if err != unix.EINTR && err != unix.EINPROGRESS && err != unix.EALREADY {
		return err
	}
	return waitConnected(fd, d)
}

// waitConnected waits, at most d, for the connect of sock to end, and
// returns its outcome.
func waitConnected(sock int, d time.Duration) error {
	pfd := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLOUT}}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.ETIMEDOUT
		}
		n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			break
		}
	}
	soerr, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if soerr != 0 {
		return unix.Errno(soerr)
	}
	return nil
}

// sockAddr is getsockname as an AddrPort.
func sockAddr(sock int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(sock)
	if err != nil {
		return netip.AddrPort{}, err
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)), nil
	}
	return netip.AddrPort{}, errors.New("not an internet socket")
}

// sockaddr is ap as a unix.Sockaddr of its own family.
func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}
}

// inetDest decodes an AF_INET or AF_INET6 sockaddr long enough for its
// family; false for anything else.
func inetDest(sa []byte) (netip.AddrPort, bool) {
	if len(sa) < 2 {
		return netip.AddrPort{}, false
	}
	port := func() uint16 { return binary.BigEndian.Uint16(sa[2:4]) }
	switch binary.NativeEndian.Uint16(sa) {
	case unix.AF_INET:
		if len(sa) >= sizeofSockaddrIn {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port()), true
		}
	case unix.AF_INET6:
		if len(sa) >= sizeofSockaddrIn6 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])), port()), true
		}
	}
	return netip.AddrPort{}, false
}

// isInside tells the addresses a connect reaches inside the sandbox's
// namespace by itself: loopback (127/8, ::1, v4-mapped 127/8) and the
// unspecified address (which means this host). Those go ahead.
func isInside(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsUnspecified()
}
