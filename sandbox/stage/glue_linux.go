package stage

// nsinit_linux.c makes the sandbox's namespaces before the Go runtime
// starts in the init stage; importing C compiles it into corral.

// #cgo CFLAGS: -Wall -Wextra -O2
// #include "spawn_linux.h"
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Spawn starts the init stage from a thread of its own
// (spawn_linux.c) and returns at once; the thread writes the init's pid
// to result and ends when hold reads EOF. tier is one of the TierX
// constants (protocol.h).
func Spawn(files []*os.File, result, hold, tier int) error {
	var fds [C.CORRAL_SPAWN_FDS]C.int
	if len(files) != len(fds) {
		return fmt.Errorf("the init takes %d fds, not %d", len(fds), len(files))
	}
	for i, f := range files {
		fds[i] = C.int(f.Fd())
	}
	rc := C.corral_spawn_init(&fds[0], C.int(result), C.int(hold), C.int(tier))
	runtime.KeepAlive(files)
	if rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// Early is the init stage the C constructor forked when corral
// started as `corral exec` (nsinit_linux.c).
type Early struct {
	PlanW, StatusR, Sock *os.File
	Pid, Pidfd           int
	MountCache           string // the mount cache file ("" for none)
	MountCacheKey        uint64
}

// TakeEarly hands over that init, once; false when there is none.
func TakeEarly() (Early, bool) {
	var out [5]C.int
	if C.corral_take_early(&out[0]) != 0 {
		return Early{}, false
	}
	e := Early{
		PlanW:   os.NewFile(uintptr(out[0]), "plan"),
		StatusR: os.NewFile(uintptr(out[1]), "status"),
		Sock:    os.NewFile(uintptr(out[2]), "proxy"),
		Pid:     int(out[3]),
		Pidfd:   int(out[4]),
	}
	var key C.ulonglong
	if p := C.corral_early_mount_cache(&key); p != nil {
		e.MountCache, e.MountCacheKey = C.GoString(p), uint64(key)
	}
	return e, true
}

// StartNativeSignals forwards the signals corral forwards to the init the
// constructor forked, from C handlers (corral_signals_start).
func StartNativeSignals() bool { return C.corral_signals_start() == 0 }

// NativeEnding returns, once the C handlers got a signal that ends a run,
// which one. It waits in Go's poller on the handlers' note pipe.
func NativeEnding() int {
	fd := int(C.corral_signals_note())
	if fd < 0 {
		select {} // no pipe: never
	}
	f := os.NewFile(uintptr(fd), "signal-note")
	var b [1]byte
	for {
		if _, err := f.Read(b[:]); err != nil {
			select {}
		}
		if sig := int(C.corral_signals_first()); sig != 0 {
			return sig
		}
	}
}

// NativeFirst is the first signal that ends a run the C handlers got, 0
// for none so far.
func NativeFirst() int { return int(C.corral_signals_first()) }

// StopNativeSignals ends that and gives the signals back to Go.
func StopNativeSignals() { C.corral_signals_stop() }

// MountCacheDir is the folder of the mount cache file the constructor
// chose for this run ("" when none).
func MountCacheDir() string {
	var key C.ulonglong
	if p := C.corral_early_mount_cache(&key); p != nil {
		return filepath.Dir(C.GoString(p))
	}
	return ""
}

// ReadSpawned reads what the spawner thread wrote: the init's pid (or the
// errno of its failure) and a pidfd for it (-1 without one).
func ReadSpawned(r *os.File) (pid, pidfd int, err error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, -1, fmt.Errorf("the thread starting the init ended without a word: %w", err)
	}
	n := int32(binary.NativeEndian.Uint32(b[:4]))
	fd := int32(binary.NativeEndian.Uint32(b[4:]))
	if n <= 0 {
		return 0, -1, syscall.Errno(-n)
	}
	return int(n), int(fd), nil
}

// Proc is the started init. With a pidfd, signals can never reach
// another process that got the pid after the init was reaped; without
// one (before Linux 5.2) os.Process does what it can.
type Proc struct {
	Pid   int
	mu    sync.Mutex // guards pidfd against a signal racing Close
	pidfd int
	os    *os.Process
}

func NewProc(pid, pidfd int) (*Proc, error) {
	if pidfd >= 0 {
		return &Proc{Pid: pid, pidfd: pidfd}, nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil, err
	}
	return &Proc{Pid: pid, pidfd: -1, os: p}, nil
}

func (p *Proc) Signal(sig os.Signal) error {
	if p.os != nil {
		return p.os.Signal(sig)
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("cannot send %v", sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd < 0 {
		return os.ErrProcessDone
	}
	return unix.PidfdSendSignal(p.pidfd, s, nil, 0)
}

func (p *Proc) Kill() error { return p.Signal(syscall.SIGKILL) }

// KillSandbox kills the sandbox's PID 1, the shim's one child, rather
// than the shim: the kernel completes PID 1's exit only once every process
// of its PID namespace is gone, and the shim, which waits for PID 1, exits
// after that; so once the shim is reaped nothing of the sandbox runs.
// Killing the shim left PID 1 to die later by its PR_SET_PDEATHSIG, and
// the command's processes went on writing while corral swept the writable
// roots and quarantined what they left. Without the child's pid (no
// /proc/PID/task/PID/children), the shim is killed as before.
func (p *Proc) KillSandbox() error {
	if err := killOnlyChild(p.Pid); err == nil {
		return nil
	}
	return p.Kill()
}

// killOnlyChild sends SIGKILL to parent's one child through a pidfd,
// checked to be parent's child after it was opened, so a pid reused
// meanwhile is never signalled.
func killOnlyChild(parent int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", parent, parent))
	if err != nil {
		return err
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		return fmt.Errorf("%d children", len(f))
	}
	child, err := strconv.Atoi(f[0])
	if err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(child, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
	if err != nil {
		return err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	if fields := strings.Fields(string(rest)); len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
		return fmt.Errorf("%d is no longer %d's child", child, parent)
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// Wait reaps the init and returns how it ended. Reaping by pid is safe:
// the pid stays the init's until this reaps it, and signals go through
// the pidfd, which never reaches the pid's next owner.
func (p *Proc) Wait() (syscall.WaitStatus, error) {
	if p.os != nil {
		st, err := p.os.Wait()
		if err != nil {
			return 0, err
		}
		return st.Sys().(syscall.WaitStatus), nil
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.Pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws, err
		}
	}
}

// Close releases the pidfd once the init is reaped; later signals are
// dropped.
func (p *Proc) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
}
