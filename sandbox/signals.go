package sandbox

import (
	"os"
	"os/signal"
)

// Signals is the forwarding of terminal signals to the command, set up
// before Start: the first signal.Notify of a process costs 0.2-0.4 ms
// (Go starts its signal thread), which NotifySignals overlaps with
// loading the skills and checking the command.
type Signals struct {
	ch    chan os.Signal
	ready chan struct{}
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

// channel waits until the signals are caught and returns their channel.
func (s *Signals) channel() chan os.Signal {
	<-s.ready
	return s.ch
}

// Stop ends catching them, in the background, when no Start took them.
func (s *Signals) Stop() {
	go func() {
		<-s.ready
		signal.Stop(s.ch)
	}()
}
