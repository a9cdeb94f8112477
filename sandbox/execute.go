package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox/cgroup"
	"corral.dev/corral/sandbox/fsaudit"
	"corral.dev/corral/sandbox/usernotif"
)

// The names of the files the init hands corral (receiveFiles), after the
// byte the init sends with each.
const (
	handedListener   = "proxy-listener" // L
	handedDNS        = "dns"            // D
	handedSupervisor = "supervisor"     // N
)

// Request is one run as the sandbox carries it out. The caller has
// checked the command and resolved what it may do: Perms are the skills'
// permissions already capped by any agent policy, Spec.Limits the limits
// (ResolveLimits, then the policy's caps and the caller's deadline).
type Request struct {
	Perms policyengine.Permissions
	Spec  Spec
	// CgroupParent places the run's cgroup ("": corral's own place).
	CgroupParent string
	// Stdio are the command's streams and the signals corral forwards;
	// Execute stops Stdio.Signals when it returns.
	Stdio Stdio
	// Serve gets what the egress proxy serves (its listeners inside the
	// sandbox's network namespace, and with transparent egress the
	// resolver's socket and the redirected connections' destinations)
	// when the plan has a proxy; it is called once, before the command
	// starts, and must return at once.
	Serve func(Egress)
	// Trace gets timing steps; Warn gets warnings meant for a person.
	// Either may be nil.
	Trace, Warn func(string)
	// Launching, if set, is called with the plan once it is built, before
	// the command starts and before the landlock tier's TMPDIR
	// (Plan.RunTmp) is made, with the pid of the sandbox's first process
	// (the shim, which kills the rest as it dies): what the caller must
	// undo after the run is known then, and can be recorded where the
	// sandbox cannot reach it (a corral killed before the end leaves it
	// to the next run). The caller then removes what Plan.MustNotAppear
	// names after the run (RemoveMustNotAppear). An error ends the run
	// before the command starts.
	Launching func(plan *Plan, shim int) error
}

// Egress is what a run's egress proxy serves.
type Egress struct {
	// Listeners are the proxy's listening sockets.
	Listeners []net.Listener
	// DNS is the socket of the sandbox's resolver (127.0.0.1:53 inside
	// it), for a netns.FakeDNS to answer: nil unless egress is
	// transparent (the namespaces tier).
	DNS net.PacketConn
	// Originals are where the connections the supervisor redirected to
	// the proxy were going (netns.Config.Originals); nil unless egress
	// is transparent.
	Originals *usernotif.Originals
}

// Options change how a run is carried out but never what it enforces;
// the zero value is the product's behaviour. The CLI sets TraceInit from
// CORRAL_TRACE=1; the rest only a binary built with -tags
// corral_testhooks sets, for the end-to-end tests.
type Options struct {
	// TraceInit makes the sandbox's init print how long each of its
	// steps took to the command's stderr (with Request.Trace set).
	TraceInit bool
	// LegacyMounts builds the new root the way kernels without open_tree
	// and mount_setattr need (bind, then set the flags by path), so the
	// tests cover that path on any kernel.
	LegacyMounts bool
	// MountPause holds the init between opening the bind sources and
	// placing them; ProbePause waits before corral probes the host (after
	// the init built its root ahead), HoldPause before it holds the
	// protected paths. Each opens a window in which a test changes the
	// host; they only slow a run.
	MountPause, ProbePause, HoldPause time.Duration
	// CleanupPause holds package corral between the command's end and
	// its cleanup (the sweep), for the tests that kill corral there.
	CleanupPause time.Duration
}

// Stage is where a run ended: the step it was in when it failed, or
// StageCommand once the command started. Execute moves between plan and
// launch more than once (the init starts early, the plan is built for the
// tier it runs in), so a stage names the work, not a moment.
type Stage string

const (
	// StagePlan: probing the host, creating hooks folders, building the
	// kernel plan (a program that is not there, a protection the host
	// cannot give, a grant through a planted symlink).
	StagePlan Stage = "plan"
	// StageLaunch: starting the init and its namespaces or the landlock
	// tier, the cgroup, the mounts, Landlock, seccomp and the command's
	// execve.
	StageLaunch Stage = "launch"
	// StageCommand: the command started; how it ended is its own.
	StageCommand Stage = "command"
)

// Outcome is what a run did, filled as far as it got (also with an
// error from Execute).
type Outcome struct {
	// Stage is where the run ended.
	Stage Stage
	// Result is how the command ended; nil when nothing ran. A run given
	// up before its plan (a signal to corral, ctx done) has a Result with
	// TimedOut or Signal set and Started false.
	Result *Result
	// Plan is the plan the run had (nil: none was built).
	Plan *Plan
	// Protections is the enforcement table: the plan's rows and the
	// limits row. Dropped names the rows not enforced (best effort).
	Protections []Protection
	Dropped     []string
	Warnings    []string
	// Cgroup is the run's cgroup ("": none).
	Cgroup string
	// Created are the hooks folders made for a writable repository.
	Created []string
	// Replaced are protected paths the host replaced while the sandbox
	// ran: their read-only bind went with the old file.
	Replaced []string
	// FS are the file accesses the kernel refused the command, and the
	// kinds this host cannot show (fsdenials.go).
	FS FSDenials
	// Lookups are the names the command looked up in a sandbox without
	// network (Plan.Resolver), each answered "no such name"; at most
	// maxLookups.
	Lookups []string
}

// ErrGivenUp means the run was given up before its plan for a reason
// that is neither a signal nor the caller's context.
var ErrGivenUp = errors.New("the run was given up before its plan")

// Execute runs req.Spec.Argv in the sandbox and waits for it: it starts
// the init (which makes its namespaces and builds its root ahead while
// the rest happens), makes the cgroup, probes the host, builds the plan,
// holds the protected paths and launches. Cancelling ctx ends the run as
// its timeout does. A *NotFoundError means the program is not there; an
// error wrapping ErrProtection, a protection that can't be enforced.
func Execute(ctx context.Context, req Request) (*Outcome, error) {
	e := &execution{req: req, out: &Outcome{}, trace: req.Trace, warn: req.Warn}
	if e.trace == nil {
		e.trace = func(string) {}
	}
	if e.warn == nil {
		e.warn = func(string) {}
	}
	if req.Trace == nil {
		e.req.Spec.Options.TraceInit = false
	}
	return e.out, e.run(ctx)
}

// execution is one Execute.
type execution struct {
	req        Request
	out        *Outcome
	trace      func(string)
	warn       func(string)
	cgroupMade func() cgroupResult
	fsAudit    *fsaudit.Reader // the run's Landlock audit records (nil: not read)
	// super redirects connects (transparent egress) and makes names
	// (fs.deny), and refused are its refusals, said once after the run.
	super   *usernotif.Supervisor
	mu      sync.Mutex
	refused []string
	// nonet is the resolver's socket without network, and lookups the
	// names it was asked for.
	nonet   net.PacketConn
	lookups []string
}

// lookedUp notes a name the command looked up without network.
func (e *execution) lookedUp(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.lookups) < maxLookups && !slices.Contains(e.lookups, name) {
		e.lookups = append(e.lookups, name)
	}
}

type cgroupResult struct {
	cg  *cgroup.Group
	err error
}

func (e *execution) run(ctx context.Context) error {
	spec, limits := &e.req.Spec, e.req.Spec.Limits
	e.out.Stage = StagePlan
	prepared := Prepare(e.req.Perms)
	// The init is exec'd on a thread of its own (about 0.8 ms until it
	// runs, and as long again to make its namespaces) while this one
	// makes the cgroup, probes the host and builds the plan.
	l, startErr := Start(e.req.Stdio, spec.Tier)
	var launch *Launch // set once the init runs; it stops the signals
	defer func() {
		if launch == nil && e.req.Stdio.Signals != nil {
			e.req.Stdio.Signals.Stop()
		}
	}()
	// stop is closed when the run is given up before its plan: corral
	// got SIGINT, SIGTERM, SIGHUP or SIGQUIT, or ctx was cancelled. It
	// ends Probe's waits for locks other runs hold.
	stop, runEnded := make(chan struct{}), make(chan struct{})
	defer close(runEnded)
	if startErr == nil {
		ending := l.Ending()
		go func() {
			select {
			case <-ending:
			case <-ctx.Done():
			case <-runEnded:
			}
			close(stop)
		}()
	}
	spec.Stop = stop
	started := sync.OnceValue(func() error {
		if startErr != nil {
			return startErr
		}
		if err := l.Started(); err != nil {
			return err
		}
		launch = l
		e.trace("started")
		return nil
	})
	cgDone := make(chan cgroupResult, 1)
	go func() {
		cgroup.RemoveStale(e.req.CgroupParent)
		cg, err := cgroup.New(e.req.CgroupParent, limits.Memory, limits.Pids)
		cgDone <- cgroupResult{cg, err}
	}()
	e.cgroupMade = sync.OnceValue(func() cgroupResult { return <-cgDone })
	defer e.removeCgroup()
	abort := func(err error) error {
		if started() == nil {
			launch.Abort()
		}
		return err
	}
	pause(spec.Options.ProbePause)
	facts := Probe(e.req.Perms, *spec)
	e.trace("probed")
	if idx := facts.ProgramIndex; idx != nil {
		e.trace("program index: " + idx.Source)
		if idx.Stopped {
			if started() != nil {
				launch = nil
			}
			return e.givenUp(ctx, launch)
		}
	}
	hooks, err := CreateHooksFolders(facts)
	e.out.Created = hooks
	if err != nil {
		return abort(err)
	}
	// The plan is built for the tier the init runs in.
	e.out.Stage = StageLaunch
	if err := started(); err != nil {
		return err
	}
	tier, err := e.tier(&launch)
	if err != nil {
		return abort(err)
	}
	spec.Tier, spec.TierWhy = tier.Name, tier.Why
	serve := e.serve
	var lr *landlockRun
	if tier.Name == TierLandlock {
		lr, err = e.prepareLandlock(spec)
		if err != nil {
			return abort(err)
		}
		defer lr.close(e.warn)
		serve = func(files []*os.File) { lr.serve(e, files) }
	}
	e.out.Stage = StagePlan
	plan, err := BuildPlan(e.req.Perms, *spec, facts)
	e.trace("built")
	if err != nil {
		return abort(err)
	}
	e.out.Plan = plan
	if tier.Name == TierLandlock {
		e.warn("running in the landlock tier, without namespaces (" + tier.Why + "): see `corral doctor`")
	}
	e.out.Protections, e.out.Warnings = plan.Protections, plan.Warnings
	for _, a := range plan.Alerts {
		e.warn(a)
	}
	for _, p := range plan.Protections {
		e.dropped(p)
	}
	e.trace("planned")
	// Which file each protected path is now; the sandbox itself cannot
	// replace one (renaming over a mount point fails), the host can.
	pause(spec.Options.HoldPause)
	held := Hold(plan.Protected)
	defer held.Close()
	e.out.Stage = StageLaunch
	if e.req.Launching != nil {
		if err := e.req.Launching(plan, launch.Pid()); err != nil {
			return abort(err)
		}
	}
	if lr != nil {
		if err := lr.makeTmp(); err != nil {
			return abort(err)
		}
	}
	e.fsAudit = e.watchDenials(plan)
	locks := watchLocks(plan.Protected)
	res, err := launch.Run(plan, RunOptions{Seccomp: prepared, Cgroup: e.joinCgroup, Trace: e.req.Trace, Timeout: limits.Timeout,
		KillGrace: limits.KillGrace, Done: ctx.Done(), Held: held.Files(), Serve: serve})
	e.out.Result = res
	e.stopSupervisor()
	locks.finish(e.warn)
	if e.nonet != nil {
		e.nonet.Close()
		e.mu.Lock()
		e.out.Lookups = e.lookups
		e.mu.Unlock()
	}
	e.finishDenials(e.fsAudit)
	if res != nil && res.Started && res.Stage == nil {
		e.out.Stage = StageCommand
	}
	e.trace("done")
	if res != nil && res.Started {
		for _, p := range held.Replaced() {
			e.out.Replaced = append(e.out.Replaced, p)
			e.warn(fmt.Sprintf("%s was replaced on the host while the sandbox ran, which ends its read-only bind: the command may have written the new one; check it", printable.String(p)))
		}
	}
	return err
}

// limitSources says who asked for the memory and process limits, naming
// each source once: "skills a, b" when both come from the same skills.
func limitSources(l Limits) string {
	if l.MemoryFrom == l.PidsFrom {
		return l.MemoryFrom
	}
	return "memory: " + l.MemoryFrom + "; processes: " + l.PidsFrom
}

// joinCgroup is RunOptions.Cgroup: the init gets the cgroup after its
// mounts (Launch.Run calls this once the plan is on its way), so making it
// overlaps them.
func (e *execution) joinCgroup(initPid int) (*cgroup.Group, error) {
	if e.fsAudit != nil {
		e.fsAudit.Attribute(initPid) // it waits for the cgroup: alive
	}
	limits := e.req.Spec.Limits
	cgr := e.cgroupMade()
	if cgr.err == nil {
		// A user scope is started around the init now.
		if err := cgr.cg.Attach(initPid); err != nil {
			cgr = cgroupResult{err: err}
		}
	}
	e.trace("cgroupready")
	if cgr.err != nil && limits.Explicit && !e.req.Spec.BestEffort {
		return nil, fmt.Errorf("%w: cannot enforce the memory and process limits (%s): %v", ErrProtection, limitSources(limits), cgr.err)
	}
	p := LimitsProtection(limits, cgr.cg, cgr.err)
	e.out.Protections = append(e.out.Protections, p)
	e.dropped(p)
	if cgr.err != nil {
		return nil, nil
	}
	e.out.Cgroup = cgr.cg.Path
	return cgr.cg, nil
}

// dropped records and warns about a protection the run goes without.
func (e *execution) dropped(p Protection) {
	if !p.Enforced {
		e.out.Dropped = append(e.out.Dropped, p.Name)
		e.warn(fmt.Sprintf("running without %s: %s", p.Name, p.Detail))
	}
}

// serve is RunOptions.Serve: the listeners the init made go to the
// caller's proxy; with transparent egress, so do the resolver's socket
// and the destinations the connect supervisor records.
func (e *execution) serve(files []*os.File) {
	var eg Egress
	var notif *os.File
	v6 := false
	for _, f := range files {
		switch f.Name() {
		case handedListener:
			ln, err := net.FileListener(f)
			f.Close()
			if err != nil {
				e.warn(fmt.Sprintf("proxy listener: %v", err))
				continue
			}
			v6 = v6 || ln.Addr().(*net.TCPAddr).IP.To4() == nil
			eg.Listeners = append(eg.Listeners, ln)
		case handedDNS:
			pc, err := net.FilePacketConn(f)
			f.Close()
			if err != nil {
				e.warn(fmt.Sprintf("the sandbox's resolver socket: %v", err))
				continue
			}
			eg.DNS = pc
		case handedSupervisor:
			notif = f
		default:
			f.Close()
		}
	}
	if notif != nil {
		cfg := usernotif.Config{Log: func(s string) {
			e.mu.Lock()
			e.refused = append(e.refused, s)
			e.mu.Unlock()
		}}
		superviseCreate(&cfg, e.out.Plan)
		if p := e.out.Plan.Proxy; p != nil && p.DNSPort != 0 {
			eg.Originals = &usernotif.Originals{}
			r := &usernotif.Redirect{Proxy4: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ProxyPort), Originals: eg.Originals}
			for _, port := range e.req.Perms.LoopbackPorts() {
				if port != ProxyPort && port != DNSPort {
					r.Loopback = append(r.Loopback, uint16(port))
				}
			}
			if v6 {
				r.Proxy6 = netip.AddrPortFrom(netip.IPv6Loopback(), ProxyPort)
			}
			cfg.Redirect = r
		}
		super, err := usernotif.StartConfig(notif, cfg)
		if err != nil {
			// Its connects and creating calls fail (ENOSYS) rather
			// than wait: only clients of HTTP_PROXY get out.
			e.warn(fmt.Sprintf("corral's seccomp supervisor (transparent egress, fs.deny) did not start: %v", err))
		}
		e.super = super
	}
	if e.out.Plan.Proxy == nil {
		if eg.DNS != nil {
			e.nonet = eg.DNS
			go serveNoNetwork(eg.DNS, e.lookedUp)
		}
		return // fs.deny's supervisor (and the resolver) alone: nothing to proxy
	}
	if e.req.Serve != nil {
		e.req.Serve(eg)
		return
	}
	for _, ln := range eg.Listeners {
		ln.Close()
	}
	if eg.DNS != nil {
		eg.DNS.Close()
	}
}

// stopSupervisor stops the supervisor of transparent egress and fs.deny
// and says what it refused.
func (e *execution) stopSupervisor() {
	if e.super == nil {
		return
	}
	e.super.Stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.refused); n > 0 {
		e.warn(fmt.Sprintf("the seccomp supervisor refused %d connect(s) or name(s) fs.deny matches: %s", n, strings.Join(e.refused[:min(n, 3)], "; ")))
	}
}

// removeCgroup removes the run's cgroup once (it waits for it to be made).
func (e *execution) removeCgroup() {
	cgr := e.cgroupMade()
	if cgr.err != nil || cgr.cg == nil {
		return
	}
	t := time.Now()
	if err := cgr.cg.Remove(); err != nil {
		e.warn(fmt.Sprintf("removing cgroup %s: %v", cgr.cg.Path, err))
	}
	if e.req.Spec.Options.TraceInit {
		e.trace(fmt.Sprintf("cgroup removed in %d µs", time.Since(t).Microseconds()))
	}
}

// givenUp ends a run given up before its plan: as a timeout when ctx was
// cancelled, else as the signal corral got would have ended the command
// (128+N).
func (e *execution) givenUp(ctx context.Context, launch *Launch) error {
	sig := 0
	if launch != nil {
		sig = launch.EndSignal()
		launch.Abort()
	}
	switch {
	case ctx.Err() != nil:
		e.out.Result = &Result{TimedOut: true}
	case sig != 0:
		e.out.Result = &Result{Signal: sig, ExitCode: 128 + sig}
	default:
		return ErrGivenUp
	}
	return nil
}

// pause waits d (Options' windows for tests; zero in the product).
func pause(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
