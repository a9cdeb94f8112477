package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"corral.dev/corral/policyengine"
)

// SystemHostAddrs answers policyengine.HostAddrs by asking the kernel how
// it would route a packet to the address (RTM_GETROUTE, as `ip route get`
// does): a route of type local (or IPv6 anycast) means the packet stays on
// this machine, for an address on any interface (bridges, veths, docker0,
// IPv6 global and link-local) and for whole ranges routed locally ("ip
// route add local 10.9.0.0/16 dev lo"). It asks at each check, so
// addresses added during a long run count at once; one question costs a
// netlink round trip (some 10-35µs), paid only for addresses that are not
// loopback already, and only by the proxy and check. It asks in the
// network namespace the proxy dials from, which is the host's.
func SystemHostAddrs() policyengine.HostAddrs { return routeLookup{} }

type routeLookup struct{}

var errShortReply = errors.New("route lookup: short netlink reply")

// IsHost reports whether the kernel routes a to this machine; when it
// cannot ask, it answers true (fail closed).
func (routeLookup) IsHost(a netip.Addr) bool {
	local, err := routeIsLocal(a)
	return err != nil || local
}

// routeIsLocal asks the kernel for the route to a.
func routeIsLocal(a netip.Addr) (bool, error) {
	a = a.WithZone("").Unmap()
	family, bits := unix.AF_INET, 32
	if a.Is6() {
		family, bits = unix.AF_INET6, 128
	}
	raw := a.AsSlice()
	attrLen := unix.SizeofRtAttr + len(raw)
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofRtMsg+attrLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.RTM_GETROUTE)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(msg[8:], 1) // sequence number
	rt := msg[unix.SizeofNlMsghdr:]
	rt[0], rt[1] = byte(family), byte(bits) // rtm_family, rtm_dst_len
	attr := rt[unix.SizeofRtMsg:]
	ne.PutUint16(attr[0:], uint16(attrLen))
	ne.PutUint16(attr[2:], unix.RTA_DST)
	copy(attr[unix.SizeofRtAttr:], raw)

	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, os.NewSyscallError("socket(AF_NETLINK)", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, os.NewSyscallError("sendto(RTM_GETROUTE)", err)
	}
	buf := make([]byte, 4096)
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, os.NewSyscallError("recvfrom(RTM_GETROUTE)", err)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // only the kernel's answer counts
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if m.Header.Seq != 1 {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return false, errShortReply
				}
				switch errno := unix.Errno(-int32(ne.Uint32(m.Data))); errno {
				case unix.ENETUNREACH, unix.EHOSTUNREACH:
					return false, nil // no route: nowhere, so not here
				default:
					return false, fmt.Errorf("route lookup: %w", errno)
				}
			case unix.RTM_NEWROUTE:
				if len(m.Data) < unix.SizeofRtMsg {
					return false, errShortReply
				}
				// rtm_type: local, or an IPv6 anycast address of this
				// host (a router's subnet-router anycast), which it
				// also answers itself.
				t := m.Data[7]
				return t == unix.RTN_LOCAL || t == unix.RTN_ANYCAST, nil
			}
		}
	}
}
