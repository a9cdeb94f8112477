package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"corral/netns"
	"corral/policyengine"
	"corral/sandbox"
	"corral/skill"
)

var execCommand = command{
	name:  "exec",
	usage: "[--skill DIR]... [--work-dir D] [--data-dir D] [--memory SIZE] [--pids N] [--timeout DUR] [--kill-grace DUR] [--cgroup-parent PATH] [--report FILE] [--audit-log FILE] [--resolve NAME=ADDR]... [--best-effort] -- CMD [ARG]...",
	summary: `Run CMD in a sandbox built from the skills' merged permissions.
Exit status: the command's own; 128+N if a signal N killed it (137 when it
ran out of memory); 124 timed out; 125 corral failed; 126 the command is
not permitted; 127 the command was not found.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		var nf netFlags
		nf.register(fs)
		var lf limitFlags
		lf.register(fs)
		report := fs.String("report", "", "write a JSON report of the run to `file`")
		bestEffort := fs.Bool("best-effort", false, "run even if a protection cannot be enforced, naming each one that is missing")
		return func(args []string) error {
			if len(args) == 0 {
				return failed(errors.New("no command: write corral exec [flags] -- CMD [ARG]"))
			}
			r := &runReport{Argv: args}
			err := runExec(&sf, &nf, &lf, args, *bestEffort, r)
			if *report != "" {
				if werr := r.write(*report, err); werr != nil && err == nil {
					err = failed(werr)
				}
			}
			return err
		}
	},
}

// limitFlags override the skills' limits.
type limitFlags struct {
	values sandbox.LimitFlags
	parent string
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.Func("memory", "cap memory + swap at `SIZE` (512Mi, 2G; default 512Mi or the skills' limit)", func(s string) error {
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
	fs.Func("timeout", "end the command after `DUR` (30s, 5m): SIGTERM, then SIGKILL after --kill-grace; exit 124", func(s string) error {
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

// limitsProtection is the limits row of the protections table.
func limitsProtection(l sandbox.Limits, cg *sandbox.Cgroup, err error) sandbox.Protection {
	if err != nil {
		what := "the default caps are dropped with this warning; a limit a skill or a flag asks for fails the run (exit 125)"
		if l.Explicit {
			what = "a skill or a flag asked for limits, so exec refuses to run (exit 125) unless --best-effort is given"
		}
		return sandbox.Protection{Name: "limits", Detail: fmt.Sprintf("no cgroup, so no memory or process cap: %v; %s", err, what)}
	}
	return sandbox.Protection{Name: "limits", Enforced: true, Detail: fmt.Sprintf("cgroup v%d: %s", cg.Version, limitsText(l))}
}

type cgroupResult struct {
	cg  *sandbox.Cgroup
	err error
}

func removeCgroup(r cgroupResult) {
	if r.err != nil || r.cg == nil {
		return
	}
	if err := r.cg.Remove(); err != nil {
		fmt.Fprintf(os.Stderr, "corral: removing cgroup %s: %v\n", r.cg.Path, err)
	}
}

// runReport is the --report JSON.
type runReport struct {
	Argv        []string                `json:"argv"`
	ExitCode    int                     `json:"exit_code"`
	Signal      int                     `json:"signal,omitempty"`
	WallMS      float64                 `json:"wall_ms"`
	PeakMemory  int64                   `json:"peak_memory_bytes"`
	OOMKilled   bool                    `json:"oom_killed"`
	TimedOut    bool                    `json:"timed_out"`
	Protections []sandbox.Protection    `json:"protections"`
	Dropped     []string                `json:"dropped,omitempty"`
	Denials     []policyengine.Decision `json:"denials"`
	// ProxyDenials are the requests the egress proxy refused (at most
	// 1000; ProxyDenialsMore counts the rest).
	ProxyDenials     []netns.Event   `json:"proxy_denials,omitempty"`
	ProxyDenialsMore int             `json:"proxy_denials_more,omitempty"`
	Warnings         []string        `json:"warnings,omitempty"`
	Limits           *sandbox.Limits `json:"limits,omitempty"`
	Cgroup           string          `json:"cgroup,omitempty"`
	Created          []string        `json:"created,omitempty"`
	Error            string          `json:"error,omitempty"`
}

func (r *runReport) write(file string, runErr error) error {
	var ee *exitError
	if errors.As(runErr, &ee) {
		r.ExitCode = ee.Code
		if ee.Err != nil {
			r.Error = ee.Err.Error()
		}
	}
	if r.Denials == nil {
		r.Denials = []policyengine.Decision{}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

func runExec(sf *skillFlags, nf *netFlags, lf *limitFlags, argv []string, bestEffort bool, r *runReport) error {
	trace := func(string) {}
	if os.Getenv("CORRAL_TRACE") == "1" {
		trace = func(step string) {
			fmt.Fprintf(os.Stderr, "corral exec: %-12s (at %d)\n", step, time.Now().UnixMicro()%1e7)
		}
	}
	trace("main")
	l, err := sf.load()
	if err != nil {
		return failed(err)
	}
	sandbox.Prepare(l.perms)
	if st, err := os.Stat(l.vars.WorkDir); err != nil || !st.IsDir() {
		return failed(fmt.Errorf("work dir %s is not a folder", l.vars.WorkDir))
	}
	// Preflight: the policy engine checks the command (and sh -c scripts)
	// before anything starts.
	if d := l.engine.CheckArgv(argv); d.Action != policyengine.Allow {
		r.Denials = append(r.Denials, d)
		return &exitError{Code: exitNotAllowed, Err: fmt.Errorf("not permitted: %s", d.Reason)}
	}
	created, err := createWriteRoots(l)
	r.Created = created
	if err != nil {
		return failed(err)
	}
	// The cgroup is made while the init boots and the plan is built.
	limits := sandbox.ResolveLimits(l.perms.Limits, lf.values)
	r.Limits = &limits
	cgDone := make(chan cgroupResult, 1)
	go func() {
		sandbox.RemoveStale(lf.parent)
		cg, err := sandbox.NewCgroup(lf.parent, limits.Memory, limits.Pids)
		cgDone <- cgroupResult{cg, err}
	}()
	// The init starts now and boots while the plan is built.
	trace("loaded")
	launch, err := sandbox.Start(sandbox.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		removeCgroup(<-cgDone)
		return failed(err)
	}
	trace("started")
	spec := sandbox.Spec{Argv: argv, WorkDir: l.vars.WorkDir, Env: os.Environ(), BestEffort: bestEffort}
	plan, err := sandbox.BuildPlan(l.perms, spec, sandbox.Probe(l.perms, spec))
	var notFound *sandbox.NotFoundError
	switch {
	case errors.As(err, &notFound):
		launch.Abort()
		removeCgroup(<-cgDone)
		return &exitError{Code: exitNotFound, Err: err}
	case err != nil:
		launch.Abort()
		removeCgroup(<-cgDone)
		return failed(err)
	}
	plan.Limits = limits
	cgr := <-cgDone
	defer func() {
		t := time.Now()
		removeCgroup(cgr)
		if plan.Trace && cgr.err == nil {
			fmt.Fprintf(os.Stderr, "corral exec: cgroup removed in %d µs\n", time.Since(t).Microseconds())
		}
	}()
	if cgr.err != nil && limits.Explicit && !bestEffort {
		launch.Abort()
		return failed(fmt.Errorf("%w: cannot enforce the memory and process limits (%s, %s): %v", sandbox.ErrProtection, limits.MemoryFrom, limits.PidsFrom, cgr.err))
	}
	if cgr.err == nil {
		r.Cgroup = cgr.cg.Path
		plan.CgroupFiles = cgr.cg.JoinFiles()
	}
	plan.Protections = append(plan.Protections, limitsProtection(limits, cgr.cg, cgr.err))
	plan.Trace = os.Getenv("CORRAL_TRACE") == "1"
	r.Protections, r.Warnings = plan.Protections, plan.Warnings
	for _, p := range plan.Protections {
		if !p.Enforced {
			r.Dropped = append(r.Dropped, p.Name)
			fmt.Fprintf(os.Stderr, "corral exec: warning: running without %s: %s\n", p.Name, p.Detail)
		}
	}
	trace("planned")
	var proxy *netns.Proxy
	var audit *netns.Audit
	if plan.Proxy != nil {
		var closeLog func() error
		audit, closeLog, err = nf.audit()
		if err != nil {
			launch.Abort()
			return failed(err)
		}
		defer closeLog()
		proxy = netns.New(nf.config(l, audit))
	}
	res, err := launch.Run(plan, sandbox.RunOptions{Cgroup: cgr.cg, Timeout: limits.Timeout, KillGrace: limits.KillGrace, Serve: func(files []*os.File) {
		for _, f := range files {
			ln, lerr := net.FileListener(f)
			f.Close()
			if lerr != nil {
				fmt.Fprintf(os.Stderr, "corral exec: proxy listener: %v\n", lerr)
				continue
			}
			go proxy.Serve(ln)
		}
	}})
	trace("done")
	if proxy != nil {
		proxy.Close()
		r.ProxyDenials, r.ProxyDenialsMore = audit.Denials()
		if s := denialSummary(audit); s != "" {
			fmt.Fprint(os.Stderr, s)
		}
		if aerr := audit.Err(); aerr != nil {
			fmt.Fprintf(os.Stderr, "corral exec: writing the audit log: %v\n", aerr)
		}
	}
	if res != nil {
		r.ExitCode, r.Signal, r.WallMS, r.PeakMemory = res.ExitCode, res.Signal, float64(res.Wall.Microseconds())/1000, res.MaxRSS
	}
	if err != nil {
		return failed(err)
	}
	r.TimedOut, r.OOMKilled = res.TimedOut, res.OOMKills > 0
	switch {
	case res.TimedOut:
		fmt.Fprintf(os.Stderr, "corral: timed out after %s (%s); the command got SIGTERM, and the sandbox SIGKILL %s later if still running\n", limits.Timeout, limits.TimeoutFrom, limits.KillGrace)
		return &exitError{Code: exitTimeout}
	case res.OOMKills > 0:
		fmt.Fprintf(os.Stderr, "corral: out of memory: limit %s (%s); the kernel killed %d process(es)\n", formatSize(limits.Memory), limits.MemoryFrom, res.OOMKills)
		if res.Signal == int(unix.SIGKILL) || res.ExitCode == 137 {
			return &exitError{Code: 137}
		}
	}
	if res.Stage != nil {
		return execFailure(argv[0], res.Stage)
	}
	if res.ExitCode != 0 {
		return &exitError{Code: res.ExitCode}
	}
	return nil
}

// execFailure maps a failed exec inside the sandbox to 126 or 127.
func execFailure(prog string, e *sandbox.StageError) error {
	switch unix.Errno(e.Errno) {
	case unix.ENOENT:
		return &exitError{Code: exitNotFound, Err: fmt.Errorf("%s: command not found in the sandbox", prog)}
	case unix.EACCES, unix.EPERM:
		return &exitError{Code: exitNotAllowed, Err: fmt.Errorf("%s: the sandbox refused to execute it (%s)", prog, e.Message)}
	}
	return failed(fmt.Errorf("starting %s: %w", prog, e))
}

// createWriteRoots creates missing folders that fs.write grants as a whole
// (such as $WORK_DIR/out/**) inside the work dir or a $DATA_DIR, so the
// kernel has something to attach the grant to, and a missing .git/hooks in
// a writable repository, so it can be protected.
func createWriteRoots(l *loaded) ([]string, error) {
	var created []string
	for _, e := range l.perms.Write {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil || !g.Subtree() {
			continue
		}
		dir := g.Base()
		root := l.vars.WorkDir
		if !within(dir, root) {
			root = l.vars.DataDir
			if !within(dir, root) {
				continue
			}
		}
		made, err := mkdirNoFollow(root, dir)
		created = append(created, made...)
		if err != nil {
			return created, fmt.Errorf("creating %s for %s: %w", dir, e.Value, err)
		}
		// A repository without a hooks folder would let the command
		// create one; an empty one is what git init makes anyway, and it
		// is then protected read-only like any other.
		git := filepath.Join(dir, ".git")
		if st, err := os.Lstat(git); err == nil && st.IsDir() {
			hooks := filepath.Join(git, "hooks")
			if _, err := os.Lstat(hooks); err != nil {
				if err := os.Mkdir(hooks, 0o755); err != nil {
					return created, fmt.Errorf("creating %s: %w", hooks, err)
				}
				created = append(created, hooks)
			}
		}
	}
	return created, nil
}

// mkdirNoFollow creates dir and its missing parents below root without
// following symlinks: a link planted by an earlier sandboxed run must not
// send corral's own mkdir outside the work dir.
func mkdirNoFollow(root, dir string) ([]string, error) {
	var made []string
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return nil, err
	}
	p := root
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			return made, fmt.Errorf("%s is a symlink", p)
		case err == nil:
			continue
		case !errors.Is(err, os.ErrNotExist):
			return made, err
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			return made, err
		}
		made = append(made, p)
	}
	return made, nil
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
