package sandbox

import (
	"os"
	"os/signal"
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
}

// NotifySignals starts catching the signals corral forwards. Pass it to
// Start in Stdio.Signals, or Stop it.
func NotifySignals() *Signals {
	s := &Signals{ch: make(chan os.Signal, 8), ready: make(chan struct{})}
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
	if !startNativeSignals() {
		return nil
	}
	return &Signals{native: true}
}

// channel waits until the signals are caught and returns their channel.
func (s *Signals) channel() chan os.Signal {
	<-s.ready
	return s.ch
}

// Stop ends catching them, in the background, when no Start took them.
func (s *Signals) Stop() {
	if s.native {
		stopNativeSignals()
		return
	}
	go func() {
		<-s.ready
		signal.Stop(s.ch)
	}()
}
