package netns

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// raiseFDLimit makes room for n more descriptors.
func raiseFDLimit(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	old := lim
	lim.Cur = min(max(n, lim.Cur), lim.Max)
	if lim.Cur < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d this test needs", lim.Max, n)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// countNonPipeFDs counts descriptors other than pipes. splice(2) takes its
// pipes from a pool that only garbage collection empties, so pipes are
// counted after a collection (see TestNoLeaks).
func countNonPipeFDs(t testing.TB) int {
	return countFDs(t) - fdKinds()["pipe"]
}

// settle waits until goroutines and descriptors other than pipes are back
// near base.
func settle(t *testing.T, what string, baseG, baseFD int) {
	t.Helper()
	const slack = 8
	var g, fd int
	ok := eventually(10*time.Second, func() bool {
		g, fd = runtime.NumGoroutine(), countNonPipeFDs(t)
		return g <= baseG+slack && fd <= baseFD+slack
	})
	if !ok {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("after %s: %d goroutines (baseline %d), %d fds (baseline %d: %v)\n%s", what, g, baseG, fd, baseFD, fdKinds(), buf)
	}
}

// fdKinds counts open descriptors by kind: socket, pipe, anon_inode, file.
func fdKinds() map[string]int {
	kinds := map[string]int{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		k, _, _ := strings.Cut(l, ":")
		if strings.HasPrefix(k, "/") {
			k = "file"
		}
		kinds[k]++
	}
	return kinds
}

// parallel runs f(i) for i in [0,n) on 64 workers.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func TestNoLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of connections")
	}
	const n = 1000
	raiseFDLimit(t, 6*n)
	// No garbage collection while tunnels come and go: finalizers would
	// close leaked sockets and hide the leak.
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	origin := startServer(t, "127.0.0.1:0", echo)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Engine: testEngine(t, "preset:loopback:"+strconv.Itoa(origin.port))})
	t.Cleanup(func() { p.Close() }) // after a failure; Close may run twice
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	addr := ln.Addr().String()
	var clients []net.Conn
	t.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	})

	// One tunnel first, so whatever the runtime starts lazily is running.
	warm, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(warm, connectHead(origin.addr)+"x")
	if r, err := readResponse(bufio.NewReader(warm)); err != nil || r.status != 200 {
		t.Fatalf("warm-up tunnel: %v %v", r, err)
	}
	warm.Close()
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	baseG, baseFD, basePipes := runtime.NumGoroutine(), countNonPipeFDs(t), fdKinds()["pipe"]

	for round, abrupt := range []bool{true, false} {
		deadline := time.Now().Add(30 * time.Second)
		conns := make([]net.Conn, n)
		clients = conns
		errs := make(chan error, n)
		parallel(n, func(i int) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			tc := c.(*net.TCPConn)
			conns[i] = tc
			tc.SetDeadline(deadline)
			msg := "hello " + strconv.Itoa(i) + "\n" // a line: see roundTripEcho
			io.WriteString(tc, connectHead(origin.addr)+msg)
			br := bufio.NewReader(tc)
			r, err := readResponse(br)
			if err != nil || r.status != 200 {
				errs <- errors.Join(err, errors.New("no 200"))
				return
			}
			b := make([]byte, len(msg))
			if _, err := io.ReadFull(br, b); err != nil || string(b) != msg {
				errs <- errors.Join(err, errors.New("echo mismatch"))
			}
		})
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: opening tunnels: %v", round, err)
		}
		// Each tunnel holds the client, both proxy ends and the origin end.
		if fd := countNonPipeFDs(t); fd < baseFD+3*n {
			t.Fatalf("round %d: %d fds with %d tunnels open, baseline %d: not all were open at once", round, fd, n, baseFD)
		}
		for _, c := range conns {
			if abrupt {
				c.(*net.TCPConn).SetLinger(0) // close with a reset
			}
			c.Close()
		}
		settle(t, "closing "+strconv.Itoa(n)+" tunnels", baseG, baseFD)
	}

	// Clients that vanish in the middle of their head.
	conns := make([]net.Conn, n)
	clients = conns
	parallel(n, func(i int) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		conns[i] = c
		io.WriteString(c, "CONNECT "+origin.addr)
	})
	if !eventually(10*time.Second, func() bool { return runtime.NumGoroutine() >= baseG+n }) {
		t.Errorf("only %d goroutines with %d heads pending (baseline %d)", runtime.NumGoroutine(), n, baseG)
	}
	for i, c := range conns {
		if c == nil {
			continue
		}
		if i%2 == 0 {
			c.(*net.TCPConn).SetLinger(0)
		}
		c.Close()
	}
	settle(t, "clients vanishing mid-head", baseG, baseFD)
	if n := openConns(p); n != 0 {
		t.Errorf("the proxy still tracks %d connections", n)
	}
	// With every socket accounted for, a collection frees the splice pipes.
	debug.SetGCPercent(gcPercent)
	// Generous: on a loaded machine the finalizers that close the pipes run late.
	if !eventually(30*time.Second, func() bool { runtime.GC(); return fdKinds()["pipe"] <= basePipes+8 }) {
		t.Errorf("%d pipes open after garbage collection, %d before the test", fdKinds()["pipe"], basePipes)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Serve returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if err := p.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close returned %v, want ErrClosed", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after Close")
	}
}

// openConns is how many connections, client and upstream, p tracks.
func openConns(p *Proxy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// A client that resets its tunnel ends the upstream connection too, even
// when the origin keeps quiet and never closes.
func TestResetEndsTunnel(t *testing.T) {
	release := make(chan struct{})
	upstreamEnded := make(chan struct{}, 1)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		io.Copy(io.Discard, c)
		upstreamEnded <- struct{}{}
		<-release
	})
	t.Cleanup(func() { close(release) })
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback")})
	_, c := tunnel(t, p.addr, origin.addr)
	if n := openConns(p.Proxy); n != 2 {
		t.Fatalf("the proxy tracks %d connections for one tunnel, want 2", n)
	}
	c.SetLinger(0)
	c.Close()
	select {
	case <-upstreamEnded:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream connection outlived the client's reset")
	}
	if !eventually(3*time.Second, func() bool { return openConns(p.Proxy) == 0 }) {
		t.Errorf("the proxy still tracks %d connections after the client reset", openConns(p.Proxy))
	}
}

// Close ends open tunnels and waits for their handlers.
func TestCloseEndsTunnels(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Engine: testEngine(t, "preset:loopback")})
	t.Cleanup(func() { p.Close() })
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	br, c := tunnel(t, ln.Addr().String(), origin.addr)
	pending := dial(t, ln.Addr().String())
	io.WriteString(pending, "CONNECT ") // a head that never ends

	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	readEnd(t, br, c)
	readEnd(t, pending, pending)
	if n := origin.accepts.Load(); n != 1 {
		t.Errorf("origin accepted %d connections, want 1", n)
	}
}

// flakyListener fails its first Accepts the way a process out of
// descriptors does.
type flakyListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// Serve rides out failing Accepts, serves several listeners, and Close
// ends every one of them.
func TestServeListeners(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	p := New(Config{Engine: testEngine(t, "preset:loopback")})
	t.Cleanup(func() { p.Close() })
	var lns []net.Listener
	served := make(chan error, 2)
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fl := &flakyListener{Listener: ln}
		fl.failures.Store(3)
		lns = append(lns, fl)
		go func() { served <- p.Serve(fl) }()
	}
	for _, ln := range lns {
		br, c := tunnel(t, ln.Addr().String(), origin.addr)
		roundTripEcho(t, br, c, "through "+ln.Addr().String())
	}
	p.Close()
	for range lns {
		select {
		case err := <-served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve returned %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after Close")
		}
	}
}

// Close does not wait out a name lookup or a dial in progress.
func TestCloseDuringLookup(t *testing.T) {
	blocked := make(chan struct{}, 1)
	p := New(Config{Engine: testEngine(t, "api.test:443"), Resolver: blockingResolver{blocked}, DialTimeout: 5 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	c := dial(t, ln.Addr().String())
	io.WriteString(c, connectHead("api.test:443"))
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the resolver was never asked")
	}
	start := time.Now()
	p.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v with a lookup in progress", took)
	}
}

// blockingResolver answers when its context ends, after saying it was
// asked.
type blockingResolver struct{ asked chan struct{} }

func (r blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	r.asked <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}
