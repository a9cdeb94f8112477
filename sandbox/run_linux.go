package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/cgroup"
	"corral.dev/corral/sandbox/stage"
)

// forwarded are the signals corral passes on to the command (protocol.h).
var forwarded = stage.Forwarded

// Launch is a started sandbox init waiting for its plan. Starting the init
// before the plan is built lets the plan's work (probing the host,
// compiling seccomp) overlap the init's own start-up.
type Launch struct {
	started  func() error // waits until the init is exec'd
	proc     *stage.Proc
	hold     *os.File // closing it ends the thread that started the init
	planW    *os.File
	proxyR   *os.File // receives the proxy listeners from the init
	statusR  *os.File
	mu       sync.Mutex
	timedOut bool
	statuses chan status
	signals  *Signals // forwarded to the init once it runs
	ownSigs  bool     // Start made them (no Stdio.Signals)
	stopped  sync.Once
	start    time.Time
	// The mount cache file the init builds ahead from (an adopted early
	// init only; mountcache_linux.go) and its key.
	mountCache    string
	mountCacheKey uint64
	// The tier the shim reports first (closed tierKnown), or the failure
	// that came instead (tierErr).
	tierKnown chan struct{}
	tier      TierInfo
	tierErr   *StageError
	// late replace the init's descriptors 0-2 (Stdio.Late).
	late [3]*os.File
}

// Pid is the pid of the process Start started: the shim, which forks the
// sandbox's PID 1 and kills the rest as it dies.
func (l *Launch) Pid() int { return l.proc.Pid }

// Start starts the init stage in new namespaces (or, as tier says, in
// none) and returns at once; the init is exec'd on a thread of its own
// (spawn_linux.c) while the caller goes on. It runs nothing until Run
// hands it a plan; Abort ends it. Tier says which tier it got.
func Start(stdio Stdio, tier Tier) (*Launch, error) { return start(stdio, tier, true) }

func start(stdio Stdio, tier Tier, early bool) (*Launch, error) {
	l := &Launch{start: time.Now(), signals: stdio.Signals, tierKnown: make(chan struct{}), late: stdio.Late}
	if early && stdio.Stdin == os.Stdin && stdio.Stdout == os.Stdout && stdio.Stderr == os.Stderr {
		if e, ok := stage.TakeEarly(); ok {
			if l.signals == nil {
				l.signals, l.ownSigs = NotifySignals(), true
			}
			return l.adopt(e), nil
		}
	}
	if l.signals != nil && l.signals.native {
		// They go to an init this launch does not take.
		l.signals.Stop()
		l.signals = nil
	}
	if l.signals == nil {
		l.signals, l.ownSigs = NotifySignals(), true
	}
	// What the init gets, and the launcher's ends of it; the spawner
	// thread owns result[1] and hold[0] from the call on.
	var theirs []*os.File
	defer func() {
		for _, f := range theirs {
			f.Close()
		}
	}()
	failed := func(err error) (*Launch, error) {
		l.release()
		return nil, err
	}
	planR, planW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	l.planW, theirs = planW, append(theirs, planR)
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	l.statusR, theirs = statusR, append(theirs, statusW)
	// The init hands corral the proxy's listening sockets over this pair
	// when the plan has a proxy; otherwise it just closes its end.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failed(err)
	}
	proxyW := os.NewFile(uintptr(pair[1]), "proxy-init")
	l.proxyR, theirs = os.NewFile(uintptr(pair[0]), "proxy"), append(theirs, proxyW)
	var result, hold [2]int
	if err := unix.Pipe2(result[:], unix.O_CLOEXEC); err != nil {
		return failed(err)
	}
	resultR := os.NewFile(uintptr(result[0]), "spawner-result")
	if err := unix.Pipe2(hold[:], unix.O_CLOEXEC); err != nil {
		resultR.Close()
		unix.Close(result[1])
		return failed(err)
	}
	l.hold = os.NewFile(uintptr(hold[1]), "spawner-hold")
	if err := stage.Spawn([]*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr, planR, statusW, proxyW}, result[1], hold[0], stageTier(tier)); err != nil {
		resultR.Close()
		return failed(startError(err))
	}
	l.started = sync.OnceValue(func() error {
		pid, pidfd, err := stage.ReadSpawned(resultR)
		resultR.Close()
		if err == nil {
			l.proc, err = stage.NewProc(pid, pidfd)
		}
		if err != nil {
			return l.startFailed(err)
		}
		l.startForwarding()
		return nil
	})
	return l, nil
}

// startFailed lets go of a launch whose init did not start.
func (l *Launch) startFailed(err error) error {
	l.release()
	return startError(err)
}

// release closes the launcher's ends of a launch that never ran.
func (l *Launch) release() {
	for _, f := range []*os.File{l.planW, l.statusR, l.proxyR, l.hold} {
		if f != nil {
			f.Close()
		}
	}
	if l.ownSigs {
		l.signals.Stop()
	}
}

// adopt takes the init the constructor forked (it has corral's stdio).
func (l *Launch) adopt(e stage.Early) *Launch {
	l.planW, l.statusR, l.proxyR = e.PlanW, e.StatusR, e.Sock
	l.mountCache, l.mountCacheKey = e.MountCache, e.MountCacheKey
	l.started = sync.OnceValue(func() error {
		var err error
		if l.proc, err = stage.NewProc(e.Pid, e.Pidfd); err != nil {
			return l.startFailed(err)
		}
		l.startForwarding()
		return nil
	})
	return l
}

// startForwarding reads the init's status and forwards signals to it.
func (l *Launch) startForwarding() {
	l.statuses = make(chan status, 4)
	go l.readStatus(l.statusR)
	if l.signals.native {
		return // C forwards them to this init already
	}
	// The forwarding waits for Go's signal thread in the background
	// (the first signal.Notify of a process can take its time): a
	// signal before it is ready kills corral, and with it the init
	// (Pdeathsig), which is what forwarding it would have done too.
	go func() {
		for s := range l.signals.channel() {
			l.proc.Signal(s)
			l.signals.note(s)
		}
	}()
}

// Started waits until the init has been exec'd: an error means it was not
// (it is then cleaned up; the Launch is done).
func (l *Launch) Started() error { return l.started() }

// Abort ends an init that will get no plan.
func (l *Launch) Abort() {
	if l.started() != nil {
		return
	}
	l.planW.Close()
	l.proxyR.Close()
	l.proc.Kill()
	l.reap()
	l.stopSignals()
}

// Ending is closed once corral got a signal that ends a run (SIGINT,
// SIGTERM, SIGHUP, SIGQUIT; forwarded to the init as always); EndSignal
// says which. Before the plan is built, waits for the plan's sake stop.
func (l *Launch) Ending() <-chan struct{} {
	go l.started() // starts the forwarding that notices them
	return l.signals.ending
}

// forward hands sig to the init as if corral had just caught it (a
// signal the init it replaced got). Only a launch that catches its
// signals in Go has a queue to put it in.
func (l *Launch) forward(sig os.Signal) {
	if l.signals == nil || l.signals.native {
		return
	}
	select {
	case l.signals.ch <- sig:
	default:
	}
}

// EndSignal is the signal that closed Ending (0: none).
func (l *Launch) EndSignal() int { return int(l.signals.endSig.Load()) }

// stopSignals ends the forwarding in the background: signal.Stop waits
// until Go's signal loop is idle again, which after the SIGCHLD of the
// init's exit took 0.1 to 0.9 ms, all of it on the launch path. Closing
// the channel after Stop ends the forwarding goroutine.
func (l *Launch) stopSignals() {
	l.stopped.Do(func() {
		if l.signals.native {
			l.signals.Stop()
			return
		}
		go func() {
			ch := l.signals.channel()
			signal.Stop(ch)
			close(ch)
		}()
	})
}

// Run hands the init its plan and waits for the command. When the plan has
// a proxy, serve gets the listening sockets the init made inside the
// sandbox (127.0.0.1, and [::1] where the host has IPv6) before the
// command starts; it must return at once (serve from goroutines). The
// returned error means corral failed (the sandbox could not be built); the
// command's own failure is in the Result.
func (l *Launch) Run(plan *Plan, opts RunOptions) (*Result, error) {
	defer l.stopSignals()
	defer l.proxyR.Close()
	if err := l.started(); err != nil {
		return nil, err
	}
	trace := func(string) {}
	if plan.Trace && opts.Trace != nil {
		trace = opts.Trace
	}
	cg, mounts, err := l.send(plan, opts, trace)
	if err != nil {
		l.Abort()
		return nil, err
	}
	// Once the command runs (the init read the cache long before): the
	// mounts for the next run like this one. A plan that pauses its mounts
	// (tests' race windows) is not saved: built ahead, the pause would
	// not be where the test needs it. The landlock tier mounts nothing.
	saveMounts := func() {
		if l.mountCache != "" && plan.MountPause == 0 && plan.Tier.Name != TierLandlock {
			err := stage.SaveMountCache(l.mountCache, l.mountCacheKey, mounts)
			trace(fmt.Sprintf("mount cache %s (saved: %v)", l.mountCache, err == nil))
		}
	}
	// The landlock tier sends its supervisor's listener instead; the
	// namespaces tier sends one with the proxy's listeners, or alone for
	// fs.deny's notified syscalls.
	if plan.Proxy != nil || plan.Resolver != 0 || plan.Tier.Name == TierLandlock || len(plan.Notify) > 0 {
		files, err := receiveFiles(l.proxyR)
		if err != nil {
			// The init failed before it listened; its status says why.
			l.planW.Close()
		} else {
			opts.Serve(files)
		}
	}
	defer l.endOn(opts)()
	res, werr := l.wait(cg, saveMounts, trace)
	return res, runError(res, werr)
}

// send writes the plan and, while the init places its mounts, makes the
// cgroup ready and sends it with the seccomp program. mounts is the
// plan's mount block, for the mount cache.
func (l *Launch) send(plan *Plan, opts RunOptions, trace func(string)) (cg *cgroup.Group, mounts []byte, err error) {
	data, mounts := encodePlan(plan, opts.Held)
	// A plan that fits in the pipe is written here, at once; a larger one
	// waits in a goroutine until the init reads (it reads once it has
	// built its root ahead, which needs nothing from corral).
	if len(data) <= pipeCapacity(l.planW) {
		l.planW.Write(data)
		l.planW.Close()
	} else {
		go func() {
			l.planW.Write(data)
			l.planW.Close()
		}()
	}
	trace("plan sent")
	if opts.Cgroup != nil {
		if cg, err = opts.Cgroup(l.proc.Pid); err != nil {
			return nil, nil, err
		}
	}
	bpf, err := opts.Seccomp.Program(plan.Seccomp)
	if err != nil {
		return nil, nil, err
	}
	if err := sendLate(l.proxyR, bpf, cg, l.late); err != nil {
		return nil, nil, err
	}
	trace("late sent")
	return cg, mounts, nil
}

// endOn ends the run when opts.Timeout passes or opts.Done closes:
// SIGTERM to the command, then after KillGrace SIGKILL to the whole
// sandbox. The function it returns stops watching.
func (l *Launch) endOn(opts RunOptions) (stop func()) {
	end := func() {
		l.mu.Lock()
		if l.timedOut {
			l.mu.Unlock()
			return
		}
		l.timedOut = true
		l.mu.Unlock()
		// SIGTERM reaches the command through the shim and PID 1; SIGKILL
		// to PID 1 takes every process of the PID namespace, however it
		// double-forked, before the shim (which waits for it) exits.
		l.proc.Signal(unix.SIGTERM)
		time.AfterFunc(opts.KillGrace, func() { l.proc.KillSandbox() })
	}
	var timer *time.Timer
	if opts.Timeout > 0 {
		timer = time.AfterFunc(opts.Timeout, end)
	}
	finished := make(chan struct{})
	if opts.Done != nil {
		go func() {
			select {
			case <-opts.Done:
				end()
			case <-finished:
			}
		}()
	}
	return func() {
		if timer != nil {
			timer.Stop()
		}
		close(finished)
	}
}

// wait reads the init's statuses until it is gone, reaps it and reads
// what the cgroup saw. werr is the wait's error, if any.
func (l *Launch) wait(cg *cgroup.Group, saveMounts func(), trace func(string)) (res *Result, werr error) {
	res = &Result{ExitCode: 255}
	gotExit, alone := false, false
	for s := range l.statuses {
		switch {
		case s.Started != 0:
			res.Started = true
			saveMounts()
		case s.Error != nil:
			res.Stage = s.Error
		case s.Exit != nil:
			gotExit, alone = true, s.Exit.Alone
			if cg != nil && cg.RemovedWhenEmpty() {
				// A user scope goes once PID 1 and the shim have
				// exited: PID 1 holds it until it gets this byte
				// (sendLate asked it to), so the read is in time.
				cg.Observe()
				unix.Sendmsg(int(l.proxyR.Fd()), []byte{1}, nil, nil, unix.MSG_NOSIGNAL)
			}
			res.ExitCode, res.Signal, res.MaxRSS = s.Exit.Code, s.Exit.Signal, s.Exit.MaxRSSKB*1024
		}
	}
	if gotExit && alone {
		// PID 1 killed and reaped every other process of the sandbox and
		// left the cgroup before it reported: nothing of the command runs,
		// and the cgroup is empty. Its exit and the shim's, which tear
		// down the namespaces (0.4 ms here), go on meanwhile.
		go l.reap()
	} else {
		var ws syscall.WaitStatus
		ws, werr = l.reap()
		// The shim exits after PID 1, whose exit waits for the whole PID
		// namespace; the cgroup says so too, also when the shim itself
		// was killed from outside and PID 1 dies by PR_SET_PDEATHSIG.
		if cg != nil && !cg.Drain(2*time.Second) {
			trace("the run's cgroup still had processes 2 s after the sandbox ended")
		}
		if !gotExit && res.Started && werr == nil {
			// PID 1 died before it reported the command's end (killed
			// from outside, or by the timeout): the shim's status says
			// how, as 128+N for signal N.
			switch {
			case ws.Exited():
				res.ExitCode = ws.ExitStatus()
			case ws.Signaled():
				res.ExitCode, res.Signal = 128+int(ws.Signal()), int(ws.Signal())
			}
		}
	}
	res.Wall = time.Since(l.start)
	l.mu.Lock()
	res.TimedOut = l.timedOut
	l.mu.Unlock()
	if res.TimedOut && !res.Started && res.Stage == nil {
		res.Started = true // killed by the timeout before its "started" came
	}
	if cg != nil {
		peak, ooms := cg.Usage()
		res.OOMKills = ooms
		if peak > 0 {
			res.MaxRSS = peak
		}
	}
	return res, werr
}

// runError is the error of a run that ended as res says: the sandbox
// could not be built, or its init ended before the command started.
func runError(res *Result, werr error) error {
	if res.Stage != nil && res.Stage.Stage == "namespaces" {
		if why := userNSRefusal(); why != "" {
			return fmt.Errorf("%w: %s (%s)", ErrProtection, why, res.Stage.Message)
		}
		return fmt.Errorf("%w: creating the sandbox's namespaces: %s", ErrProtection, res.Stage.Message)
	}
	if res.Stage != nil && res.Stage.Stage != "exec" {
		return fmt.Errorf("building the sandbox: %w", res.Stage)
	}
	if !res.Started && res.Stage == nil {
		if werr != nil {
			return fmt.Errorf("the sandbox's init ended before the command started: %v", werr)
		}
		return errors.New("the sandbox's init ended before the command started, without a word")
	}
	return nil
}

// reap waits for the shim, then lets go of its pidfd and of the thread
// that started it.
func (l *Launch) reap() (syscall.WaitStatus, error) {
	ws, err := l.proc.Wait()
	if l.signals.native {
		// Before the pidfd the handlers use is closed.
		stage.StopNativeSignals()
	}
	l.proc.Close()
	if l.hold != nil {
		l.hold.Close()
	}
	return ws, err
}

// sendLate sends the init what it takes after its mounts: the seccomp
// program, with the run's cgroup files (open for writing) attached, and
// its parent's, which PID 1 moves back to once the command runs. An
// error means the cgroup could not be joined; a closed socket is left to
// the init's status to explain. late are the descriptors that replace the
// init's 0-2, attached after the cgroup files.
func sendLate(sock *os.File, bpf []byte, cg *cgroup.Group, late [3]*os.File) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	njoin, hold := 0, uint32(0)
	if cg != nil {
		if cg.RemovedWhenEmpty() {
			hold = 1
		}
		join, err := openForWriting(cg.JoinFiles())
		if err != nil {
			return fmt.Errorf("joining the run's cgroup: %w", err)
		}
		fds, njoin = join, len(join)
		// Leaving is an optimisation: a parent that cannot be opened
		// keeps PID 1 in the cgroup, and corral waits for it to exit.
		if leave, err := openForWriting(cg.LeaveFiles()); err == nil {
			fds = append(fds, leave...)
		}
	}
	var replace uint32
	attached := append([]int(nil), fds...)
	for i, f := range late {
		if f != nil {
			replace |= 1 << i
			attached = append(attached, int(f.Fd()))
		}
	}
	msg := binary.LittleEndian.AppendUint32(nil, uint32(len(bpf)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(njoin))
	msg = binary.LittleEndian.AppendUint32(msg, hold)
	msg = binary.LittleEndian.AppendUint32(msg, replace)
	msg = append(msg, bpf...)
	var oob []byte
	if len(attached) > 0 {
		oob = unix.UnixRights(attached...)
	}
	fd := int(sock.Fd())
	for len(msg) > 0 {
		n, err := unix.SendmsgN(fd, msg, oob, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		msg, oob = msg[n:], nil
	}
	return nil
}

// openForWriting opens every file, or none.
func openForWriting(files []string) ([]int, error) {
	var fds []int
	for _, f := range files {
		fd, err := unix.Open(f, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, &os.PathError{Op: "open", Path: f, Err: err}
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// receiveFiles reads one message carrying file descriptors.
func receiveFiles(f *os.File) ([]*os.File, error) {
	buf, oob := make([]byte, 4), make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			// The init sends a byte naming each fd; the landlock tier
			// sends its supervisor's alone.
			name := handedListener
			if i := len(files); i < n {
				switch buf[i] {
				case 'D':
					name = handedDNS
				case 'N':
					name = handedSupervisor
				}
			}
			files = append(files, os.NewFile(uintptr(fd), name))
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no listeners received")
	}
	return files, nil
}

func (l *Launch) readStatus(r io.ReadCloser) {
	defer close(l.statuses)
	defer r.Close()
	known := false
	defer func() {
		if !known {
			close(l.tierKnown)
		}
	}()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var s status
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			continue
		}
		switch {
		case s.Tier != nil && !known:
			l.tier, known = TierInfo{Name: s.Tier.Name, Why: s.Tier.Why}, true
			close(l.tierKnown)
			continue
		case s.Error != nil && !known:
			l.tierErr = s.Error
		}
		l.statuses <- s
	}
}

// Tier waits for the tier the init runs in. An error means the init
// failed first (a *StageError: the namespaces could not be made).
func (l *Launch) Tier() (TierInfo, error) {
	if err := l.started(); err != nil {
		return TierInfo{}, err
	}
	<-l.tierKnown
	if l.tier.Name == "" {
		if l.tierErr != nil {
			return TierInfo{}, l.tierErr
		}
		return TierInfo{}, errors.New("the sandbox's init ended before it said which tier it runs in")
	}
	return l.tier, nil
}

// stageTier is tier as the init's argv says it (protocol.h).
func stageTier(t Tier) int {
	switch t {
	case TierNamespaces:
		return stage.TierNamespaces
	case TierLandlock:
		return stage.TierLandlock
	}
	return stage.TierAuto
}

// startError explains why the namespaces could not be made.
func startError(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
		if why := userNSRefusal(); why != "" {
			return fmt.Errorf("%w: %s", ErrProtection, why)
		}
		return fmt.Errorf("%w: creating the sandbox's user namespace: %v", ErrProtection, err)
	}
	return fmt.Errorf("starting the sandbox: %w", err)
}

// pipeCapacity is how many bytes the pipe f takes before a write blocks
// (0 when the kernel does not say).
func pipeCapacity(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		if v, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil {
			n = v
		}
	})
	return n
}
