package corral

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"corral/agentpolicy"
	"corral/netns"
	"corral/policyengine"
	"corral/printable"
	"corral/sandbox"
	"corral/sandbox/cgroup"
)

// Spec is one sandboxed run.
type Spec struct {
	// Skills grant the permissions (LoadSkills); required.
	Skills *Skills
	// Policy caps them (Skills.Policy); optional.
	Policy *agentpolicy.Evaluator
	// Argv is the command; argv[0] is looked up on the sandbox's PATH.
	Argv []string
	// Env is the environment the sandbox filters (default os.Environ()).
	Env []string
	// Stdin, Stdout and Stderr are the command's streams (nil: empty
	// input, output discarded). *os.File values pass straight through.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Limits override the skills' limits; CgroupParent places the run's
	// cgroup.
	Limits       sandbox.LimitFlags
	CgroupParent string
	// BestEffort runs even where a protection cannot be enforced.
	BestEffort bool
	// Confirmed says the user agreed to what the policy said needs
	// confirmation; without it a confirm is a denial (nobody can answer).
	Confirmed bool
	// Agent names the agent in every audit event.
	Agent string
	// Audit, if set, gets every decision of the run as JSON lines: the
	// preflight's and the egress proxy's.
	Audit io.Writer
	// Resolve pins names in the proxy's resolver (still checked).
	Resolve map[string][]netip.Addr
	// Keep are more files and folders the run must not change besides the
	// skills' folders and Policy's files: a policy file that does not
	// exist yet (the global one), which the command must not create.
	Keep []string
	// Warn gets warnings meant for a person (default: discarded).
	Warn func(string)
	// Trace gets timing steps (CORRAL_TRACE=1 in the CLI).
	Trace func(step string)
	// Debug holds options for performance work and for tests; the zero
	// value is the product's behaviour.
	Debug Debug
}

// Debug holds options that change how a run is carried out but never
// what it enforces. The CLI sets TraceInit from CORRAL_TRACE=1; the rest
// only a binary built with -tags corral_testhooks sets (from CORRAL_MOUNTS,
// CORRAL_MOUNT_PAUSE, CORRAL_PROBE_PAUSE and CORRAL_HOLD_PAUSE), for the
// end-to-end tests.
type Debug struct {
	// TraceInit makes the sandbox's init print how long each of its
	// steps took to the command's stderr (with Trace set).
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
}

// Denial is one refused permission, as audited.
type Denial struct {
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent,omitempty"`
	Permission string    `json:"permission"` // exec, network, ...
	Context    string    `json:"context"`    // the command line, URL or path
	policyengine.Decision
}

// Result is how a run ended. ExitCode is the command's own status, 128+N
// for signal N, 124 when the timeout ended it and 137 when the memory cap
// did.
type Result struct {
	ExitCode    int                  `json:"exit_code"`
	Signal      int                  `json:"signal,omitempty"`
	Wall        time.Duration        `json:"-"`
	PeakMemory  int64                `json:"peak_memory_bytes"`
	OOMKilled   bool                 `json:"oom_killed"`
	TimedOut    bool                 `json:"timed_out"`
	Limits      *sandbox.Limits      `json:"limits,omitempty"`
	Cgroup      string               `json:"cgroup,omitempty"`
	Protections []sandbox.Protection `json:"protections"`
	Dropped     []string             `json:"dropped,omitempty"`
	Denials     []Denial             `json:"denials"`
	// ProxyDenials are the requests the egress proxy refused (at most
	// 1000; ProxyDenialsMore counts the rest).
	ProxyDenials     []netns.Event `json:"proxy_denials,omitempty"`
	ProxyDenialsMore int           `json:"proxy_denials_more,omitempty"`
	Warnings         []string      `json:"warnings,omitempty"`
	Created          []string      `json:"created,omitempty"`
	Removed          []string      `json:"removed,omitempty"` // files the command made in protected git folders, removed after the run
	// Quarantined are what the command left that a host tool would run or
	// trust: protected paths it created (or led elsewhere), and git
	// config, hooks and pointers in a writable root. Each is renamed to
	// To (NAME.corral-quarantined-RANDOM); only if no rename works is it
	// removed (To empty, Why says so).
	Quarantined []Quarantined `json:"quarantined,omitempty"`
	// Replaced are protected paths the host replaced while the sandbox ran
	// (or started): their read-only bind went with the old file, so the
	// command may have written the new one.
	Replaced []string `json:"replaced,omitempty"`
	// Proxy is the egress proxy's audit, for a summary of its refusals.
	Proxy *netns.Audit `json:"-"`
}

// MaxLogged bounds the command line (and the reason) of an audited
// denial: both are the caller's or the model's choice.
const MaxLogged = 4096

// auditLog serialises JSON lines from the preflight and the proxy.
type auditLog struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (a *auditLog) write(v any) {
	if a == nil || a.w == nil {
		return
	}
	line, _ := json.Marshal(v)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		_, a.err = a.w.Write(append(line, '\n'))
	}
}

func (a *auditLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.w.Write(p)
	a.err = err
	return n, err
}

// givenUp ends a run given up before its plan was built (stop in Run): as
// a timeout when ctx was cancelled, else as the signal corral got would
// have ended the command (128+N).
func givenUp(ctx context.Context, r *Result, launch *sandbox.Launch, cleanup func()) (*Result, error) {
	sig := 0
	if launch != nil {
		sig = launch.EndSignal()
		launch.Abort()
	}
	cleanup()
	switch {
	case ctx.Err() != nil:
		r.TimedOut, r.ExitCode = true, ExitTimeout
	case sig != 0:
		r.Signal, r.ExitCode = sig, 128+sig
	default:
		return r, failed(errors.New("the run was given up before its plan"))
	}
	return r, nil
}

// early is a signal forwarding PrepareRun started for the next Run.
var early atomic.Pointer[sandbox.Signals]

// PrepareRun starts, in the background, what the next Run needs first
// (catching the signals it forwards; the first signal.Notify of a process
// costs 0.2-0.4 ms), so it overlaps loading the skills. Calling it is
// optional; call it only right before a Run: until that Run ends, SIGINT,
// SIGTERM, SIGHUP and the others Run forwards are caught.
func PrepareRun() {
	sigs := sandbox.NativeSignals() // forwarded from C to `corral exec`'s early init
	if sigs == nil {
		sigs = sandbox.NotifySignals()
	}
	if s := early.Swap(sigs); s != nil {
		s.Stop()
	}
}

// Run runs spec.Argv in the sandbox and waits for it. The Result is
// filled as far as the run got, also with an error; an *Error says why
// the command did not run its course (its Code: 125, 126, 127).
// Cancelling ctx ends the run as a timeout does.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	r := &Result{Denials: []Denial{}}
	since := sweepStart() // before anything of the sandbox can write
	sigs := early.Swap(nil)
	if sigs == nil {
		sigs = sandbox.NotifySignals()
	}
	handed := false // to the launch, which stops them
	defer func() {
		if !handed {
			sigs.Stop()
		}
	}()
	trace, warn := spec.Trace, spec.Warn
	if trace == nil {
		trace = func(string) {}
	}
	if warn == nil {
		warn = func(string) {}
	}
	if spec.Skills == nil || len(spec.Argv) == 0 {
		return r, failed(errors.New("corral.Run needs skills and a command"))
	}
	audit := &auditLog{w: spec.Audit}
	deny := func(permission, context string, d policyengine.Decision) error {
		d.Reason = printable.Clip(d.Reason, MaxLogged)
		den := Denial{Time: time.Now(), Agent: spec.Agent, Permission: permission, Context: printable.Clip(context, MaxLogged), Decision: d}
		r.Denials = append(r.Denials, den)
		audit.write(den)
		return &Error{Code: ExitNotAllowed, Err: fmt.Errorf("%w: %s", ErrNotPermitted, d.Reason)}
	}
	sk := spec.Skills
	if spec.Policy != nil && !spec.Policy.Empty() {
		capped, notes, err := sk.Capped(spec.Policy)
		if err != nil {
			return r, failed(err)
		}
		sk = capped
		r.Warnings = append(r.Warnings, notes...)
	}
	if st, err := os.Stat(sk.Vars.WorkDir); err != nil || !st.IsDir() {
		return r, failed(fmt.Errorf("work dir %s is not a folder", sk.Vars.WorkDir))
	}
	// Preflight: the skills' engine checks the command (and sh -c
	// scripts), then the agent policy's rules, before anything starts
	// (about 50 µs): a refused command costs no namespaces.
	line := commandLine(spec.Argv)
	if d := sk.Engine.CheckArgv(spec.Argv); d.Action != policyengine.Allow {
		return r, deny("exec", line, d)
	}
	if spec.Policy != nil && !spec.Policy.Empty() {
		d := spec.Policy.CheckExec(line)
		if d.Action == policyengine.Confirm && !spec.Confirmed {
			d.Action = policyengine.Deny
			d.Reason += " (nobody can answer here: pass --confirmed once the user agreed)"
		}
		if d.Action == policyengine.Deny {
			return r, deny("exec", line, d)
		}
	}
	trace("preflight")
	prepared := sandbox.Prepare(sk.Perms)
	// The init starts next and boots (namespaces, uid map) while the
	// cgroup is made and the plan built.
	stdio, closeStdio, err := files(spec)
	if err != nil {
		return r, failed(err)
	}
	defer closeStdio()
	defer restoreTerminals(saveTerminals(stdio.Stdin, stdio.Stdout, stdio.Stderr))
	trace("loaded")
	stdio.Signals = sigs
	// The init is exec'd on a thread of its own (about 0.8 ms until it
	// runs, and as long again to make its namespaces) while this one
	// makes the cgroup, probes the host and builds the plan.
	l, startErr := sandbox.Start(stdio)
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
	var launch *sandbox.Launch
	started := sync.OnceValue(func() error {
		if startErr != nil {
			return startErr
		}
		if err := l.Started(); err != nil {
			return err
		}
		launch, handed = l, true
		trace("started")
		return nil
	})
	limits := sandbox.ResolveLimits(sk.Perms.Limits, spec.Limits)
	if spec.Policy != nil {
		// The policy's limit caps hold against the flags too.
		mem, pids, timeout := spec.Policy.LimitCeilings()
		if mem > 0 && limits.Memory > mem {
			limits.Memory, limits.MemoryFrom, limits.Explicit = mem, "the agent policy's caps", true
		}
		if pids > 0 && limits.Pids > pids {
			limits.Pids, limits.PidsFrom, limits.Explicit = pids, "the agent policy's caps", true
		}
		if timeout > 0 && (limits.Timeout == 0 || limits.Timeout > timeout) {
			limits.Timeout, limits.TimeoutFrom = timeout, "the agent policy's caps"
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); limits.Timeout == 0 || left < limits.Timeout {
			limits.Timeout, limits.TimeoutFrom = max(left, time.Millisecond), "the caller's context"
		}
	}
	r.Limits = &limits
	cgDone := make(chan cgroupResult, 1)
	go func() {
		cgroup.RemoveStale(spec.CgroupParent)
		cg, err := cgroup.New(spec.CgroupParent, limits.Memory, limits.Pids)
		cgDone <- cgroupResult{cg, err}
	}()
	cgroupMade := sync.OnceValue(func() cgroupResult { return <-cgDone })
	abort := func(err error) (*Result, error) {
		if started() == nil {
			launch.Abort()
		}
		removeCgroup(cgroupMade(), warn)
		return r, err
	}
	created, err := createWriteRoots(sk)
	r.Created = created
	if err != nil {
		return abort(failed(err))
	}
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	sspec := sandbox.Spec{Argv: spec.Argv, WorkDir: sk.Vars.WorkDir, Env: env, BestEffort: spec.BestEffort, Stop: stop,
		Home: sk.Vars.Home, Keep: KeptPaths(sk, spec.Policy, spec.Keep...)}
	pause(spec.Debug.ProbePause)
	facts := sandbox.Probe(sk.Perms, sspec)
	trace("probed")
	if idx := facts.ProgramIndex; idx != nil {
		trace("program index: " + idx.Source)
	}
	if idx := facts.ProgramIndex; idx != nil && idx.Stopped {
		if started() != nil {
			launch = nil
		}
		return givenUp(ctx, r, launch, func() { removeCgroup(cgroupMade(), warn) })
	}
	hooks, err := sandbox.CreateHooksFolders(facts)
	r.Created = append(r.Created, hooks...)
	if err != nil {
		return abort(failed(err))
	}
	plan, err := sandbox.BuildPlan(sk.Perms, sspec, facts)
	trace("built")
	var notFound *sandbox.NotFoundError
	switch {
	case errors.As(err, &notFound):
		return abort(&Error{Code: ExitNotFound, Err: err})
	case err != nil:
		return abort(failed(err))
	}
	plan.Limits = limits
	defer func() {
		cgr := cgroupMade()
		t := time.Now()
		removeCgroup(cgr, warn)
		if plan.Trace && cgr.err == nil {
			trace(fmt.Sprintf("cgroup removed in %d µs", time.Since(t).Microseconds()))
		}
	}()
	if err := started(); err != nil {
		return r, failed(err)
	}
	// The init gets the cgroup after its mounts (Launch.Run calls this
	// once the plan is on its way), so making it overlaps them.
	joinCgroup := func(initPid int) (*cgroup.Group, error) {
		cgr := cgroupMade()
		if cgr.err == nil {
			// A user scope is started around the init now.
			if err := cgr.cg.Attach(initPid); err != nil {
				cgr = cgroupResult{err: err}
			}
		}
		trace("cgroupready")
		if cgr.err != nil && limits.Explicit && !spec.BestEffort {
			return nil, fmt.Errorf("%w: cannot enforce the memory and process limits (%s, %s): %v", sandbox.ErrProtection, limits.MemoryFrom, limits.PidsFrom, cgr.err)
		}
		p := LimitsProtection(limits, cgr.cg, cgr.err)
		r.Protections = append(r.Protections, p)
		if !p.Enforced {
			r.Dropped = append(r.Dropped, p.Name)
			warn(fmt.Sprintf("running without %s: %s", p.Name, p.Detail))
		}
		if cgr.err != nil {
			return nil, nil
		}
		r.Cgroup = cgr.cg.Path
		return cgr.cg, nil
	}
	plan.Trace = spec.Trace != nil && spec.Debug.TraceInit
	plan.LegacyMounts, plan.MountPause = spec.Debug.LegacyMounts, spec.Debug.MountPause
	r.Protections, r.Warnings = plan.Protections, append(r.Warnings, plan.Warnings...)
	for _, a := range plan.Alerts {
		warn(a)
	}
	for _, p := range plan.Protections {
		if !p.Enforced {
			r.Dropped = append(r.Dropped, p.Name)
			warn(fmt.Sprintf("running without %s: %s", p.Name, p.Detail))
		}
	}
	trace("planned")
	var proxy *netns.Proxy
	if plan.Proxy != nil {
		var w io.Writer
		if spec.Audit != nil {
			w = audit
		}
		r.Proxy = netns.NewAudit(w)
		cfg := netns.Config{Engine: sk.Engine, Audit: r.Proxy.Record, Agent: spec.Agent, HostAddrs: netns.SystemHostAddrs()}
		if spec.Policy != nil && !spec.Policy.Empty() {
			cfg.Policy = spec.Policy.WithHostAddrs(cfg.HostAddrs)
		}
		if len(spec.Resolve) > 0 {
			cfg.Resolver = &netns.Pinned{Names: spec.Resolve, Next: netns.SystemResolver()}
		}
		proxy = netns.New(cfg)
	}
	// Which file each protected path is now; the sandbox itself cannot
	// replace one (renaming over a mount point fails), the host can.
	pause(spec.Debug.HoldPause)
	held := sandbox.Hold(plan.Protected)
	defer held.Close()
	plan.Held = held.Files()
	res, err := launch.Run(plan, sandbox.RunOptions{Seccomp: prepared, Cgroup: joinCgroup, Trace: spec.Trace, Timeout: limits.Timeout, KillGrace: limits.KillGrace, Done: ctx.Done(), Serve: func(files []*os.File) {
		for _, f := range files {
			ln, lerr := net.FileListener(f)
			f.Close()
			if lerr != nil {
				warn(fmt.Sprintf("proxy listener: %v", lerr))
				continue
			}
			go proxy.Serve(ln)
		}
	}})
	trace("done")
	// Nothing of the sandbox runs any more: what it left that would send
	// git elsewhere for config and hooks can be removed without a race.
	for _, f := range plan.MustNotAppear {
		if _, err := os.Lstat(f); err == nil {
			if err := os.Remove(f); err != nil {
				warn(fmt.Sprintf("the command created %s, which sends git on the host to a config and hooks it chose; removing it failed: %v", printable.String(f), err))
				continue
			}
			r.Removed = append(r.Removed, f)
			warn(fmt.Sprintf("the command created %s, which would send git on the host to a config and hooks it chose; removed it", printable.String(f)))
		}
	}
	r.Quarantined = quarantine(plan.Quarantine, warn)
	if res != nil && res.Started {
		sweepAfter(r, plan, sk.Vars.Home, since, warn, trace)
		for _, p := range held.Replaced() {
			r.Replaced = append(r.Replaced, p)
			warn(fmt.Sprintf("%s was replaced on the host while the sandbox ran, which ends its read-only bind: the command may have written the new one; check it", printable.String(p)))
		}
	}
	if proxy != nil {
		proxy.Close()
		r.ProxyDenials, r.ProxyDenialsMore = r.Proxy.Denials()
		if aerr := r.Proxy.Err(); aerr != nil {
			warn(fmt.Sprintf("writing the audit log: %v", aerr))
		}
	}
	if res != nil {
		r.ExitCode, r.Signal, r.Wall, r.PeakMemory = res.ExitCode, res.Signal, res.Wall, res.MaxRSS
	}
	if err != nil {
		return r, failed(err)
	}
	r.TimedOut, r.OOMKilled = res.TimedOut, res.OOMKills > 0
	switch {
	case res.TimedOut:
		r.ExitCode = ExitTimeout
		return r, nil
	case res.OOMKills > 0 && (res.Signal == int(unix.SIGKILL) || res.ExitCode == ExitOOM):
		r.ExitCode = ExitOOM
	}
	if res.Stage != nil {
		return r, execFailure(spec.Argv[0], res.Stage)
	}
	return r, nil
}

// commandLine is argv quoted for the shell, all of it: the policy's rules
// look into sh -c scripts themselves, and the shell and the script's own
// arguments ($0, $1...) stay in view.
func commandLine(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,") == "" {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

// execFailure maps a failed exec inside the sandbox to 126 or 127.
func execFailure(prog string, e *sandbox.StageError) error {
	switch unix.Errno(e.Errno) {
	case unix.ENOENT:
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s: command not found in the sandbox", printable.String(prog))}
	case unix.EACCES, unix.EPERM:
		return &Error{Code: ExitNotAllowed, Err: fmt.Errorf("%s: the sandbox refused to execute it (%s)", printable.String(prog), printable.Line(e.Message))}
	}
	return failed(fmt.Errorf("starting %s: %w", printable.String(prog), e))
}

type cgroupResult struct {
	cg  *cgroup.Group
	err error
}

// pause waits d (Debug's windows for tests; zero in the product).
func pause(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
