package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/stage"
	"corral.dev/corral/sandbox/usernotif"
)

// landlockRun is what a run in the landlock tier has beyond the plan: the
// TMPDIR made for it, the proxy's listener on the host's loopback, and the
// connect supervisor.
type landlockRun struct {
	tmp   string
	made  bool // tmp was made (makeTmp)
	ln    net.Listener
	own   *ownListener
	super *usernotif.Supervisor
	// refused are the supervisor's refusals (it caps them), said once
	// after the run.
	mu      sync.Mutex
	refused []string
}

// prepareLandlock names the run's TMPDIR (makeTmp makes it, once the
// caller has recorded it: Request.Launching) and, when the permissions
// allow network, makes the proxy's listener, and puts both in the spec.
func (e *execution) prepareLandlock(spec *Spec) (*landlockRun, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	// By its real path: the record of the run's cleanup names it, and
	// its removal follows no symlink on the way.
	base, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return nil, fmt.Errorf("the folder for the run's TMPDIR: %w", err)
	}
	r := &landlockRun{tmp: filepath.Join(base, fmt.Sprintf("corral-run-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))}
	spec.RunTmp = r.tmp
	if len(e.req.Perms.Network) == 0 {
		return r, nil
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		r.close(func(string) {})
		return nil, fmt.Errorf("listening for the proxy: %w", err)
	}
	r.ln = ln
	r.own = newOwnListener(ln)
	spec.HostProxy = ln.Addr().(*net.TCPAddr).AddrPort()
	return r, nil
}

// makeTmp makes the run's TMPDIR (0700), which must be new.
func (r *landlockRun) makeTmp() error {
	if err := os.Mkdir(r.tmp, 0o700); err != nil {
		return fmt.Errorf("making the run's TMPDIR: %w", err)
	}
	r.made = true
	return nil
}

// serve is the landlock tier's RunOptions.Serve: the init sent the
// seccomp listener of its connect filter. The supervisor connects each
// allowed socket to the proxy itself, and the proxy serves only those
// connections (another user on the host can reach the port, not the
// proxy).
func (r *landlockRun) serve(e *execution, files []*os.File) {
	if len(files) == 0 {
		return
	}
	for _, f := range files[1:] {
		f.Close()
	}
	cfg := usernotif.Config{Writable: append(append(slices.Clone(e.out.Plan.WriteRoots), e.out.Plan.CacheRoots...), r.tmp), Log: func(s string) {
		r.mu.Lock()
		r.refused = append(r.refused, s)
		r.mu.Unlock()
	}}
	if plan := e.out.Plan; len(plan.Notify) > 0 {
		cfg.Create = createPolicy(plan)
	}
	if r.own != nil {
		proxy := r.ln.Addr().(*net.TCPAddr).AddrPort()
		cfg.Proxy, cfg.Dial = proxy, func(int) (*os.File, error) { return r.own.dial(proxy) }
	}
	super, err := usernotif.StartConfig(files[0], cfg)
	if err != nil {
		e.warn(fmt.Sprintf("the seccomp supervisor did not start (every connect and mode change is refused): %v", err))
		return
	}
	r.super = super
	if r.own != nil && e.req.Serve != nil {
		e.req.Serve(Egress{Listeners: []net.Listener{r.own}})
	}
}

// createPolicy is what the supervisor needs to make names for a plan with
// fs.deny: the Landlock rules as they were before the make rights were
// taken out, and the same deny decision check gives.
func createPolicy(plan *Plan) *usernotif.CreatePolicy {
	c := &usernotif.CreatePolicy{Handled: plan.Landlock.HandledFS, Deny: func(p string) (string, bool) {
		d, ok := plan.deniedBy(p)
		return d.Glob, ok
	}}
	for _, r := range plan.CreateRules {
		c.Rules = append(c.Rules, usernotif.Rule{Path: r.Path, Access: r.Access})
	}
	return c
}

// superviseCreate has the namespaces tier's supervisor make the names
// (fs.deny) when the plan notifies the calls that make them. The
// command's root is its own (pivot_root'ed, in its mount namespace): the
// supervisor resolves its paths in /proc/PID/root.
func superviseCreate(cfg *usernotif.Config, plan *Plan) {
	if len(plan.Notify) > 0 {
		cfg.Create = createPolicy(plan)
		cfg.Create.OwnRoot = true
	}
}

// close stops the supervisor, says what it refused, closes the listener
// and removes the TMPDIR.
func (r *landlockRun) close(warn func(string)) {
	if r.super != nil {
		r.super.Stop()
	}
	if n := len(r.refused); n > 0 {
		warn(fmt.Sprintf("the seccomp supervisor refused %d connect(s), mode change(s) or name(s) fs.deny matches: %s", n, strings.Join(r.refused[:min(n, 3)], "; ")))
	}
	if r.ln != nil {
		r.ln.Close()
	}
	if r.made {
		RemoveRunTmp(r.tmp, warn)
	}
}

// ownListener accepts only the connections corral's supervisor made,
// by their local port, which corral learns once its connect returned. It
// never binds before connecting: a bound port stays taken for as long as
// the command holds the socket, and a command holding thousands would
// leave the host's other programs no ephemeral port (connect picks one
// per destination, so these connections take none from them).
type ownListener struct {
	net.Listener
	mu    sync.Mutex
	cond  *sync.Cond
	ours  map[int]bool // local ports of the supervisor's sockets
	start sync.Once
	ready chan net.Conn
	err   chan error
}

func newOwnListener(ln net.Listener) *ownListener {
	o := &ownListener{Listener: ln, ours: map[int]bool{}, ready: make(chan net.Conn), err: make(chan error, 1)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// ownWait bounds how long an accepted connection waits for the dial that
// made it to say its port.
const ownWait = 2 * time.Second

// Accept returns the next of corral's own connections. Each accepted
// connection waits for its claim on a goroutine of its own, so a stranger
// connecting delays no one.
func (o *ownListener) Accept() (net.Conn, error) {
	o.start.Do(func() { go o.acceptAll() })
	select {
	case c := <-o.ready:
		return c, nil
	case err := <-o.err:
		o.err <- err
		return nil, err
	}
}

func (o *ownListener) acceptAll() {
	for {
		c, err := o.Listener.Accept()
		if err != nil {
			o.err <- err
			return
		}
		go func() {
			// Exactly 127.0.0.1 and a port corral's dial reported:
			// another local user can connect too, from any of 127/8.
			if a, ok := c.RemoteAddr().(*net.TCPAddr); ok && a.IP.Equal(net.IPv4(127, 0, 0, 1)) && o.claim(a.Port) {
				select {
				case o.ready <- c:
					return
				case err := <-o.err:
					o.err <- err
				}
			}
			c.Close()
		}()
	}
}

// claim waits (at most ownWait) until the supervisor's dial reports port,
// and takes it.
func (o *ownListener) claim(port int) bool {
	deadline := time.Now().Add(ownWait)
	timer := time.AfterFunc(ownWait, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.ours[port] {
		if time.Now().After(deadline) {
			return false
		}
		o.cond.Wait()
	}
	delete(o.ours, port)
	return true
}

// dial connects a socket of corral's own to the proxy and reports its
// local port to Accept.
func (o *ownListener) dial(proxy netip.AddrPort) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "proxy-connection")
	tv := unix.NsecToTimeval(int64(5 * time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if err := usernotif.ConnectWait(fd, &unix.SockaddrInet4{Addr: proxy.Addr().As4(), Port: int(proxy.Port())}, 5*time.Second); err != nil {
		f.Close()
		return nil, err
	}
	zero := unix.Timeval{}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &zero)
	sa, err := unix.Getsockname(fd)
	in4, ok := sa.(*unix.SockaddrInet4)
	if err != nil || !ok {
		f.Close()
		return nil, errors.Join(err, errors.New("no local port"))
	}
	o.mu.Lock()
	o.ours[in4.Port] = true
	o.cond.Broadcast()
	o.mu.Unlock()
	return f, nil
}

// tier waits for the tier the init runs in. Where the host let the init
// make a user namespace but not map ids in it (Ubuntu's AppArmor
// restriction moves the process into a profile without capabilities),
// auto starts an init in the landlock tier instead; *launch becomes it.
func (e *execution) tier(launch **Launch) (TierInfo, error) {
	want := e.req.Spec.Tier
	t, err := (*launch).Tier()
	var se *StageError
	if err != nil && errors.As(err, &se) && se.Stage == "userns-refused" && (want == TierAuto || want == "") {
		old := *launch
		// Go catches the signals before the old launch gives its C
		// handlers up (Abort): in between, Go's default action would
		// end corral itself, and the run with a "killed by signal"
		// instead of the command's own end. The new launch owns them.
		sigs := NotifySignals()
		<-sigs.ready
		old.Abort()
		// A signal that ends a run went to the init just aborted: it
		// must reach the new one, or the command would run on.
		ended := old.EndSignal()
		if ended == 0 && old.signals != nil && old.signals.native {
			ended = stage.NativeFirst()
		}
		stdio := e.req.Stdio
		stdio.Signals = sigs
		l, serr := start(stdio, TierLandlock, false)
		if serr != nil {
			sigs.Stop()
			*launch = nil
			return TierInfo{}, serr
		}
		l.ownSigs = true
		if serr = l.Started(); serr != nil {
			*launch = nil
			return TierInfo{}, serr
		}
		*launch = l
		if ended != 0 {
			l.forward(syscall.Signal(ended))
		}
		t, err = l.Tier()
		t.Why = "the kernel made a user namespace but refused its id maps (" + se.Message + ")"
	}
	if err != nil {
		if se != nil {
			return TierInfo{}, runError(&Result{Stage: se}, nil)
		}
		return TierInfo{}, err
	}
	// The constructor reads --tier from argv before Go parses it: an
	// argument it misread (--skill --tier=landlock) must not choose a
	// tier the flags did not.
	forced := strings.HasPrefix(t.Why, "asked for")
	if want != TierAuto && want != "" && t.Name != want || (want == TierAuto || want == "") && forced {
		return TierInfo{}, fmt.Errorf("%w: asked for the %s tier, the sandbox's init runs in the %s tier", ErrProtection, want, t.Name)
	}
	return t, nil
}
