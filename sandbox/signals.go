package sandbox

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"corral.dev/corral/sandbox/stage"
)

// Signals is the forwarding of terminal signals to the command, set up
// before Start: the first signal.Notify of a process costs 0.2-0.4 ms
// (Go starts its signal thread), which NotifySignals overlaps with
// loading the skills and checking the command. Where `corral exec`'s
// constructor forked the init, NativeSignals forwards them from C instead.
type Signals struct {
	ch     chan os.Signal
	ready  chan struct{}
	native bool // forwarded by C handlers (NativeSignals)
	// ending is closed at the first signal that ends a run, endSig.
	ending  chan struct{}
	endSig  atomic.Int32
	endOnce sync.Once
}

// ends are the forwarded signals that end a run: a run still waiting
// before its plan (a lock other runs hold) stops waiting.
var ends = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// note records a forwarded signal; one of ends closes ending.
func (s *Signals) note(sig os.Signal) {
	if n, ok := sig.(syscall.Signal); ok && slices.Contains(ends, sig) {
		s.endOnce.Do(func() {
			s.endSig.Store(int32(n))
			close(s.ending)
		})
	}
}

// NotifySignals starts catching the signals corral forwards. Pass it to
// Start in Stdio.Signals, or Stop it.
func NotifySignals() *Signals {
	s := &Signals{ch: make(chan os.Signal, 8), ready: make(chan struct{}), ending: make(chan struct{})}
	go func() {
		signal.Notify(s.ch, forwarded...)
		close(s.ready)
	}()
	return s
}

// NativeSignals forwards the signals corral forwards straight to the init
// that `corral exec`'s constructor forked, from C handlers, from now on
// (nsinit_linux.c); nil when there is no such init. Start uses it when it
// adopts that init, and falls back to NotifySignals otherwise.
func NativeSignals() *Signals {
	if !stage.StartNativeSignals() {
		return nil
	}
	s := &Signals{native: true, ending: make(chan struct{})}
	go func() { s.note(syscall.Signal(stage.NativeEnding())) }()
	return s
}

// channel waits until the signals are caught and returns their channel.
func (s *Signals) channel() chan os.Signal {
	<-s.ready
	return s.ch
}

// Stop ends catching them, in the background, when no Start took them.
func (s *Signals) Stop() {
	if s.native {
		stage.StopNativeSignals()
		return
	}
	go func() {
		<-s.ready
		signal.Stop(s.ch)
	}()
}
