package usernotif

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests re-execute the test binary as a child that installs a seccomp
// filter notifying connect, the chmods (and getpriority, as a syscall
// that is neither), sends the listener fd back over fd 3, runs a scenario
// and prints its results as JSON.

const childEnv = "USERNOTIF_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	os.Exit(m.Run())
}

// step is one syscall the child makes.
type step struct {
	Name   string
	Op     string // "connect" (default), "getpriority" or a chmod (see chmodStep)
	Domain int    // of the socket made for connect
	Type   int
	Addr   []byte // nil passes a NULL pointer
	Len    uint64 // connect's addrlen, raw
	UseFD  bool   // pass FD instead of a new socket
	FD     uint64
	Chmod  *chmodStep
	Create *createStep
}

type stepResult struct {
	Name     string
	Errno    int
	Read     string
	Nonblock bool
	Cloexec  bool
	PeerPort int
}

// race is the TOCTOU scenario: connects from one thread while another
// flips the first word (family and port) of the sockaddr between Good
// and Bad.
type race struct {
	Good, Bad []byte
	Attempts  int
}

type raceResult struct {
	Proxy, Forbidden, Other int
	Errnos                  map[int]int
}

type childSpec struct {
	// Create restricts the child with Landlock to make no name at all
	// and notifies the calls that make one (create_linux_test.go).
	Create     bool
	CreateRace *createRace
	CreateMany *createMany
	Steps      []step
	Race       *race
	ChmodRace  *chmodRace
}

type childOutput struct {
	CreateRace map[int]int // errnos of the create race
	CreateMany int64       // ns the files took (-1: failed)
	Steps      []stepResult
	Race       *raceResult
	Chmod      map[int]int // errnos of the chmod race
}

func childMain(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if spec.Create {
		runtime.LockOSThread()
		if err := noNames(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	}
	if err := installAndSend(spec.Create); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	var out childOutput
	for _, st := range spec.Steps {
		out.Steps = append(out.Steps, runStep(st))
	}
	if spec.Race != nil {
		r := runRace(*spec.Race)
		out.Race = &r
	}
	if spec.ChmodRace != nil {
		out.Chmod = runChmodRace(*spec.ChmodRace)
	}
	if spec.CreateRace != nil {
		out.CreateRace = runCreateRace(*spec.CreateRace)
	}
	if spec.CreateMany != nil {
		out.CreateMany = runCreateMany(*spec.CreateMany)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 2
	}
	return 0
}

// installAndSend installs the filter on every thread and sends its
// listener to the parent over fd 3.
func installAndSend(create bool) error {
	arch, _ := nativeArch()
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	notified := []uint32{unix.SYS_CONNECT, unix.SYS_GETPRIORITY, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2}
	if nr := int64(sysChmod); nr >= 0 { // a variable: -1 is no uint32 constant
		notified = append(notified, uint32(nr))
	}
	if create {
		notified = append(notified, createSyscalls()...)
	}
	prog := []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: jeq, K: arch, Jt: 1},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ld, K: 0}, // nr
	}
	for i, nr := range notified {
		// Jump past the rest and the ALLOW to the USER_NOTIF.
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(len(notified) - i)})
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW}, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_USER_NOTIF})
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	// TSYNC puts every Go thread under the filter; TSYNC_ESRCH lets it
	// go with NEW_LISTENER (the return value is then the listener).
	flags := unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	defer unix.Close(int(fd))
	return unix.Sendmsg(3, []byte{0}, unix.UnixRights(int(fd)), nil, 0)
}

func runStep(st step) stepResult {
	r := stepResult{Name: st.Name}
	if st.Chmod != nil {
		r.Errno = runChmod(st.Op, *st.Chmod)
		return r
	}
	if st.Create != nil {
		r.Errno = runCreate(*st.Create)
		return r
	}
	if st.Op == "getpriority" {
		_, _, e := unix.Syscall(unix.SYS_GETPRIORITY, unix.PRIO_PROCESS, 0, 0)
		r.Errno = int(e)
		return r
	}
	fd := st.FD
	if !st.UseFD {
		s, err := unix.Socket(st.Domain, st.Type, 0)
		if err != nil {
			r.Errno = -1
			return r
		}
		defer unix.Close(s)
		fd = uint64(s)
	}
	r.Errno = int(rawConnect(fd, st.Addr, st.Len))
	if r.Errno == 0 || r.Errno == int(unix.EINPROGRESS) {
		r.Read = readGreeting(int(fd))
		fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		r.Nonblock = fl&unix.O_NONBLOCK != 0
		fdfl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		r.Cloexec = fdfl&unix.FD_CLOEXEC != 0
		if sa, err := unix.Getpeername(int(fd)); err == nil {
			r.PeerPort = peerPort(sa)
		}
	}
	return r
}

// rawConnect is connect(2) with every argument as given.
func rawConnect(fd uint64, addr []byte, addrlen uint64) unix.Errno {
	var ptr unsafe.Pointer
	buf := make([]byte, 256) // room for whatever addrlen the supervisor reads
	if addr != nil {
		copy(buf, addr)
		ptr = unsafe.Pointer(&buf[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(ptr), uintptr(addrlen))
	runtime.KeepAlive(buf)
	return e
}

func peerPort(sa unix.Sockaddr) int {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return sa.Port
	case *unix.SockaddrInet6:
		return sa.Port
	}
	return -1
}

// readGreeting reads one line, waiting in poll so it works on blocking
// and non-blocking sockets alike.
func readGreeting(fd int) string {
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(got, []byte("\n")) && time.Now().Before(deadline) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, 1000); err != nil && err != unix.EINTR {
			break
		}
		if pfd[0].Revents == 0 {
			continue
		}
		b := make([]byte, 64)
		n, err := unix.Read(fd, b)
		if n <= 0 && err != unix.EAGAIN && err != unix.EINTR {
			break
		}
		if n > 0 {
			got = append(got, b[:n]...)
		}
	}
	return string(got)
}

func runRace(r race) raceResult {
	res := raceResult{Errnos: map[int]int{}}
	// Word-aligned so each flip is one 32-bit store the kernel sees whole.
	buf := new([64]uint32)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), 256), r.Good)
	good := binary.NativeEndian.Uint32(r.Good)
	bad := binary.NativeEndian.Uint32(r.Bad)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		runtime.LockOSThread()
		for !stop.Load() {
			atomic.StoreUint32(&buf[0], bad)
			spin(&stop, 50)
			atomic.StoreUint32(&buf[0], good)
			spin(&stop, 50)
		}
	})
	for range r.Attempts {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			res.Errnos[-1]++
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(s), uintptr(unsafe.Pointer(buf)), uintptr(len(r.Good)))
		if e != 0 {
			res.Errnos[int(e)]++
		} else {
			switch readGreeting(s) {
			case "proxy\n":
				res.Proxy++
			case "forbidden\n":
				res.Forbidden++
			default:
				res.Other++
			}
		}
		unix.Close(s)
	}
	stop.Store(true)
	wg.Wait()
	return res
}

func spin(stop *atomic.Bool, n int) {
	for i := 0; i < n && !stop.Load(); i++ {
	}
}

// --- parent side ---

// harness holds the listeners a child connects to: the proxy, a
// forbidden TCP listener and a unix socket, each counting what it accepts.
type harness struct {
	proxy, forbidden netip.AddrPort
	unixPath         string
	proxyAccepts     atomic.Int64
	forbiddenAccepts atomic.Int64
	unixAccepts      atomic.Int64
	mu               sync.Mutex
	logs             []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{}
	h.proxy = serveTCP(t, "proxy\n", &h.proxyAccepts)
	h.forbidden = serveTCP(t, "forbidden\n", &h.forbiddenAccepts)
	h.unixPath = filepath.Join(t.TempDir(), "s.sock")
	ul, err := net.Listen("unix", h.unixPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go acceptLoop(ul, "unix\n", &h.unixAccepts)
	return h
}

func serveTCP(t *testing.T, greeting string, n *atomic.Int64) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptLoop(l, greeting, n)
	return l.Addr().(*net.TCPAddr).AddrPort()
}

func acceptLoop(l net.Listener, greeting string, n *atomic.Int64) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		n.Add(1)
		c.Write([]byte(greeting))
		c.Close()
	}
}

// dial is what corral passes to Start: a plain connection to the proxy.
func (h *harness) dial(int) (*os.File, error) {
	c, err := net.Dial("tcp", h.proxy.String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.(*net.TCPConn).File()
}

func (h *harness) log(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, s)
}

func (h *harness) logLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

// child is a running child and the listener it sent.
type child struct {
	cmd      *exec.Cmd
	listener *os.File
	stdout   bytes.Buffer
	stderr   bytes.Buffer
}

func startChild(t testing.TB, spec childSpec) *child {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	defer ours.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c := &child{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^$")}
	// The race runtime sleeps a second at exit unless told not to. Go's
	// preemption signal (SIGURG) interrupts a notified call, which the
	// kernel then restarts: a create the supervisor already made is
	// made again (renameat2 then fails with ENOENT; seen under
	// emulation). The child asks for no such signal; what a command's
	// own signals do to a supervised create is the supervisor's open
	// problem (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, Linux 5.19).
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(js), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0", "GODEBUG=asyncpreemptoff=1")
	c.cmd.ExtraFiles = []*os.File{theirs}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	theirs.Close()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		cancel()
	})
	c.listener = recvListener(t, ours, c)
	return c
}

func recvListener(t testing.TB, sock *os.File, c *child) *os.File {
	t.Helper()
	conn, err := net.FileConn(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	uc.SetReadDeadline(time.Now().Add(30 * time.Second))
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(make([]byte, 1), oob)
	if err != nil {
		t.Fatalf("no listener from the child: %v; stderr: %s", err, c.stderr.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("unix rights: %v", err)
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-listener")
}

// wait waits for the child to exit and decodes what it printed.
func (c *child) wait(t testing.TB) childOutput {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr: %s", err, c.stderr.String())
	}
	var out childOutput
	if err := json.Unmarshal(c.stdout.Bytes(), &out); err != nil {
		t.Fatalf("child output %q: %v", c.stdout.String(), err)
	}
	return out
}

// run runs spec in a child under a Supervisor for h.
func (h *harness) run(t *testing.T, spec childSpec) (childOutput, *Supervisor) {
	t.Helper()
	c := startChild(t, spec)
	s, err := Start(c.listener, h.proxy, h.dial, h.log)
	if err != nil {
		t.Fatal(err)
	}
	out := c.wait(t)
	s.Stop()
	return out, s
}

func sockaddr4(ap netip.AddrPort) []byte {
	b := make([]byte, sizeofSockaddrIn)
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As4()
	copy(b[4:], a[:])
	return b
}

func sockaddr6(ap netip.AddrPort) []byte {
	b := make([]byte, 28)
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As16()
	copy(b[8:], a[:])
	return b
}

func sockaddrUnix(path string) []byte {
	b := make([]byte, 2, 2+len(path)+1)
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	b = append(b, path...)
	return append(b, 0)
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func withPort(addr string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), port)
}

func tcp4(name string, flags int, sa []byte) step {
	return step{Name: name, Domain: unix.AF_INET, Type: unix.SOCK_STREAM | flags, Addr: sa, Len: uint64(len(sa))}
}

func tcp6(name string, sa []byte) step {
	return step{Name: name, Domain: unix.AF_INET6, Type: unix.SOCK_STREAM, Addr: sa, Len: uint64(len(sa))}
}

func withLen(st step, n uint64) step { st.Len = n; return st }

func skipUnlessRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (ptrace access and seccomp listeners in a child)")
	}
}

// requireLandlock skips (or, with CORRAL_REQUIRE_KERNEL=1, fails) where
// the kernel has no Landlock: the create tests' child takes its make
// rights away with it (Linux 5.10, Debian 11, has none).
func requireLandlock(t *testing.T) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno == 0 && int(abi) >= 1 {
		return
	}
	if os.Getenv("CORRAL_REQUIRE_KERNEL") == "1" {
		t.Fatal("kernel feature required (CORRAL_REQUIRE_KERNEL=1): Landlock is not available")
	}
	t.Skip("Landlock is not available")
}

// TestConnects runs every single-connect scenario in one child and
// checks each answer, the listeners that must stay silent, Stats and the
// log.
func TestConnects(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	okSteps, refused := allowedSteps(h), refusedSteps(h)
	spec := childSpec{Steps: okSteps}
	for _, r := range refused {
		spec.Steps = append(spec.Steps, r.st)
	}
	out, s := h.run(t, spec)
	if len(out.Steps) != len(spec.Steps) {
		t.Fatalf("child ran %d steps, want %d", len(out.Steps), len(spec.Steps))
	}
	for i, r := range out.Steps[:len(okSteps)] {
		checkProxied(t, r, okSteps[i], int(h.proxy.Port()))
	}
	for i, r := range out.Steps[len(okSteps):] {
		if want := refused[i].errno; r.Errno != int(want) {
			t.Errorf("%s: errno %v, want %v", r.Name, unix.Errno(r.Errno), want)
		}
	}
	if n := h.forbiddenAccepts.Load() + h.unixAccepts.Load(); n != 0 {
		t.Errorf("forbidden listeners accepted %d connections", n)
	}
	// A connect the kernel restarts (the child's Go runtime preempts its
	// threads with SIGURG, often under emulation) is a new notification:
	// the supervisor's first connection to the proxy is dropped with the
	// old one, so the proxy may see more connections than steps, never
	// fewer. A refused step that got through would fail above.
	if got := h.proxyAccepts.Load(); got < int64(len(okSteps)) {
		t.Errorf("proxy accepted %d, want %d", got, len(okSteps))
	} else if got > int64(len(okSteps)) {
		t.Logf("proxy accepted %d for %d connects: restarted connects", got, len(okSteps))
	}
	if a, r := s.Stats(); a != len(okSteps) || r != len(refused) {
		t.Errorf("Stats = %d, %d; want %d, %d", a, r, len(okSteps), len(refused))
	}
	checkLog(t, h.logLines(), len(refused), withPort("127.0.0.2", h.proxy.Port()).String())
}

// allowedSteps are connects that must get the proxy connection.
func allowedSteps(h *harness) []step {
	mapped := sockaddr6(withPort("::ffff:127.0.0.1", h.proxy.Port()))
	return []step{
		tcp4("blocking", 0, sockaddr4(h.proxy)),
		tcp4("cloexec", unix.SOCK_CLOEXEC, sockaddr4(h.proxy)),
		tcp4("nonblocking", unix.SOCK_NONBLOCK, sockaddr4(h.proxy)),
		tcp6("v4-mapped", mapped),
		withLen(tcp6("v4-mapped-rfc2133-len", mapped), sizeofSockaddrIn6),
		withLen(tcp4("inet-long-addrlen", 0, sockaddr4(h.proxy)), maxSockaddr),
	}
}

type refusedStep struct {
	st    step
	errno unix.Errno
}

// refusedSteps are connects (and one other syscall) that must be refused,
// each with its errno.
func refusedSteps(h *harness) []refusedStep {
	P, Q := h.proxy.Port(), h.forbidden.Port()
	proxy4 := sockaddr4(h.proxy)
	garbage := sockaddr4(h.proxy)
	binary.NativeEndian.PutUint16(garbage, 0xdead)
	unspec := sockaddr4(h.proxy)
	binary.NativeEndian.PutUint16(unspec, unix.AF_UNSPEC)
	sun := sockaddrUnix(h.unixPath)
	return []refusedStep{
		{tcp4("127.0.0.2", 0, sockaddr4(withPort("127.0.0.2", P))), unix.EACCES},
		{tcp4("0.0.0.0", 0, sockaddr4(withPort("0.0.0.0", P))), unix.EACCES},
		{tcp4("other-port", 0, sockaddr4(h.forbidden)), unix.EACCES},
		{tcp6("::1", sockaddr6(withPort("::1", P))), unix.EACCES},
		{tcp6("::", sockaddr6(withPort("::", P))), unix.EACCES},
		{tcp6("v4-compatible", sockaddr6(withPort("::127.0.0.1", P))), unix.EACCES},
		{tcp6("v4-mapped-other-port", sockaddr6(withPort("::ffff:127.0.0.1", Q))), unix.EACCES},
		{tcp6("v4-mapped-0.0.0.0", sockaddr6(withPort("::ffff:0.0.0.0", P))), unix.EACCES},
		{step{Name: "unix", Domain: unix.AF_UNIX, Type: unix.SOCK_STREAM, Addr: sun, Len: uint64(len(sun))}, unix.EPERM},
		{withLen(tcp4("addrlen-0", 0, proxy4), 0), unix.EPERM},
		{withLen(tcp4("addrlen-2", 0, proxy4), 2), unix.EPERM},
		{withLen(tcp4("addrlen-15", 0, proxy4), 15), unix.EPERM},
		{withLen(tcp6("inet6-addrlen-23", sockaddr6(withPort("::ffff:127.0.0.1", P))), 23), unix.EPERM},
		{withLen(tcp4("addrlen-129", 0, proxy4), 129), unix.EPERM},
		{withLen(tcp4("addrlen-negative", 0, proxy4), 0xffffffff), unix.EPERM},
		{withLen(tcp4("addrlen-high-bits", 0, proxy4), 1<<32|16), unix.EPERM},
		{tcp4("garbage-family", 0, garbage), unix.EPERM},
		{tcp4("AF_UNSPEC", 0, unspec), unix.EPERM},
		{step{Name: "null-sockaddr", Domain: unix.AF_INET, Type: unix.SOCK_STREAM, Len: 16}, unix.EPERM},
		{step{Name: "fd-negative", UseFD: true, FD: ^uint64(0), Addr: proxy4, Len: 16}, unix.EBADF},
		{step{Name: "fd-high-bits", UseFD: true, FD: 1<<32 | 3, Addr: proxy4, Len: 16}, unix.EBADF},
		{step{Name: "fd-not-open", UseFD: true, FD: 1000, Addr: proxy4, Len: 16}, unix.EBADF},
		{step{Name: "not-connect", Op: "getpriority"}, unix.EPERM},
	}
}

// checkProxied checks an allowed connect: it returned 0 (or
// EINPROGRESS), reads the proxy's greeting, and kept its fd flags.
func checkProxied(t *testing.T, r stepResult, st step, port int) {
	t.Helper()
	nonblock := st.Type&unix.SOCK_NONBLOCK != 0
	if r.Errno != 0 && !(nonblock && r.Errno == int(unix.EINPROGRESS)) {
		t.Errorf("%s: errno %v, want success", r.Name, unix.Errno(r.Errno))
	}
	if r.Read != "proxy\n" || r.PeerPort != port {
		t.Errorf("%s: read %q from port %d, want the proxy on %d", r.Name, r.Read, r.PeerPort, port)
	}
	if r.Nonblock != nonblock {
		t.Errorf("%s: O_NONBLOCK %v, want %v", r.Name, r.Nonblock, nonblock)
	}
	if want := st.Type&unix.SOCK_CLOEXEC != 0; r.Cloexec != want {
		t.Errorf("%s: FD_CLOEXEC %v, want %v", r.Name, r.Cloexec, want)
	}
	if nonblock {
		t.Logf("non-blocking connect returned %v", unix.Errno(r.Errno))
	}
}

func checkLog(t *testing.T, lines []string, want int, mention string) {
	t.Helper()
	if len(lines) != want {
		t.Errorf("%d log lines, want one per refusal (%d): %q", len(lines), want, lines)
	}
	if !strings.Contains(strings.Join(lines, "\n"), mention) {
		t.Errorf("log does not name %s: %q", mention, lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "\n") || strings.Contains(l, "s.sock") {
			t.Errorf("log line carries sandbox bytes: %q", l)
		}
	}
}

// TestTOCTOU rewrites the sockaddr between the proxy's port and a
// forbidden listener's port while connecting: since corral dials the
// proxy itself, every connect that succeeds must be to the proxy.
func TestTOCTOU(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	r := &race{Good: sockaddr4(h.proxy), Bad: sockaddr4(h.forbidden), Attempts: 300}
	out, _ := h.run(t, childSpec{Race: r})
	res := out.Race
	t.Logf("race: %d proxied, errnos %v", res.Proxy, res.Errnos)
	if res.Forbidden != 0 || res.Other != 0 || h.forbiddenAccepts.Load() != 0 {
		t.Errorf("%d connects reached the forbidden listener (it accepted %d), %d read something else",
			res.Forbidden, h.forbiddenAccepts.Load(), res.Other)
	}
	for e, n := range res.Errnos {
		if unix.Errno(e) != unix.EACCES {
			t.Errorf("%d connects failed with %v", n, unix.Errno(e))
		}
	}
	// Both sides must have been seen, or the flipping proved nothing.
	if res.Proxy == 0 || res.Errnos[int(unix.EACCES)] == 0 {
		t.Errorf("the flips were not observed: %d proxied, %d refused", res.Proxy, res.Errnos[int(unix.EACCES)])
	}
}

// TestStopWhileBlocked stops the supervisor while the child is blocked
// in connect and dial has not returned: Stop waits for that dial, then
// returns; later connects fail with ENOSYS since no one listens.
func TestStopWhileBlocked(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	st := tcp4("blocked", 0, sockaddr4(h.proxy))
	c := startChild(t, childSpec{Steps: []step{st, st}})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dial := func(int) (*os.File, error) {
		once.Do(func() { close(entered) })
		<-release
		return nil, errors.New("proxy down")
	}
	s, err := Start(c.listener, h.proxy, dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("dial never called")
	}
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while dial was still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop hangs")
	}
	s.Stop() // twice is fine
	out := c.wait(t)
	if e := unix.Errno(out.Steps[0].Errno); e != unix.ECONNREFUSED {
		t.Errorf("connect during Stop: %v, want ECONNREFUSED", e)
	}
	if e := unix.Errno(out.Steps[1].Errno); e != unix.ENOSYS {
		t.Errorf("connect after Stop: %v, want ENOSYS", e)
	}
}

// TestSandboxExit checks that serving ends by itself when the sandbox is
// gone (the listener hangs up) and Stop still returns.
func TestSandboxExit(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	c := startChild(t, childSpec{})
	s, err := Start(c.listener, h.proxy, h.dial, h.log)
	if err != nil {
		t.Fatal(err)
	}
	c.wait(t)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serving did not end when the sandbox exited")
	}
	s.Stop()
	if l := h.logLines(); len(l) != 0 {
		t.Errorf("log: %q", l)
	}
}

// TestUnreadableFailsClosed makes reading the target's memory fail, as
// it does under Yama ptrace_scope 2: the allowed address is refused.
func TestUnreadableFailsClosed(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	c := startChild(t, childSpec{Steps: []step{tcp4("unreadable", 0, sockaddr4(h.proxy))}})
	var dialed atomic.Bool
	dial := func(f int) (*os.File, error) { dialed.Store(true); return h.dial(f) }
	read := func(int, uint64, int) ([]byte, error) { return nil, unix.EPERM }
	s, err := start(c.listener, Config{Proxy: h.proxy, Dial: dial, Log: h.log}, read)
	if err != nil {
		t.Fatal(err)
	}
	out := c.wait(t)
	s.Stop()
	if e := unix.Errno(out.Steps[0].Errno); e != unix.EPERM || dialed.Load() {
		t.Errorf("unreadable sockaddr: %v (dialed %v), want EPERM without a dial", e, dialed.Load())
	}
}

func TestStartRejects(t *testing.T) {
	h := &harness{}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := Start(r, ap("127.0.0.1:1"), h.dial, nil); err == nil {
		t.Error("Start took a pipe for a listener")
	}
	if _, err := r.Write(nil); err == nil || !errors.Is(err, os.ErrClosed) {
		t.Errorf("the refused listener was not closed: %v", err)
	}
	if _, err := Start(nil, netip.AddrPort{}, h.dial, nil); err == nil {
		t.Error("Start took no allowed address")
	}
	for _, a := range []netip.AddrPort{ap("127.0.0.1:0"), ap("0.0.0.0:1"), ap("[fe80::1%eth0]:1")} {
		if err := checkConfig(Config{Proxy: a, Dial: h.dial}); err == nil {
			t.Errorf("allowed %v accepted", a)
		}
	}
	if err := checkConfig(Config{Proxy: ap("127.0.0.1:1")}); err == nil {
		t.Error("a proxy without a dial func accepted")
	}
	if err := checkConfig(Config{}); err != nil {
		t.Errorf("no proxy and nothing writable: %v", err)
	}
	for _, w := range []string{"", "ws", "/ws/", "/ws/../etc", "/ws//a"} {
		if err := checkConfig(Config{Writable: []string{w}}); err == nil {
			t.Errorf("writable %q accepted", w)
		}
	}
	if _, err := Start(nil, ap("127.0.0.1:1"), h.dial, nil); err == nil {
		t.Error("Start took no listener")
	}
}

// TestErrnosDocumented checks that the refusal errnos are the ones the
// package documentation promises.
func TestErrnosDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got, want unix.Errno
		doc       string
	}{
		{errnoAddress, unix.EACCES, "- EACCES: an AF_INET or AF_INET6 address other than the proxy's"},
		{errnoOther, unix.EPERM, "- EPERM: anything else"},
		{errnoFD, unix.EBADF, "- EBADF: an fd argument"},
		{errnoDial, unix.ECONNREFUSED, "- ECONNREFUSED: the proxy itself could not be dialed"},
		{errnoChmod, unix.EPERM, "- EPERM: a mode with setuid, setgid or sticky bits"},
	} {
		if c.got != c.want {
			t.Errorf("errno %v, documented as %v", c.got, c.want)
		}
		if !strings.Contains(string(doc), "//   "+c.doc) {
			t.Errorf("doc.go does not say %q", c.doc)
		}
	}
}

// TestLayout checks the structs against the kernel's sizes and the ioctl
// numbers against <linux/seccomp.h>.
func TestLayout(t *testing.T) {
	var sizes struct{ notif, resp, data uint16 }
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes)))
	if e != 0 {
		t.Skipf("SECCOMP_GET_NOTIF_SIZES: %v", e)
	}
	if int(sizes.notif) != int(unsafe.Sizeof(notif{})) || int(sizes.resp) != int(unsafe.Sizeof(notifResp{})) ||
		int(sizes.data) != int(unsafe.Sizeof(seccompData{})) {
		t.Errorf("kernel sizes %+v; ours %d %d %d", sizes, unsafe.Sizeof(notif{}), unsafe.Sizeof(notifResp{}), unsafe.Sizeof(seccompData{}))
	}
	if unsafe.Sizeof(notifAddfd{}) != 24 || unsafe.Sizeof(notif{}) != 80 {
		t.Error("struct sizes")
	}
	if runtime.GOARCH == "amd64" && (unix.SECCOMP_IOCTL_NOTIF_ADDFD != 0x40182103 || unix.SECCOMP_IOCTL_NOTIF_ID_VALID != 0x40082102 ||
		unix.SECCOMP_IOCTL_NOTIF_RECV != 0xc0502100 || unix.SECCOMP_IOCTL_NOTIF_SEND != 0xc0182101) {
		t.Error("ioctl numbers differ from <linux/seccomp.h>")
	}
}

func TestParseFlags(t *testing.T) {
	for in, want := range map[string]int64{
		"pos:\t0\nflags:\t02004002\nmnt_id:\t9\n": 02004002,
		"flags:\t0100002":                         0100002,
		"pos:\t0\n":                               -1,
		"flags:\t09\n":                            -1,
		"flags:\t077777777777\n":                  -1,
	} {
		got, err := parseFlags(in)
		if (err != nil) != (want < 0) || (err == nil && int64(got) != want) {
			t.Errorf("parseFlags(%q) = %o, %v; want %o", in, got, err, want)
		}
	}
}

// FuzzJudge checks that judge never panics and passes only the proxy's
// address, in its two byte forms.
func FuzzJudge(f *testing.F) {
	allowed := ap("127.0.0.1:8080")
	f.Add(sockaddr4(allowed))
	f.Add(sockaddr6(withPort("::ffff:127.0.0.1", 8080)))
	f.Add(sockaddr6(withPort("::1", 8080)))
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, sa []byte) {
		v := judge(sa, allowed)
		if v.errno != 0 {
			return
		}
		want := sockaddr4(allowed)
		if v.family == unix.AF_INET && bytes.Equal(sa[:8], want[:8]) {
			return
		}
		want = sockaddr6(withPort("::ffff:127.0.0.1", 8080))
		if v.family == unix.AF_INET6 && bytes.Equal(sa[:4], want[:4]) && bytes.Equal(sa[8:24], want[8:24]) {
			return
		}
		t.Errorf("judge passed %x", sa)
	})
}
