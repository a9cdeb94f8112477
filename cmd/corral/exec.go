package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"corral.dev/corral"
	askch "corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/skill"
)

var execCommand = command{
	name:  "exec",
	usage: "-- CMD [ARG]...",
	summary: `Run CMD in a sandbox built from the skills' merged permissions, capped
by the agent policy.
Exit status: the command's own; 128+N if a signal N killed it (137 when it
ran out of memory); 124 timed out; 125 corral failed; 126 the command is
not permitted; 127 the command was not found.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		f := newExecFlags(fs)
		// (fs.Output() is the stderr run was given.)
		return func(args []string) error { return f.run(args, nil, fs.Output()) }
	},
	// A flag error still gets its report, where the flags corral could
	// read ask for one, and goes where corral's messages go.
	badFlags: func(args []string, err error, stderr io.Writer) error {
		fs := flag.NewFlagSet("corral exec", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := newExecFlags(fs)
		return f.run(scanFlags(fs, args), err, stderr)
	},
}

// execFlags are exec's flags.
type execFlags struct {
	sf       skillFlags
	nf       netFlags
	lf       limitFlags
	pf       policyFlags
	out      outputFlags
	rf       runFlags
	af       askFlags
	auditMax int64
}

func newExecFlags(fs *flag.FlagSet) *execFlags {
	f := &execFlags{auditMax: defaultAuditMax, rf: runFlags{tier: sandbox.TierAuto}}
	f.sf.register(fs)
	f.nf.register(fs)
	f.lf.register(fs)
	f.pf.register(fs)
	f.out.register(fs)
	f.af.register(fs)
	fs.Func("audit-log-max", "stop writing --audit-log entries past `SIZE` for this run, and end with one saying how many were dropped (default 4Mi)", func(s string) error {
		n, err := skill.ParseBytes(s)
		f.auditMax = n
		return err
	})
	fs.BoolVar(&f.rf.bestEffort, "best-effort", false, "run even if a protection cannot be enforced, naming each one that is missing")
	fs.BoolVar(&f.rf.freshHome, "fresh-home", false, "give the sandbox's private HOME nothing from earlier runs (by default its caches, ~/.cache, ~/go/pkg/mod, ~/.npm and the like, are kept between runs with the same work dir and skills)")
	fs.BoolVar(&f.rf.confirmed, "confirmed", false, "the user agreed to what the agent policy says needs confirmation")
	fs.Func("tier", "the sandbox `TIER`: auto (the namespaces tier where the host allows user namespaces, else the landlock tier), namespaces, or landlock (no namespaces: Landlock, seccomp and corral's connect supervisor; see corral doctor)", func(s string) error {
		t, err := sandbox.ParseTier(s)
		f.rf.tier = t
		return err
	})
	return f
}

// run runs argv and writes the report; corral's messages go to stderr
// unless --log-fd says otherwise. flagErr is the command line's error
// when flag refused it: then nothing runs, and the report and corral's
// messages say so.
func (f *execFlags) run(argv []string, flagErr error, stderr io.Writer) error {
	r := &corral.Result{Argv: argv, Stage: corral.StageFlags}
	m, err := f.out.messages(stderr)
	switch {
	case flagErr != nil:
		err = failed(flagErr)
	case err == nil && len(argv) == 0:
		err = failed(errors.New("no command: write corral exec [flags] -- CMD [ARG]"))
	}
	var l *corral.Skills
	if err == nil {
		corral.PrepareRun() // overlaps loading the skills
		r.Stage = corral.StageSkills
		var loadErr error
		if l, loadErr = f.sf.load(); loadErr != nil {
			err = failed(loadErr)
		}
	} else if f.out.reporting() {
		l, _ = f.sf.load() // for the write roots the report must stay out of
	}
	var roots []string // resolving them costs a few lstat calls
	if f.out.reporting() || f.nf.auditLog != "" {
		roots = writableRoots(&f.sf, l)
	}
	// corral's files are opened before anything runs, so a refused run
	// (125, 126, 127) still gets its report, and nothing the command
	// does to the paths matters.
	reports, openErr := f.out.openReports(roots)
	defer func() {
		for _, rep := range reports {
			rep.Close()
		}
	}()
	if openErr != nil && err == nil {
		r.Stage, err = corral.StageFlags, failed(openErr)
	}
	if err == nil {
		ch, askErr := f.af.open(f.out.reportFD, f.out.logFD)
		if askErr != nil {
			r.Stage, err = corral.StageFlags, failed(askErr)
		} else if ch != nil {
			defer ch.Close()
			f.rf.ask, f.rf.rememberTo = ch, f.pf.project
		}
	}
	if err == nil {
		err = runExec(l, &f.nf, &f.lf, &f.pf, argv, f.rf, roots, f.auditMax, r, m)
	}
	for _, rep := range reports {
		if werr := writeReport(rep, r, err); werr != nil && err == nil {
			err = failed(werr)
		}
	}
	return m.exit(err)
}

// limitFlags override the skills' limits.
type limitFlags struct {
	values sandbox.LimitFlags
	parent string
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.Func("memory", "cap memory + swap at `SIZE` (512m, 2g, 1.5GiB: units are powers of 1024, as in Docker; default 512Mi or the skills' limit)", func(s string) error {
		n, err := skill.ParseSize(s)
		if err == nil && n <= 0 {
			err = errors.New("must be positive")
		}
		f.values.Memory = n
		return err
	})
	fs.Func("pids", "cap the sandbox at `N` processes (default 1024 or the skills' limit)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive number", s)
		}
		f.values.Pids = n
		return nil
	})
	fs.Func("timeout", "end the command after `DUR` (90 for seconds, 30s, 5m; none for no timeout): SIGTERM, then SIGKILL after --kill-grace; exit 124 (default 2m or the skills' limit)", func(s string) error {
		if s == "none" || s == "0" {
			f.values.Timeout, f.values.NoTimeout = 0, true
			return nil
		}
		f.values.NoTimeout = false
		d, err := skill.ParseDuration(s)
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		f.values.Timeout = d
		return err
	})
	fs.Func("kill-grace", "wait `DUR` between SIGTERM and SIGKILL at the timeout (default 2s)", func(s string) error {
		d, err := skill.ParseDuration(s)
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		f.values.KillGrace = d
		return err
	})
	fs.StringVar(&f.parent, "cgroup-parent", "", "make the run's cgroup under `PATH` (relative to the cgroup root; default: corral/ inside corral's own cgroup)")
}

// writeReport writes r, the run's Result, as the report. A failure of
// corral's own before or after corral.Run (runErr) is recorded in it the
// way Run records its own.
func writeReport(file *outFile, r *corral.Result, runErr error) error {
	var ee *exitError
	if errors.As(runErr, &ee) && r.Error == "" {
		r.ExitCode = ee.Code
		if ee.Err != nil {
			r.Error = ee.Err.Error()
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return file.replace(append(data, '\n'))
}

// defaultAuditMax is --audit-log-max's default: a run's audit entries are
// a few hundred bytes each, so a run that writes more is a command
// sending request after request to be refused.
const defaultAuditMax = 4 << 20

// writableRoots are the folders the sandbox of this run can write (and
// the work dir, which earlier runs could): corral's own files must be
// outside them. With skills that did not load, the work dir.
func writableRoots(sf *skillFlags, l *corral.Skills) []string {
	if l != nil {
		return sandbox.WritableRoots(l.Perms, l.Vars.WorkDir)
	}
	work := sf.workDir
	if work == "" {
		work, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(work); err == nil {
		work = abs
	}
	return sandbox.WritableRoots(policyengine.Permissions{}, work)
}

// runFlags are exec's flags that go into corral.Spec as they are.
type runFlags struct {
	bestEffort, confirmed, freshHome bool
	tier                             sandbox.Tier
	ask                              askch.Asker // --ask-fd's channel
	rememberTo                       string      // --policy, where remember writes
}

func runExec(l *corral.Skills, nf *netFlags, lf *limitFlags, pf *policyFlags, argv []string, rf runFlags, roots []string, auditMax int64, r *corral.Result, m *messages) error {
	spec := corral.Spec{Argv: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Limits: lf.values, CgroupParent: lf.parent,
		BestEffort: rf.bestEffort, FreshHome: rf.freshHome, Confirmed: rf.confirmed, Tier: rf.tier, Agent: pf.agent, Resolve: nf.pins, Ask: rf.ask, RememberTo: rf.rememberTo,
		Warn: func(s string) { m.note("corral exec: warning: " + s + "\n") }}
	if os.Getenv("CORRAL_TRACE") == "1" {
		spec.Trace = func(step string) {
			m.trace(fmt.Sprintf("corral exec: %-12s (at %d)\n", step, time.Now().UnixMicro()%1e7))
		}
		spec.Trace("main")
		spec.Debug.TraceInit = true
	}
	r.Stage = corral.StageFlags
	if err := testHooks(&spec); err != nil {
		return failed(err)
	}
	spec.Skills = l
	var err error
	r.Stage = corral.StagePolicy
	if spec.Policy, err = pf.load(l); err != nil {
		return failed(err)
	}
	if pf.global != "" {
		// Missing now, it must not be created by the run either.
		spec.Keep = append(spec.Keep, pf.global)
	}
	if nf.auditLog != "" {
		f, err := openOutput("--audit-log", nf.auditLog, roots, true)
		if err != nil {
			r.Stage = corral.StageFlags
			return failed(err)
		}
		f.limit, f.agent = auditMax, pf.agent
		defer f.Close()
		spec.Audit = f
	}
	res, err := corral.Run(context.Background(), spec)
	*r = *res
	if res != nil && res.Proxy != nil {
		if s := denialSummary(res.Proxy); s != "" {
			m.note(s)
		}
		if s := budgetSummary(res.NetworkBudgets); s != "" {
			m.note(s)
		}
	}
	if res != nil {
		if s := fsDenialSummary(res); s != "" {
			m.note(s)
		}
	}
	var ce *corral.Error
	if errors.As(err, &ce) {
		return &exitError{Code: ce.Code, Err: ce.Err}
	}
	if err != nil {
		return failed(err)
	}
	switch {
	case res.TimedOut:
		// (Where a limit came from names skills, which a project's own
		// folder holds: escaped like every line.)
		m.note(fmt.Sprintf("corral: timed out after %s (%s); the command got SIGTERM, and the sandbox SIGKILL %s later if still running\n", res.Limits.Timeout, res.Limits.TimeoutFrom, res.Limits.KillGrace))
	case res.OOMKilled:
		m.note(fmt.Sprintf("corral: out of memory: limit %s (%s); the kernel killed the command or one of its processes\n", sandbox.FormatSize(res.Limits.Memory), res.Limits.MemoryFrom))
	}
	if res.ExitCode != 0 {
		return &exitError{Code: res.ExitCode}
	}
	return nil
}
