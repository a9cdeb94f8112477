package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/seatbelt"
)

// On macOS the sandbox is one Seatbelt profile: corral renders it from
// the plan's permissions (package seatbelt) and runs the command as
//
//	/usr/bin/sandbox-exec -p PROFILE -D NAME=VALUE... PATH ARG...
//
// sandbox-exec applies the profile to itself and execs the command, so
// the command and everything it starts are confined. There is no init
// stage and no helper process: corral serves the egress proxy itself on
// 127.0.0.1 (and [::1]) at a port chosen per run, which the profile is the
// only address allowed to reach, and makes a private TMPDIR for the run.

// sandboxExec is the one sandbox-exec corral runs: never one found on PATH.
const sandboxExec = "/usr/bin/sandbox-exec"

// forwarded are the signals corral passes on to the command's process
// group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// Launch is a sandbox about to run. On macOS nothing starts before Run
// has the plan; Start only checks for sandbox-exec and catches the
// signals corral forwards.
type Launch struct {
	stdio   Stdio
	start   time.Time
	signals chan os.Signal
}

// Start prepares a run with the command's streams.
func Start(stdio Stdio, _ Tier) (*Launch, error) {
	if st, err := os.Stat(sandboxExec); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: Seatbelt needs %s: %v", ErrProtection, sandboxExec, err)
	}
	l := &Launch{stdio: stdio, start: time.Now()}
	if stdio.Signals != nil {
		l.signals = stdio.Signals.channel()
	} else {
		l.signals = make(chan os.Signal, 8)
		signal.Notify(l.signals, forwarded...)
	}
	return l, nil
}

// Abort ends a launch that will get no plan.
func (l *Launch) Abort() { signal.Stop(l.signals) }

// Ending is never closed here: nothing waits before the plan.
func (l *Launch) Ending() <-chan struct{} { return nil }

// EndSignal is 0 here.
func (l *Launch) EndSignal() int { return 0 }

// Started has nothing to wait for here: Start did it all.
func (l *Launch) Started() error { return nil }

// Run runs the plan's command under sandbox-exec and waits for it. When
// the plan has a proxy, opts.Serve gets the listening sockets before the
// command starts. The timeout (or closing opts.Done) sends SIGTERM to the
// command's process group and SIGKILL after opts.KillGrace; when the
// command ends, what is left of its group is killed. The returned error
// means corral failed; the command's own failure is in the Result.
func (l *Launch) Run(plan *Plan, opts RunOptions) (*Result, error) {
	defer signal.Stop(l.signals)
	if len(plan.Argv) == 0 {
		return nil, errors.New("the plan has no command")
	}
	tmp, err := os.MkdirTemp("", "corral-run-")
	if err != nil {
		return nil, fmt.Errorf("making the run's TMPDIR: %w", err)
	}
	defer os.RemoveAll(tmp)
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real // /var/folders/... is /private/var/folders/...
	}
	cmd, err := l.command(plan, opts, tmp)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", sandboxExec, err)
	}
	return l.wait(cmd, opts)
}

// command is sandbox-exec running the plan's command under its rendered
// Seatbelt profile, with TMPDIR (tmp) of its own and, with a proxy in the
// plan, the proxy listening and named in the environment.
func (l *Launch) command(plan *Plan, opts RunOptions, tmp string) (*exec.Cmd, error) {
	env := setEnv(plan.Env, "TMPDIR", tmp)
	port := 0
	if plan.Proxy != nil {
		files, addrs, err := listenProxy()
		if err != nil {
			return nil, fmt.Errorf("listening for the egress proxy: %w", err)
		}
		port = addrs[0].Port
		plan.Proxy.Port, plan.Proxy.Addrs = port, nil
		for _, a := range addrs {
			plan.Proxy.Addrs = append(plan.Proxy.Addrs, a.String())
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
			env = setEnv(setEnv(env, k, url), strings.ToLower(k), url)
		}
		opts.Serve(files)
	}
	prof, err := seatbelt.Render(plan.perms, seatbelt.Options{
		ProxyPort: port,
		TmpDir:    tmp,
		Programs:  execPaths(plan),
		RealPaths: realPaths(plan.perms),
		Home:      plan.home,
		Keep:      plan.keep,
	})
	if err != nil {
		return nil, fmt.Errorf("rendering the Seatbelt profile: %w", err)
	}
	args := append([]string{sandboxExec, "-p", prof.Text}, prof.Args()...)
	args = append(append(args, plan.Path), plan.Argv[1:]...)
	return &exec.Cmd{
		Path:   sandboxExec,
		Args:   args,
		Env:    env,
		Dir:    plan.Dir,
		Stdin:  l.stdio.Stdin,
		Stdout: l.stdio.Stdout,
		Stderr: l.stdio.Stderr,
		// Its own session: no controlling terminal, and a process group
		// corral can signal and kill as a whole.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}, nil
}

// wait waits for the started cmd, forwarding signals to its process group
// and ending it when opts.Timeout passes or opts.Done closes.
func (l *Launch) wait(cmd *exec.Cmd, opts RunOptions) (*Result, error) {
	res := &Result{ExitCode: 255, Started: true}
	var mu sync.Mutex
	timedOut, over := false, false
	// group signals the command's process group, until the run is over
	// (a late timer must not hit a group id the system has reused).
	group := func(sig syscall.Signal) {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			syscall.Kill(-cmd.Process.Pid, sig)
		}
	}
	end := func() {
		mu.Lock()
		first := !timedOut
		timedOut = true
		mu.Unlock()
		if first {
			group(syscall.SIGTERM)
			time.AfterFunc(opts.KillGrace, func() { group(syscall.SIGKILL) })
		}
	}
	if opts.Timeout > 0 {
		timer := time.AfterFunc(opts.Timeout, end)
		defer timer.Stop()
	}
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		for {
			select {
			case s := <-l.signals:
				if sig, ok := s.(syscall.Signal); ok {
					group(sig)
				}
			case <-opts.Done:
				end()
			case <-finished:
				return
			}
		}
	}()
	werr := cmd.Wait()
	// Background processes the command left in its group end with it,
	// as they do with the PID namespace on Linux.
	group(syscall.SIGKILL)
	res.Wall = time.Since(l.start)
	mu.Lock()
	res.TimedOut, over = timedOut, true
	mu.Unlock()
	if cmd.ProcessState == nil {
		return res, fmt.Errorf("waiting for %s: %w", sandboxExec, werr)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			res.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			res.Signal = int(ws.Signal())
			res.ExitCode = 128 + res.Signal
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSS = ru.Maxrss // bytes on macOS
	}
	return res, nil
}

// listenProxy listens on 127.0.0.1 at a free port, and on [::1] at the
// same port where the host has IPv6: the profile allows "localhost:PORT",
// which is both, so nothing else may hold [::1]:PORT. It returns the
// listeners as files (for RunOptions.Serve) and their addresses.
func listenProxy() ([]*os.File, []*net.TCPAddr, error) {
	for range 16 {
		ln4, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, nil, err
		}
		lns := []*net.TCPListener{ln4}
		port := ln4.Addr().(*net.TCPAddr).Port
		ln6, err := net.ListenTCP("tcp6", &net.TCPAddr{IP: net.IPv6loopback, Port: port})
		switch {
		case err == nil:
			lns = append(lns, ln6)
		case errors.Is(err, syscall.EADDRINUSE):
			ln4.Close() // another program has [::1]:port: try another port
			continue
		}
		// Any other error: no IPv6 loopback, so nothing listens there.
		var files []*os.File
		var addrs []*net.TCPAddr
		var ferr error
		for _, ln := range lns {
			f, err := ln.File()
			if err != nil && ferr == nil {
				ferr = err
			}
			if err == nil {
				files = append(files, f)
				addrs = append(addrs, ln.Addr().(*net.TCPAddr))
			}
			ln.Close()
		}
		if ferr != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, ferr
		}
		return files, addrs, nil
	}
	return nil, nil, errors.New("no port free on both 127.0.0.1 and [::1]")
}

// setEnv sets k=v in env, replacing an existing k.
func setEnv(env []string, k, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// execPaths are the resolved programs and interpreters the plan allows.
func execPaths(plan *Plan) []string {
	var out []string
	for _, t := range plan.Exec.Allowed {
		out = append(out, t.Path)
	}
	return out
}

// realPaths maps each grant's base folder to its real path where
// symlinks lead elsewhere. BuildPlan has already refused grants through
// links a sandboxed command could have planted.
func realPaths(p policyengine.Permissions) map[string]string {
	out := map[string]string{}
	for _, list := range [][]policyengine.Entry{p.Read, p.Write} {
		for _, e := range list {
			g, err := policyengine.CompileGlob(e.Value)
			if err != nil {
				continue
			}
			if real, err := filepath.EvalSymlinks(g.Base()); err == nil && real != g.Base() {
				out[g.Base()] = real
			}
		}
	}
	return out
}

// Tier is macOS's one way to sandbox: a Seatbelt profile.
func (l *Launch) Tier() (TierInfo, error) { return TierInfo{Name: "seatbelt", Why: "macOS"}, nil }

// Pid is 0 on macOS: the command starts only with Run.
func (l *Launch) Pid() int { return 0 }
