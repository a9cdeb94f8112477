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

// After the run, corral reads on for the records still on its way from
// the kernel's audit thread, which sends them in order, at its own pace
// (a burst of a thousand takes it 100-200 ms here). It knows when it has
// them all by a marker: it joins the group with a second socket, which
// has the kernel queue an AUDIT_EVENT_LISTENER record (op=connect, its
// pid) behind every record the run caused; once that record comes, no
// record of the run is on its way. markerWait bounds the wait.
const markerWait = 2 * time.Second

// status is what AUDIT_GET said.
type status struct {
	enabled, lost uint32
	err           error
}

// Reader reads the audit multicast group for one run.
type Reader struct {
	fd   int
	wake [2]int // a pipe: Finish wakes the reading goroutine
	c    *collector
	done chan struct{}
	once sync.Once
	// before is audit's status when reading started (asked for while the
	// sandbox launches: AUDIT_GET costs 40 µs and more): whether audit is
	// on, and its count of records it dropped with its backlog full: a
	// higher count at the end means records, perhaps the run's, never
	// reached corral.
	before chan status
	res    Result
}

// Result is what the records said of one run.
type Result struct {
	// Denials are the run's distinct denials (at most 1000); More counts
	// the rest; Lost says records may never have reached corral.
	Denials []Denial
	More    int
	Lost    bool
	// Err, wrapping ErrUnobservable, says why the run's denials could not
	// be read after all (audit turned out to be off).
	Err error
}

// Open joins the audit multicast group, or says why it cannot: abi is
// the host's Landlock ABI (audit records came with ABI 7). Whether audit
// is on is asked meanwhile and known by Finish, which says so: the
// Landlock log flags do nothing while it is off.
func Open(abi int) (*Reader, error) {
	if abi < 7 {
		return nil, fmt.Errorf("%w: Landlock ABI %d has no audit records (ABI 7, Linux 6.15, added them)", ErrUnobservable, abi)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("%w: the kernel has no audit (socket(NETLINK_AUDIT): %v)", ErrUnobservable, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groupReadLog}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: reading the kernel's audit records needs root (CAP_AUDIT_READ in the initial user namespace), which corral (uid %d) is not here (%v)", ErrUnobservable, os.Getuid(), err)
	}
	// Room for a burst (root may go past rmem_max); an overrun is ENOBUFS,
	// reported as lost records.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	r := &Reader{fd: fd, c: newCollector(os.Getpid()), done: make(chan struct{}), before: make(chan status, 1)}
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %v", ErrUnobservable, err)
	}
	go r.run()
	return r, nil
}

// Observable says why a run's Landlock denials could not be read here
// (nil: they can), as Open would, without reading (corral doctor).
func Observable(abi int) error {
	r, err := Open(abi)
	if err != nil {
		return err
	}
	return r.Finish().Err
}

// Attribute names the process corral started for the run (the stage
// that becomes or forks the sandbox's init), while it waits for its
// cgroup: denials of the Landlock domain it or one of its children
// creates are the run's. Its children are read now, while they live.
func (r *Reader) Attribute(pid int) { r.c.attribute(append(children(pid), pid)) }

// Finish stops reading once every record the run caused has come (the
// marker above) and returns what they said.
func (r *Reader) Finish() Result {
	r.once.Do(func() {
		before := <-r.before
		switch {
		case before.err != nil:
			r.res.Err = fmt.Errorf("%w: reading audit's status needs root (CAP_AUDIT_CONTROL in the initial user namespace), which corral (uid %d) is not here (%v)", ErrUnobservable, os.Getuid(), before.err)
		case before.enabled == 0:
			r.res.Err = fmt.Errorf("%w: audit is disabled on this host; `auditctl -e 1` (or audit=1 on the kernel command line) enables it, for every process", ErrUnobservable)
		default:
			r.c.expectMarker()
			if m, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT); err == nil {
				unix.Bind(m, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groupReadLog})
				defer unix.Close(m)
			}
		}
		unix.Write(r.wake[1], []byte{1})
		<-r.done
		unix.Close(r.fd)
		unix.Close(r.wake[0])
		unix.Close(r.wake[1])
		if r.res.Err != nil {
			return
		}
		if _, lost, err := auditStatus(); err != nil || lost != before.lost || !r.c.marked() {
			r.c.mu.Lock()
			r.c.lost = true
			r.c.mu.Unlock()
		}
		r.res.Denials, r.res.More, r.res.Lost = r.c.result()
	})
	return r.res
}

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

// run asks audit's status, then reads the records if it is on (the
// socket keeps them meanwhile); where it is off, no thread waits on a
// socket that stays empty.
func (r *Reader) run() {
	var st status
	st.enabled, st.lost, st.err = auditStatus()
	r.before <- st
	if st.err != nil || st.enabled == 0 {
		close(r.done)
		return
	}
	r.read()
}

// read takes records until Finish, then, if Finish expects the marker,
// until it comes or markerWait passes.
func (r *Reader) read() {
	defer close(r.done)
	buf := make([]byte, 1<<16)
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	var end time.Time // set once Finish asked
	for {
		timeout := -1
		if !end.IsZero() {
			left := time.Until(end)
			if r.c.marked() || !r.c.expecting() || left <= 0 {
				return
			}
			timeout = int(left.Milliseconds()) + 1
		}
		_, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if end.IsZero() && fds[1].Revents != 0 {
			end = time.Now().Add(markerWait)
			fds[1].Fd = -1 // poll ignores it from now on
		}
		if fds[0].Revents != 0 { // POLLERR too: recv clears an overrun (ENOBUFS)
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
