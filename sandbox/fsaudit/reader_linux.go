package fsaudit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnobservable wraps every reason Open cannot read the records.
var ErrUnobservable = errors.New("cannot read Landlock's denials")

// LogNewExecOn is landlock_restrict_self's LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
// (ABI 7): the init restricts itself and then the command is a new
// execve, whose denials Landlock does not log by default.
const LogNewExecOn = 1 << 1

// After the run, corral reads on for the records still on their way from
// the kernel's audit thread, which sends them in order, at its own pace
// (a burst of a thousand takes it 100-200 ms here):
//   - no denial of the run seen: until drainIdle passes without a
//     record (the records of a denial are queued before the denied call
//     returns, so they are normally there before corral learns the
//     command ended);
//   - one seen: until the domain's deallocation record, which comes after
//     all of them and counts them, or drainQuiet without a record of the
//     run, or drainMax in all.
const (
	drainIdle  = 2 * time.Millisecond
	drainQuiet = 100 * time.Millisecond
	drainMax   = 2 * time.Second
)

// Reader reads the audit multicast group for one run.
type Reader struct {
	fd   int
	wake [2]int // a pipe: Finish wakes the reading goroutine
	c    *collector
	done chan struct{}
	once sync.Once
	// lostBefore is audit's count of records it dropped (its backlog
	// full) when reading started: a higher count at the end means
	// records, perhaps the run's, never reached corral.
	lostBefore uint32
}

// Open joins the audit multicast group, or says why it cannot: abi is
// the host's Landlock ABI (audit records came with ABI 7).
func Open(abi int) (*Reader, error) {
	if abi < 7 {
		return nil, fmt.Errorf("%w: Landlock ABI %d has no audit records (ABI 7, Linux 6.15, added them)", ErrUnobservable, abi)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("%w: the kernel has no audit (socket(NETLINK_AUDIT): %v)", ErrUnobservable, err)
	}
	enabled, lost, err := auditStatus()
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: reading the kernel's audit records needs root (CAP_AUDIT_CONTROL and CAP_AUDIT_READ in the initial user namespace), which corral (uid %d) is not here (%v)", ErrUnobservable, os.Getuid(), err)
	}
	if enabled == 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: audit is disabled on this host; `auditctl -e 1` (or audit=1 on the kernel command line) enables it, for every process", ErrUnobservable)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groupReadLog}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: reading audit records needs CAP_AUDIT_READ in the initial user namespace, which corral (uid %d) lacks (%v)", ErrUnobservable, os.Getuid(), err)
	}
	// Room for a burst (root may go past rmem_max); an overrun is ENOBUFS,
	// reported as lost records.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	r := &Reader{fd: fd, c: newCollector(), done: make(chan struct{}), lostBefore: lost}
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %v", ErrUnobservable, err)
	}
	go r.read()
	return r, nil
}

// Attribute names the process corral started for the run (the stage
// that becomes or forks the sandbox's init), while it waits for its
// cgroup: denials of the Landlock domain it or one of its children
// creates are the run's. Its children are read now, while they live.
func (r *Reader) Attribute(pid int) { r.c.attribute(append(children(pid), pid)) }

// children are pid's children (CONFIG_PROC_CHILDREN's file, else a scan
// of /proc).
func children(pid int) []int {
	var out []int
	p := strconv.Itoa(pid)
	if b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children"); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == p {
				out = append(out, c)
			}
		}
	}
	return out
}

// Finish stops reading once the records the kernel still sends have come
// (drainIdle) and returns the run's distinct denials, how
// many more there were, and whether some may be missing.
func (r *Reader) Finish() (denials []Denial, more int, lost bool) {
	r.once.Do(func() {
		unix.Write(r.wake[1], []byte{1})
		<-r.done
		unix.Close(r.fd)
		unix.Close(r.wake[0])
		unix.Close(r.wake[1])
		if _, lost, err := auditStatus(); err != nil || lost != r.lostBefore {
			r.c.mu.Lock()
			r.c.lost = true
			r.c.mu.Unlock()
		}
	})
	return r.c.result()
}

// read takes records until Finish, then drains (drainIdle, drainQuiet,
// drainMax).
func (r *Reader) read() {
	defer close(r.done)
	buf := make([]byte, 1<<16)
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	var end time.Time // set once Finish asked
	for {
		timeout := -1
		if !end.IsZero() {
			seen, freed := r.c.progress()
			switch {
			case freed || time.Now().After(end):
				return
			case seen:
				timeout = int(drainQuiet.Milliseconds())
			default:
				timeout = int(drainIdle.Milliseconds())
			}
		}
		n, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil || (n == 0 && !end.IsZero()) {
			return
		}
		if end.IsZero() && fds[1].Revents != 0 {
			end = time.Now().Add(drainMax)
			fds[1].Fd = -1 // poll ignores it from now on
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			r.recv(buf)
		}
	}
}

// recv reads what is queued, without blocking.
func (r *Reader) recv(buf []byte) {
	for {
		n, _, err := unix.Recvfrom(r.fd, buf, unix.MSG_DONTWAIT)
		if err == unix.ENOBUFS {
			r.c.mu.Lock()
			r.c.lost = true
			r.c.mu.Unlock()
			continue
		}
		if err != nil || n < unix.NLMSG_HDRLEN {
			return
		}
		// One record a datagram. Not syscall.ParseNetlinkMessage: audit
		// does not pad a record to NLMSG_ALIGN, which that refuses.
		typ := int(binary.NativeEndian.Uint16(buf[4:6]))
		end := min(int(binary.NativeEndian.Uint32(buf[0:4])), n)
		text := buf[unix.NLMSG_HDRLEN:max(end, unix.NLMSG_HDRLEN)]
		for len(text) > 0 && text[len(text)-1] == 0 {
			text = text[:len(text)-1]
		}
		r.c.record(typ, string(text))
	}
}

// auditStatus asks the kernel for audit's status (AUDIT_GET): whether it
// is enabled, and how many records it dropped so far.
func auditStatus() (enabled, lost uint32, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN)
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&req[0]))
	*hdr = unix.NlMsghdr{Len: uint32(len(req)), Type: unix.AUDIT_GET, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK, Seq: 1}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 8192)
	for range 4 {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, 0, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return 0, 0, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := *(*int32)(unsafe.Pointer(&m.Data[0])); e != 0 {
						return 0, 0, unix.Errno(-e)
					}
				}
			case unix.AUDIT_GET:
				if len(m.Data) >= 28 {
					// struct audit_status: mask, enabled, failure, pid,
					// rate_limit, backlog_limit, lost, ...
					return *(*uint32)(unsafe.Pointer(&m.Data[4])), *(*uint32)(unsafe.Pointer(&m.Data[24])), nil
				}
			}
		}
	}
	return 0, 0, errors.New("no answer to AUDIT_GET")
}
