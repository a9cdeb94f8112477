package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RunInit is the sandbox's PID 1. It runs on the main thread, locked by
// the caller before anything else: Landlock, capabilities and
// no_new_privs are per thread, and the command is forked from this thread
// so it inherits them. It never returns.
func RunInit() {
	out := os.NewFile(statusFD, "status")
	report := func(s status) {
		data, _ := json.Marshal(s)
		out.Write(append(data, '\n'))
	}
	fail := func(stage string, err error) {
		e := &StageError{Stage: stage, Message: err.Error()}
		var errno unix.Errno
		if errors.As(err, &errno) {
			e.Errno = int(errno)
		}
		report(status{Error: e})
		os.Exit(1)
	}
	// Signals from corral are forwarded to the command. Asking for them
	// first lets the runtime's signal goroutine start while the plan is
	// read and the mounts are made.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH)
	unix.CloseOnExec(planFD)
	unix.CloseOnExec(statusFD)
	var plan Plan
	in := os.NewFile(planFD, "plan")
	if err := json.NewDecoder(bufio.NewReader(in)).Decode(&plan); err != nil {
		fail("reading plan", err)
	}
	in.Close()
	last := time.Now()
	step := func(name string) {
		if plan.Trace {
			now := time.Now()
			fmt.Fprintf(os.Stderr, "corral init: %-12s %6.0f µs (at %d)\n", name, float64(now.Sub(last).Nanoseconds())/1e3, now.UnixMicro()%1e7)
			last = now
		}
	}
	step("plan")
	// Nothing may trace or dump this process's memory.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	if err := setupMounts(&plan); err != nil {
		fail("mounts", err)
	}
	step("mounts")
	if err := loopbackUp(); err != nil {
		fail("network", err)
	}
	step("lo up")
	if err := unix.Sethostname([]byte(plan.Hostname)); err != nil {
		fail("hostname", &os.SyscallError{Syscall: "sethostname", Err: err})
	}
	if err := dropPrivileges(); err != nil {
		fail("capabilities", err)
	}
	if err := applyLandlock(&plan.Landlock); err != nil {
		fail("landlock", err)
	}
	step("landlock")
	if err := clearCapabilities(); err != nil {
		fail("capabilities", err)
	}
	step("capset")
	// Seccomp goes last: after it, nothing may set up anything.
	if err := loadBPF(plan.SeccompBPF); err != nil {
		fail("seccomp", err)
	}
	step("seccomp")
	pid, err := syscall.ForkExec(plan.Path, plan.Argv, &syscall.ProcAttr{
		Dir:   plan.Dir,
		Env:   plan.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		fail("exec", err)
	}
	report(status{Started: pid})
	step("fork+exec")
	go func() {
		for s := range signals {
			unix.Kill(pid, s.(unix.Signal))
		}
	}()
	code, sig := reap(pid)
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	report(status{Exit: &exitStatus{Code: code, Signal: sig, MaxRSSKB: ru.Maxrss}})
	// Leaving kills every process still in the PID namespace.
	os.Exit(0)
}

// reap waits for every child (orphans are re-parented to PID 1) until the
// command itself ends, and returns its exit code or signal.
func reap(cmd int) (code, sig int) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 255, 0
		}
		if pid != cmd {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal())
		}
		return ws.ExitStatus(), 0
	}
}

// loopbackUp brings lo up in the sandbox's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "socket", Err: err}
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return &os.SyscallError{Syscall: "ioctl(SIOCGIFFLAGS)", Err: err}
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return &os.SyscallError{Syscall: "ioctl(SIOCSIFFLAGS)", Err: err}
	}
	return nil
}
