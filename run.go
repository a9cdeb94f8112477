package corral

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/ask"
	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
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
	// FreshHome gives the sandbox's private HOME nothing from earlier
	// runs: by default its caches (sandbox.HomeCaches) are kept between
	// runs with the same work dir and skills, in HomeStoreRoot.
	FreshHome bool
	// Tier is the sandbox tier to use (zero: auto, the namespaces tier
	// where the host allows it).
	Tier sandbox.Tier
	// Confirmed says the user agreed to what the policy said needs
	// confirmation; without it a confirm is a denial (nobody can answer)
	// unless Ask answers.
	Confirmed bool
	// Ask, if set, is asked what no rule decides (package ask,
	// docs/ask.md): a host no network rule lists, met by the egress
	// proxy, and a command line the agent policy wants confirmed. nil:
	// both are refused.
	Ask ask.Asker
	// RememberTo is the policy file a "remember" answer writes (the
	// project's policy); empty: remember counts as allow-once.
	RememberTo string
	// Agent names the agent in every audit event.
	Agent string
	// Audit, if set, gets every decision of the run as JSON lines: the
	// preflight's and the egress proxy's.
	Audit io.Writer
	// Resolve pins names in the proxy's resolver (still checked).
	Resolve map[string][]netip.Addr
	// Resolver answers the proxy's lookups of the names Resolve does not
	// pin (default: the system's resolver). Its answers are checked as
	// any others.
	Resolver netns.Resolver
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
// what it enforces (sandbox.Options): the CLI sets TraceInit from
// CORRAL_TRACE=1; the rest only a binary built with -tags
// corral_testhooks sets (from CORRAL_MOUNTS, CORRAL_MOUNT_PAUSE,
// CORRAL_PROBE_PAUSE, CORRAL_HOLD_PAUSE and CORRAL_CLEANUP_PAUSE), for the
// end-to-end tests.
type Debug = sandbox.Options

// Denial is one refused permission, as audited.
type Denial struct {
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent,omitempty"`
	Permission string    `json:"permission"` // exec, network, ...
	Context    string    `json:"context"`    // the command line, URL or path
	policyengine.Decision
}

// Result is how a run ended, and the report `corral exec --report`
// writes: its JSON (MarshalJSON) is the report, documented in
// docs/report.md and docs/report.schema.json, and the CLI sets no field of
// its own. ExitCode is the command's own status, 128+N for signal N, 124
// when the timeout ended it and 137 when the memory cap did; when Run
// returns an *Error, it is that error's Code and Error its message.
type Result struct {
	// Argv is the command as given.
	Argv []string `json:"argv"`
	// Stage is where the run ended: StageCommand once the command
	// started, else the step that stopped it.
	Stage Stage `json:"stage"`
	// Error says why the run stopped before the command ran its course
	// ("" when it did, whatever its status).
	Error string `json:"error"`
	// Tier is the tier the sandbox ran in, and why (nil: none started).
	Tier        *sandbox.TierInfo    `json:"tier"`
	ExitCode    int                  `json:"exit_code"`
	Signal      int                  `json:"signal"`
	Wall        time.Duration        `json:"-"` // wall_ms in the JSON
	PeakMemory  int64                `json:"peak_memory_bytes"`
	OOMKilled   bool                 `json:"oom_killed"`
	TimedOut    bool                 `json:"timed_out"`
	Limits      *sandbox.Limits      `json:"limits"`
	Cgroup      string               `json:"cgroup"`
	Protections []sandbox.Protection `json:"protections"`
	Dropped     []string             `json:"dropped"`
	Denials     []Denial             `json:"denials"`
	// PreflightUnread is what the preflight could not read of the command
	// line ("" when it read all of it): syntax its reader does not follow,
	// a redirection or cd a shell expansion decides, a script run with
	// source. It refused nothing for that; the kernel enforced the skills.
	PreflightUnread string `json:"preflight_unread"`
	// StdoutBytes and StderrBytes are how many bytes the command wrote to
	// its standard output and error (nil: not counted, for a terminal, a
	// device or a discarded stream). Where the caller gave one pipe or
	// file as both, each is the two streams' total.
	StdoutBytes *int64 `json:"stdout_bytes"`
	StderrBytes *int64 `json:"stderr_bytes"`
	// HomeStore is the folder that kept the private HOME's caches for
	// this work dir and these skills ("" when the run had none: a grant
	// covers HOME, FreshHome, or no store could be trusted).
	HomeStore string `json:"home_store"`
	// ProxyDenials are the requests the egress proxy refused (at most
	// 1000; ProxyDenialsMore counts the rest).
	ProxyDenials     []netns.Event `json:"proxy_denials"`
	ProxyDenialsMore int           `json:"proxy_denials_more"`
	Warnings         []string      `json:"warnings"`
	Created          []string      `json:"created"`
	Removed          []string      `json:"removed"` // files the command made in protected git folders, removed after the run
	// Quarantined are what the command left that a host tool would run or
	// trust: protected paths it created (or led elsewhere), and git
	// config, hooks and pointers in a writable root. Each is renamed to
	// To (NAME.corral-quarantined-RANDOM); only if no rename works is it
	// removed (To empty, Why says so).
	Quarantined []Quarantined `json:"quarantined"`
	// Reset are the files and folders whose mode, ACL or file
	// capabilities corral set back after the run (docs/modes.md).
	Reset []Reset `json:"reset"`
	// Replaced are protected paths the host replaced while the sandbox ran
	// (or started): their read-only bind went with the old file, so the
	// command may have written the new one.
	Replaced []string `json:"replaced"`
	// Asked are the questions put to the ask channel and their answers
	// (at most 1000; the audit log has them all).
	Asked []ask.Record `json:"asked"`

	// NetworkBudgets are the network.budget caps the run reached, one
	// entry per cap, with how many requests it refused or cut.
	NetworkBudgets []netns.BudgetHit `json:"network_budgets"`

	// FSDenials are the file accesses the sandbox refused the command
	// (at most 1000 distinct ones; FSDenialsMore counts the rest): the
	// preflight's exec refusals and what the kernel's Landlock audit
	// records said. FSDenialsLost: some records never reached corral.
	FSDenials     []FSDenial `json:"fs_denials"`
	FSDenialsMore int        `json:"fs_denials_more"`
	FSDenialsLost bool       `json:"fs_denials_lost"`
	// DenialsUnobservable are the kinds of file denial this run could
	// not see, and why (docs/denials.md).
	DenialsUnobservable []sandbox.Unobservable `json:"denials_unobservable"`
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
// the command did not run its course (its Code: 125, 126, 127), and the
// Result's Stage where. Cancelling ctx ends the run as a timeout does.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	r := &Result{Argv: spec.Argv, Stage: StagePreflight}
	err := run(ctx, spec, r)
	r.end(err)
	return r, err
}

// end records in r why the run stopped (err from run).
func (r *Result) end(err error) {
	var e *Error
	switch {
	case errors.As(err, &e):
		r.ExitCode, r.Error = e.Code, e.Err.Error()
	case err != nil:
		r.ExitCode, r.Error = ExitFailed, err.Error()
	}
}

func run(ctx context.Context, spec Spec, r *Result) error {
	since := sweepStart() // before anything of the sandbox can write
	sigs := early.Swap(nil)
	if sigs == nil {
		sigs = sandbox.NotifySignals()
	}
	handed := false // to sandbox.Execute, which stops them
	defer func() {
		if !handed {
			sigs.Stop()
		}
	}()
	trace, warn := orNothing(spec.Trace), keepWarnings(r, spec.Warn)
	if spec.Skills == nil || len(spec.Argv) == 0 {
		return failed(errors.New("corral.Run needs skills and a command"))
	}
	audit := &auditLog{w: spec.Audit}
	asker := newAsking(spec, spec.Skills.Names(), r, audit, warn)
	sk, err := preflight(ctx, spec, r, audit, asker)
	if err != nil {
		return err
	}
	trace("preflight")
	store, err := openStore(spec.BestEffort, warn)
	if err != nil {
		return failed(err)
	}
	if store != nil {
		defer store.Close()
	}
	finishUnfinished(store, warn)
	care := &aftercare{store: store, since: since, workDir: sk.Vars.WorkDir, home: sk.Vars.Home, bestEffort: spec.BestEffort, warn: warn, pause: spec.Debug.CleanupPause}
	r.Stage = StageLaunch
	var output outputCount
	stdio, closeStdio, err := files(spec, &output)
	if err != nil {
		return failed(err)
	}
	defer func() {
		closeStdio()
		r.StdoutBytes, r.StderrBytes = output.Stdout, output.Stderr
	}()
	defer restoreTerminals(saveTerminals(stdio.Stdin, stdio.Stdout, stdio.Stderr))
	stdio.Signals = sigs
	r.Stage = StagePlan
	limits := runLimits(ctx, sk, spec)
	r.Limits = &limits
	r.Created, err = createWriteRoots(sk)
	if err != nil {
		return failed(err)
	}
	trace("loaded")
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	var homeDir string
	var homeGit bool
	if !spec.FreshHome && runtime.GOOS == "linux" {
		homeDir, homeGit = homeStore(sk, spec.Tier, warn)
	}
	var proxy *netns.Proxy // made when the plan has one
	handed = true
	out, err := sandbox.Execute(ctx, sandbox.Request{Perms: sk.Perms, CgroupParent: spec.CgroupParent, Stdio: stdio, Trace: spec.Trace, Warn: warn,
		Spec: sandbox.Spec{Argv: spec.Argv, WorkDir: sk.Vars.WorkDir, Env: env, BestEffort: spec.BestEffort, Home: sk.Vars.Home, Tier: spec.Tier,
			Keep: KeptPaths(sk, spec.Policy, spec.Keep...), Limits: limits, Options: spec.Debug, HomeStore: homeDir, HomeGit: homeGit, SetEnv: sk.Exports},
		Launching: care.launching,
		Serve: func(eg sandbox.Egress) {
			proxy = newProxy(sk, spec, audit, r, asker, eg)
			for _, ln := range eg.Listeners {
				go proxy.Serve(ln)
			}
			if eg.DNS != nil {
				go proxy.ServeDNS(eg.DNS)
			}
		}})
	r.Stage = out.Stage
	r.Protections, r.Dropped, r.Cgroup = out.Protections, out.Dropped, out.Cgroup
	if out.Plan != nil {
		t := out.Plan.Tier
		r.Tier = &t
		r.HomeStore = out.Plan.HomeStore
	}
	for _, w := range out.Warnings {
		if !slices.Contains(r.Warnings, w) { // an alert was warned already
			r.Warnings = append(r.Warnings, w)
		}
	}
	if len(out.Lookups) > 0 {
		warn(noNetworkNote(out.Lookups))
	}
	r.Created, r.Replaced = append(r.Created, out.Created...), out.Replaced
	keepFSDenials(r, out.FS, sk.Vars)
	care.done(r, out.Result != nil && out.Result.Started, out.Plan != nil && out.Plan.Trace, trace)
	if proxy != nil {
		proxy.Close()
		r.ProxyDenials, r.ProxyDenialsMore = r.Proxy.Denials()
		r.NetworkBudgets = proxy.BudgetHits()
		if aerr := r.Proxy.Err(); aerr != nil {
			warn(fmt.Sprintf("writing the audit log: %v", aerr))
		}
	}
	return ended(r, out.Result, err, spec.Argv[0])
}

// preflight caps the skills with the agent policy and checks the command
// with the skills' engine (and sh -c scripts), then with the policy's
// rules, before anything starts (about 50 µs): a refused command costs no
// namespaces. It returns the capped skills.
func preflight(ctx context.Context, spec Spec, r *Result, audit *auditLog, asker *asking) (*Skills, error) {
	deny := func(permission, context string, d policyengine.Decision) error {
		d.Reason = printable.Clip(d.Reason, MaxLogged)
		den := Denial{Time: time.Now(), Agent: spec.Agent, Permission: permission, Context: printable.Clip(context, MaxLogged), Decision: d}
		r.Denials = append(r.Denials, den)
		if permission == "exec" && d.Layer == "" { // the skills' exec list
			r.FSDenials = append(r.FSDenials, preflightFSDenial(spec.Argv[0], den))
		}
		audit.write(den)
		if d.NotFound {
			return &Error{Code: ExitNotFound, Err: errors.New(d.Reason)}
		}
		return &Error{Code: ExitNotAllowed, Err: fmt.Errorf("%w: %s", ErrNotPermitted, d.Reason)}
	}
	sk := spec.Skills
	policy := spec.Policy != nil && !spec.Policy.Empty()
	if policy {
		r.Stage = StagePolicy
		capped, notes, err := sk.Capped(spec.Policy)
		if err != nil {
			return nil, failed(err)
		}
		sk = capped
		r.Warnings = append(r.Warnings, notes...)
		r.Stage = StagePreflight
	}
	if st, err := os.Stat(sk.Vars.WorkDir); err != nil || !st.IsDir() {
		return nil, failed(fmt.Errorf("work dir %s is not a folder", sk.Vars.WorkDir))
	}
	line := commandLine(spec.Argv)
	d := sk.Engine.CheckArgv(spec.Argv)
	if d.Action != policyengine.Allow {
		return nil, deny("exec", line, d)
	}
	r.PreflightUnread = printable.Clip(d.Unread, MaxLogged)
	if policy {
		d := spec.Policy.CheckExec(line)
		if d.Action == policyengine.Confirm && !spec.Confirmed && asker != nil {
			ans := asker.command(ctx, line, d)
			if ans.Reply.Allows() {
				return sk, nil
			}
			d.Action = policyengine.Deny
			d.Reason += fmt.Sprintf("; the ask channel answered %s (by %s)", ans.Reply, ans.By)
			if ans.Note != "" {
				d.Reason += ": " + ans.Note
			}
		}
		if d.Action == policyengine.Confirm && !spec.Confirmed {
			d.Action = policyengine.Deny
			d.Reason += " (nobody can answer here: pass --confirmed once the user agreed)"
		}
		if d.Action == policyengine.Deny {
			return nil, deny("exec", line, d)
		}
	}
	return sk, nil
}

// runLimits are the skills' limits with the flags over them, capped by
// the agent policy (its caps hold against the flags too) and by ctx's
// deadline.
func runLimits(ctx context.Context, sk *Skills, spec Spec) sandbox.Limits {
	limits := sandbox.ResolveLimits(sk.Perms.Limits, spec.Limits)
	if spec.Policy != nil {
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
	return limits
}

// newProxy makes the run's egress proxy, auditing into r.Proxy.
func newProxy(sk *Skills, spec Spec, audit *auditLog, r *Result, asker *asking, eg sandbox.Egress) *netns.Proxy {
	var w io.Writer
	if spec.Audit != nil {
		w = audit
	}
	r.Proxy = netns.NewAudit(w)
	cfg := netns.Config{Engine: sk.Engine, Audit: r.Proxy.Record, Agent: spec.Agent, HostAddrs: netns.SystemHostAddrs(), Budgets: sk.Perms.Budgets}
	if spec.Policy != nil && !spec.Policy.Empty() {
		cfg.Policy = spec.Policy.WithHostAddrs(cfg.HostAddrs)
	}
	if asker != nil {
		cfg.Ask = asker.network
	}
	if cfg.Resolver = spec.Resolver; cfg.Resolver == nil {
		cfg.Resolver = netns.SystemResolver()
	}
	if len(spec.Resolve) > 0 {
		cfg.Resolver = &netns.Pinned{Names: spec.Resolve, Next: cfg.Resolver}
	}
	if eg.Originals != nil {
		cfg.Originals = eg.Originals
	}
	if eg.DNS != nil {
		cfg.DNS = netns.NewFakeDNS()
	}
	return netns.New(cfg)
}

// ended fills r with how the command ended (res, nil when it never ran)
// and says why it did not run its course (err from sandbox.Execute).
func ended(r *Result, res *sandbox.Result, err error, prog string) error {
	if res != nil {
		r.ExitCode, r.Signal, r.Wall, r.PeakMemory = res.ExitCode, res.Signal, res.Wall, res.MaxRSS
	}
	var notFound *sandbox.NotFoundError
	switch {
	case errors.As(err, &notFound):
		return &Error{Code: ExitNotFound, Err: err}
	case err != nil:
		return failed(err)
	}
	r.TimedOut, r.OOMKilled = res.TimedOut, res.OOMKills > 0
	if !res.Started && res.Stage == nil {
		// Given up before the plan (sandbox.Execute's givenUp): the stage
		// is where it was, and its error says why, as any stage's does.
		r.Error = "the run was given up before the command started: the timeout or the caller's context ended it"
		if res.Signal != 0 {
			r.Error = fmt.Sprintf("the run was given up before the command started: corral got %s", unix.SignalName(unix.Signal(res.Signal)))
		}
	}
	switch {
	case res.TimedOut:
		r.ExitCode = ExitTimeout
		return nil
	case res.OOMKills > 0 && (res.Signal == int(unix.SIGKILL) || res.ExitCode == ExitOOM):
		r.ExitCode = ExitOOM
	}
	if res.Stage != nil {
		return execFailure(prog, res.Stage)
	}
	return nil
}

// keepWarnings is Spec.Warn (or nothing) that also keeps each warning in
// r.Warnings: the report holds every warning a person was shown, so a
// caller that silences them (--quiet) loses none.
func keepWarnings(r *Result, f func(string)) func(string) {
	var mu sync.Mutex
	f = orNothing(f)
	return func(s string) {
		mu.Lock()
		r.Warnings = append(r.Warnings, s)
		mu.Unlock()
		f(s)
	}
}

// orNothing is f, or a function that does nothing.
func orNothing(f func(string)) func(string) {
	if f == nil {
		return func(string) {}
	}
	return f
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

// noNetworkNote says which names a command without network looked up, and
// the grant that would let them through the egress proxy.
func noNetworkNote(names []string) string {
	shown, grants := make([]string, 0, len(names)), make([]string, 0, len(names))
	for _, n := range names {
		n = printable.Clip(n, 253)
		shown = append(shown, n)
		grants = append(grants, strconv.Quote(n+":443"))
	}
	return fmt.Sprintf("the command looked up %s: no skill grants network (network.allow), so each lookup failed at once with \"no such name\"; to let the command reach them through corral's egress proxy, a skill's permissions would need network: {allow: [%s]}", strings.Join(shown, ", "), strings.Join(grants, ", "))
}
