// Command proxy benchmarks corral's egress proxy (netns.Proxy) against plain
// loopback in one run: a bulk transfer through a CONNECT tunnel and
// directly, the latency a new tunnel adds before the first byte, and the
// memory 1,000 tunnels held open cost. The proxy, the clients and the
// servers (a sink and an echo server) all live in this process and listen
// on 127.0.0.1 only; nothing leaves the machine.
//
// It prints a Markdown table on stdout and progress on stderr.
//
//	go run ./bench/proxy [-bytes N] [-reps N] [-iters N] [-tunnels N]
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
)

func main() {
	var o options
	flag.Int64Var(&o.bytes, "bytes", 1<<30, "bytes per throughput transfer")
	flag.IntVar(&o.reps, "reps", 3, "throughput transfers per path")
	flag.IntVar(&o.buf, "buf", 1<<20, "client and sink read/write buffer in bytes")
	flag.IntVar(&o.iters, "iters", 2000, "new-connection latency samples per path")
	flag.IntVar(&o.tunnels, "tunnels", 1000, "tunnels held open at once")
	flag.Int64Var(&o.sentBudget, "sent-budget", 0, "a network.budget total sent cap in bytes for the proxy (0: none), to measure a metered tunnel")
	flag.Parse()
	if o.bytes <= 0 || o.reps <= 0 || o.buf <= 0 || o.iters <= 0 || o.tunnels <= 0 {
		fmt.Fprintln(os.Stderr, "proxy: -bytes, -reps, -buf, -iters and -tunnels must be positive")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(1)
	}
}

// options are the flags, and then what run set up: the servers' and the
// proxy's addresses, the echo server's open connections, and the fd limit.
type options struct {
	bytes, sentBudget             int64
	reps, buf, iters, tunnels     int
	sinkAddr, echoAddr, proxyAddr string
	echoActive                    *atomic.Int64
	limitNote                     string
}

func run(o options) error {
	// Per tunnel: the client's socket, the proxy's two sockets and the two
	// splice pipes its relay holds while waiting (four fds), the server's.
	note, err := raiseNoFile(uint64(8*o.tunnels + 256))
	if err != nil {
		return err
	}
	o.limitNote = note
	if o.sinkAddr, err = serve(func(c net.Conn) { sink(c, o.buf) }, nil); err != nil {
		return err
	}
	o.echoActive = new(atomic.Int64)
	if o.echoAddr, err = serve(echo, o.echoActive); err != nil {
		return err
	}
	p, addr, err := startProxy(max(4096, o.tunnels+64), o.sentBudget)
	if err != nil {
		return err
	}
	defer p.Close()
	o.proxyAddr = addr

	tp, err := throughput(o)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	lat, err := latency(o)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	mem, err := memory(o)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	report(os.Stdout, o, tp, lat, mem)
	return nil
}

// startProxy serves a netns.Proxy that grants loopback, with the audit log
// every real run has (JSON lines, here to io.Discard).
func startProxy(maxConns int, sentBudget int64) (*netns.Proxy, string, error) {
	e, err := policyengine.New(policyengine.Permissions{
		Network:  policyengine.NewEntries("bench", []string{"preset:loopback"}),
		Declared: []string{"bench"},
	}, policyengine.Options{WorkDir: "/"})
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	cfg := netns.Config{Engine: e, Audit: netns.NewAudit(io.Discard).Record, MaxConns: maxConns}
	if sentBudget > 0 {
		cfg.Budgets = []policyengine.Budget{{From: "bench", Total: policyengine.Cap{Sent: sentBudget}}}
	}
	p := netns.New(cfg)
	go p.Serve(ln)
	return p, ln.Addr().String(), nil
}

// serve runs h for every connection to a fresh 127.0.0.1 port, counting the
// connections in h in active when it is not nil.
func serve(h func(net.Conn), active *atomic.Int64) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for failed := 0; failed < 500; { // 5s of failures in a row
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				failed++
				time.Sleep(10 * time.Millisecond) // out of fds: wait for some
				continue
			}
			failed = 0
			if active != nil {
				active.Add(1)
			}
			go func() {
				defer c.Close()
				h(c)
				if active != nil {
					active.Add(-1)
				}
			}()
		}
	}()
	return ln.Addr().String(), nil
}

// sink reads to EOF, then answers with the byte count.
func sink(c net.Conn, size int) {
	buf := make([]byte, size)
	var n uint64
	for {
		m, err := c.Read(buf)
		n += uint64(m)
		if err != nil {
			break
		}
	}
	c.Write(binary.BigEndian.AppendUint64(nil, n))
}

// echo writes back what it reads.
func echo(c net.Conn) {
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// dial connects to target, directly when proxy is empty, else through a
// CONNECT tunnel; answered is when the proxy's 200 arrived.
func dial(proxy, target string) (c *net.TCPConn, answered time.Time, err error) {
	addr := target
	if proxy != "" {
		addr = proxy
	}
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, time.Time{}, err
	}
	c = nc.(*net.TCPConn)
	if proxy == "" {
		return c, time.Time{}, nil
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		c.Close()
		return nil, time.Time{}, err
	}
	// Nothing follows the answer until the client writes, so reading
	// exactly its length leaves no tunnel bytes behind.
	want := []byte("HTTP/1.1 200 Connection Established\r\n\r\n")
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		c.Close()
		return nil, time.Time{}, fmt.Errorf("CONNECT %s: answer %q: %v", target, got, err)
	}
	return c, time.Now(), nil
}

// roundTrip sends one byte and waits for the echo. ('@' begins no HTTP
// request line, so the tunnel relays it at once: netns/tunnel.go.)
func roundTrip(c net.Conn) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	b := []byte{'@'}
	if _, err := c.Write(b); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if b[0] != '@' {
		return errors.New("the echo answered a different byte")
	}
	return nil
}

// raiseNoFile lifts RLIMIT_NOFILE to at least want and says what it did.
func raiseNoFile(want uint64) (string, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "", &os.SyscallError{Syscall: "getrlimit", Err: err}
	}
	if l.Cur >= want {
		return fmt.Sprintf("RLIMIT_NOFILE %d", l.Cur), nil
	}
	l.Cur = want
	l.Max = max(l.Max, want) // needs CAP_SYS_RESOURCE when it grows
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "", fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", want, &os.SyscallError{Syscall: "setrlimit", Err: err})
	}
	return fmt.Sprintf("RLIMIT_NOFILE raised to %d", want), nil
}

// cpuTime is this process's user plus system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the nearest-rank q-quantile of xs.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// machine describes the run: date, cores, kernel, Go, and the load
// average, since other work on the machine skews every figure.
func machine() string {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	avg := strings.Fields(string(load))
	avg = avg[:min(3, len(avg))]
	return fmt.Sprintf("%s, %d cores (nproc), GOMAXPROCS %d, kernel %s, %s %s/%s, load average %s",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOMAXPROCS(0),
		strings.TrimSpace(string(rel)), runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.Join(avg, " "))
}

func sizeText(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// progress prints one line on stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "# "+format+"\n", args...)
}

// freeOS runs the collector and hands free pages back, so heap and RSS
// readings start from what is live.
func freeOS() {
	runtime.GC()
	debug.FreeOSMemory()
}

// stats are one path's throughput runs: MB/s and CPU seconds per GiB.
type stats struct{ mbps, cpu []float64 }

type throughputResult struct{ direct, tunnel stats }

// throughput sends o.bytes to the sink o.reps times on each path,
// alternating which goes first, after a short warm-up of each.
func throughput(o options) (throughputResult, error) {
	var r throughputResult
	buf := make([]byte, o.buf)
	for _, proxy := range []string{"", o.proxyAddr} {
		if _, _, err := transfer(proxy, o.sinkAddr, buf, min(o.bytes, 64<<20)); err != nil {
			return r, err
		}
	}
	type path struct {
		name, proxy string
		s           *stats
	}
	paths := []path{{"direct", "", &r.direct}, {"tunnel", o.proxyAddr, &r.tunnel}}
	for i := range o.reps {
		for j := range paths {
			p := paths[(i+j)%2]
			d, cpu, err := transfer(p.proxy, o.sinkAddr, buf, o.bytes)
			if err != nil {
				return r, fmt.Errorf("%s: %w", p.name, err)
			}
			p.s.mbps = append(p.s.mbps, float64(o.bytes)/d.Seconds()/1e6)
			p.s.cpu = append(p.s.cpu, cpu.Seconds()/(float64(o.bytes)/(1<<30)))
			progress("throughput %d/%d %s: %.0f MB/s", i+1, o.reps, p.name, p.s.mbps[len(p.s.mbps)-1])
		}
	}
	return r, nil
}

// transfer sends n bytes to the sink, half-closes and waits for its count.
// It returns the time from dialling to the count and the CPU time spent.
func transfer(proxy, sinkAddr string, buf []byte, n int64) (time.Duration, time.Duration, error) {
	freeOS()
	t0, c0 := time.Now(), cpuTime()
	c, _, err := dial(proxy, sinkAddr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	for left := n; left > 0; {
		m, err := c.Write(buf[:min(left, int64(len(buf)))])
		left -= int64(m)
		if err != nil {
			return 0, 0, err
		}
	}
	if err := c.CloseWrite(); err != nil {
		return 0, 0, err
	}
	var got [8]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return 0, 0, fmt.Errorf("reading the sink's count: %w", err)
	}
	if m := binary.BigEndian.Uint64(got[:]); m != uint64(n) {
		return 0, 0, fmt.Errorf("the sink got %d bytes of %d", m, n)
	}
	return time.Since(t0), cpuTime() - c0, nil
}

// latencyResult holds microseconds per sample: connect to the first echoed
// byte on each path, and connect to the proxy's 200.
type latencyResult struct{ direct, tunnel, answered []float64 }

// latency times o.iters new connections on each path, alternating, after
// 100 unrecorded ones of each.
func latency(o options) (latencyResult, error) {
	var r latencyResult
	const warm = 100
	for i := range warm + o.iters {
		for j := range 2 {
			proxy := ""
			if (i+j)%2 == 1 {
				proxy = o.proxyAddr
			}
			total, answered, err := firstByte(proxy, o.echoAddr)
			if err != nil {
				return r, err
			}
			if i < warm {
				continue
			}
			if proxy == "" {
				r.direct = append(r.direct, us(total))
			} else {
				r.tunnel = append(r.tunnel, us(total))
				r.answered = append(r.answered, us(answered))
			}
		}
	}
	progress("latency: %d samples per path", o.iters)
	return r, nil
}

// firstByte opens a connection, sends one byte and waits for its echo.
func firstByte(proxy, target string) (total, answered time.Duration, err error) {
	t0 := time.Now()
	c, at, err := dial(proxy, target)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		return 0, 0, err
	}
	total = time.Since(t0)
	if !at.IsZero() {
		answered = at.Sub(t0)
	}
	return total, answered, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// report prints the results as one Markdown table with notes.
func report(w io.Writer, o options, tp throughputResult, lat latencyResult, mem memResult) {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	row := func(cells ...string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }
	dm, tm := median(tp.direct.mbps), median(tp.tunnel.mbps)
	ratio := tm / dm
	goal := ""
	if ratio >= 0.95 {
		goal = ", goal ≥ 95% met"
	}
	spread := func(xs []float64) string { return fmt.Sprintf("%.0f–%.0f", slices.Min(xs), slices.Max(xs)) }
	dc, tc := median(tp.direct.cpu), median(tp.tunnel.cpu)
	dl, tl := median(lat.direct), median(lat.tunnel)
	d90, t90 := quantile(lat.direct, 0.9), quantile(lat.tunnel, 0.9)
	n := float64(o.tunnels)
	kib := func(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/n/1024) }
	plus := func(b int64) string { return fmt.Sprintf("%+.1f KiB", float64(b)/n/1024) }

	fmt.Fprintf(w, "\n## netns.Proxy benchmark\n\n%s; %s\n\n", machine(), o.limitNote)
	row("measure", "direct", "through the proxy", "proxy's cost", "target")
	row("---", "---:", "---:", "---:", "---")
	row(fmt.Sprintf("%s client → sink, MB/s, median of %d", sizeText(o.bytes), o.reps),
		fmt.Sprintf("%.0f", dm), fmt.Sprintf("%.0f", tm), fmt.Sprintf("%.0f%% of direct", 100*ratio),
		fmt.Sprintf("≥ 80%%: %s%s", verdict(ratio >= 0.8), goal))
	row("same, slowest–fastest run, MB/s", spread(tp.direct.mbps), spread(tp.tunnel.mbps), "", "")
	row("same, CPU time of the whole process per GiB", fmt.Sprintf("%.2f s", dc), fmt.Sprintf("%.2f s", tc),
		fmt.Sprintf("%+.2f s", tc-dc), "")
	row(fmt.Sprintf("new connection → first echoed byte, µs, median of %d", o.iters),
		fmt.Sprintf("%.0f", dl), fmt.Sprintf("%.0f", tl), fmt.Sprintf("%+.0f µs", tl-dl),
		fmt.Sprintf("< 1 ms added: %s", verdict(tl-dl < 1000)))
	row("same, p90, µs", fmt.Sprintf("%.0f", d90), fmt.Sprintf("%.0f", t90), fmt.Sprintf("%+.0f µs", t90-d90), "")
	row("of which CONNECT → 200, µs, median", "", fmt.Sprintf("%.0f", median(lat.answered)), "", "")
	row(fmt.Sprintf("%d held open: Go heap + stacks per connection", o.tunnels),
		kib(mem.direct.heap+mem.direct.stacks), kib(mem.tunnel.heap+mem.tunnel.stacks),
		plus(mem.tunnel.heap+mem.tunnel.stacks-mem.direct.heap-mem.direct.stacks)+" per tunnel", "reported")
	row("of which goroutine stacks", kib(mem.direct.stacks), kib(mem.tunnel.stacks), plus(mem.tunnel.stacks-mem.direct.stacks), "")
	row("same, VmRSS per connection", kib(mem.direct.rss), kib(mem.tunnel.rss), plus(mem.tunnel.rss-mem.direct.rss)+" per tunnel", "reported")
	row("same, kernel slab per connection (whole machine)", kib(mem.direct.slab), kib(mem.tunnel.slab), plus(mem.tunnel.slab-mem.direct.slab)+" per tunnel", "")
	count := func(what string, d, t int64) {
		row("same, "+what+" per connection", fmt.Sprintf("%.1f", float64(d)/n), fmt.Sprintf("%.1f", float64(t)/n), fmt.Sprintf("%+.1f", float64(t-d)/n), "")
	}
	count("goroutines", mem.direct.goroutines, mem.tunnel.goroutines)
	count("open fds", mem.direct.fds, mem.tunnel.fds)
	fmt.Fprintf(w, `
The proxy, the clients and both servers share this process and its %d cores: a
tunnelled transfer has three busy parties (client, proxy relay, sink) where a
direct one has two, so on few cores the throughput ratio mostly measures the
CPU the second loopback TCP connection costs (the CPU row). Direct figures are
the client socket plus the echo server's side; the proxy's cost is the
difference: per tunnel two sockets, two goroutines and, while the relay waits
in splice, two 1 MiB pipes that the Go runtime holds (four fds, kernel slab).
Go heap and VmRSS are measured after a collection and debug.FreeOSMemory, in
the steady state after one unrecorded round of tunnels, so goroutine
descriptors the runtime reuses (a few hundred bytes each) are not counted;
kernel memory is not in VmRSS, and the slab row is machine-wide, so other work
on the machine blurs it. Client and sink buffers: %d bytes.
`, runtime.NumCPU(), o.buf)
}
