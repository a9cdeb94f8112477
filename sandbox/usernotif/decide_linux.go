package usernotif

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"

	"golang.org/x/sys/unix"
)

const (
	// errnoAddress refuses an AF_INET or AF_INET6 address that is not the
	// proxy: EACCES, "not permitted by policy", and distinct from
	// ECONNREFUSED so the report and the command can tell a refusal from
	// a closed port.
	errnoAddress = unix.EACCES
	// errnoOther refuses everything else the supervisor will not hand
	// over: other families, sockaddrs it cannot read or decode, any
	// connect when there is no proxy, and notified syscalls that are
	// neither connect nor chmod.
	errnoOther = unix.EPERM
	// errnoFD refuses an fd argument that names no fd of the target.
	errnoFD = unix.EBADF
	// errnoDial is what the target sees when the proxy cannot be dialed,
	// as if the proxy's port were closed.
	errnoDial = unix.ECONNREFUSED
)

const (
	// maxSockaddr is sizeof(struct sockaddr_storage): the kernel itself
	// refuses a longer addrlen, so nothing longer is ever read.
	maxSockaddr = 128
	// sizeofSockaddrIn is sizeof(struct sockaddr_in).
	sizeofSockaddrIn = 16
	// sizeofSockaddrIn6 is SIN6_LEN_RFC2133: the kernel accepts a
	// sockaddr_in6 without its trailing scope_id.
	sizeofSockaddrIn6 = 24
)

// verdict is the decision on one notification. errno 0 means hand the
// proxy over, with a socket of family.
type verdict struct {
	errno  unix.Errno
	family int
	addr   string // what the target asked for, for the log
	why    string
}

// connect answers a connect: refused, or handed the proxy connection.
func (s *Supervisor) connect(n *notif) {
	v, ok := s.inspect(n)
	switch {
	case !ok:
	case v.errno != 0:
		s.refuseConnect(n, v)
	default:
		s.handOver(n, v)
	}
}

// refuseConnect answers n with v's errno and reports it.
func (s *Supervisor) refuseConnect(n *notif, v verdict) {
	s.refuse(n, v.errno, "connect to "+v.addr, v.why)
}

// inspect reads a connect's sockaddr from the target and judges it. ok
// is false when the notification went stale while reading: the target is
// gone and the pid may name another process, so nothing read is trusted.
func (s *Supervisor) inspect(n *notif) (v verdict, ok bool) {
	d := &n.Data
	if !s.proxy.IsValid() {
		return verdict{errno: errnoOther, addr: "-", why: "the sandbox has no network"}, true
	}
	if d.Args[0] > math.MaxInt32 {
		return verdict{errno: errnoFD, addr: "-", why: fmt.Sprintf("fd argument %#x is not an fd", d.Args[0])}, true
	}
	if d.Args[2] > maxSockaddr {
		return verdict{errno: errnoOther, addr: "-", why: fmt.Sprintf("addrlen %d is over %d", d.Args[2], maxSockaddr)}, true
	}
	if n.Pid == 0 {
		return verdict{errno: errnoOther, addr: "-", why: "the target's pid is not visible to corral"}, true
	}
	sa, err := s.read(int(n.Pid), d.Args[1], int(d.Args[2]))
	if !idValid(s.fd, n.ID) {
		return verdict{}, false
	}
	if err != nil {
		return verdict{errno: errnoOther, addr: "-", why: "cannot read the sockaddr: " + err.Error()}, true
	}
	return judge(sa, s.proxy), true
}

// readMemory copies n bytes at ptr out of process pid. A partial read
// is an error: the kernel would have refused the syscall with EFAULT.
func readMemory(pid int, ptr uint64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if n == 0 {
		return buf, nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(n)
	remote := []unix.RemoteIovec{{Base: uintptr(ptr), Len: n}}
	got, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, errors.New("short read")
	}
	return buf, nil
}

// judge decides on a sockaddr of exactly addrlen bytes. allowed has no
// zone and an unmapped address.
func judge(sa []byte, allowed netip.AddrPort) verdict {
	if len(sa) < 2 {
		return verdict{errno: errnoOther, addr: "-", why: fmt.Sprintf("addrlen %d holds no family", len(sa))}
	}
	// sa_family is in host byte order, the port in network order.
	switch family := binary.NativeEndian.Uint16(sa); family {
	case unix.AF_INET:
		return judgeInet(sa, allowed)
	case unix.AF_INET6:
		return judgeInet6(sa, allowed)
	default:
		return verdict{errno: errnoOther, addr: familyName(family), why: "only TCP to the proxy is allowed"}
	}
}

// judgeInet decides on a sockaddr_in: only allowed itself passes.
func judgeInet(sa []byte, allowed netip.AddrPort) verdict {
	if len(sa) < sizeofSockaddrIn {
		return verdict{errno: errnoOther, addr: "AF_INET", why: fmt.Sprintf("addrlen %d is short for AF_INET", len(sa))}
	}
	ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), binary.BigEndian.Uint16(sa[2:4]))
	if ap != allowed {
		return verdict{errno: errnoAddress, addr: ap.String(), why: "not the proxy"}
	}
	return verdict{family: unix.AF_INET, addr: ap.String()}
}

// judgeInet6 decides on a sockaddr_in6: only allowed in its 16-byte form
// passes, which for an IPv4 proxy is the v4-mapped ::ffff:a.b.c.d (the
// kernel would connect that to a.b.c.d). flowinfo and scope_id do not
// matter: corral makes the connection, not the target.
func judgeInet6(sa []byte, allowed netip.AddrPort) verdict {
	if len(sa) < sizeofSockaddrIn6 {
		return verdict{errno: errnoOther, addr: "AF_INET6", why: fmt.Sprintf("addrlen %d is short for AF_INET6", len(sa))}
	}
	ap := netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])), binary.BigEndian.Uint16(sa[2:4]))
	want := netip.AddrPortFrom(netip.AddrFrom16(allowed.Addr().As16()), allowed.Port())
	if ap != want {
		return verdict{errno: errnoAddress, addr: ap.String(), why: "not the proxy"}
	}
	return verdict{family: unix.AF_INET6, addr: ap.String()}
}

// familyName names an address family for the log; the sockaddr's other
// bytes (an AF_UNIX path, say) are the sandbox's and are not logged.
func familyName(f uint16) string {
	switch f {
	case unix.AF_UNSPEC:
		return "AF_UNSPEC"
	case unix.AF_UNIX:
		return "AF_UNIX"
	case unix.AF_NETLINK:
		return "AF_NETLINK"
	case unix.AF_PACKET:
		return "AF_PACKET"
	case unix.AF_VSOCK:
		return "AF_VSOCK"
	}
	return fmt.Sprintf("family %d", f)
}
