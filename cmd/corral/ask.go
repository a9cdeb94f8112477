package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	askch "corral.dev/corral/ask"
	"corral.dev/corral/skill"
)

// askFlags open the ask channel (docs/ask.md): --ask-fd N, a socket the
// caller passed, and --ask-timeout, the bound on each answer.
type askFlags struct {
	fd      int // -1: none
	timeout time.Duration
}

func (f *askFlags) register(fs *flag.FlagSet) {
	f.fd = -1
	fs.Func("ask-fd", "ask the caller over descriptor `N` (3 or more: one end of a socketpair) about hosts no rule lists and commands the agent policy wants confirmed, instead of refusing them (docs/ask.md)", fdFlag(&f.fd))
	fs.Func("ask-timeout", "deny a question the ask channel has not answered within `DUR` (default 30s)", func(s string) error {
		d, err := skill.ParseDuration(s)
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		f.timeout = d
		return err
	})
}

// open opens the channel; nil without --ask-fd. taken are the
// descriptors --report-fd and --log-fd use.
func (f *askFlags) open(taken ...int) (*askch.Channel, error) {
	if f.fd < 0 {
		if f.timeout > 0 {
			return nil, errors.New("--ask-timeout needs --ask-fd")
		}
		return nil, nil
	}
	if f.fd < 3 {
		return nil, fmt.Errorf("--ask-fd %d: descriptors 0, 1 and 2 are the command's stdin, stdout and stderr: pass 3 or more, one end of a socketpair", f.fd)
	}
	for _, t := range taken {
		if t == f.fd {
			return nil, fmt.Errorf("--ask-fd %d is also --report-fd or --log-fd: the ask channel needs a descriptor of its own", f.fd)
		}
	}
	// What the caller passed came through execve, so it is not
	// close-on-exec; a descriptor corral opened itself is.
	fl, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETFD, 0)
	if err == nil && fl&unix.FD_CLOEXEC != 0 {
		err = errors.New("not one corral inherited")
	}
	if err != nil {
		return nil, fmt.Errorf("--ask-fd %d: not an open descriptor (%v): pass one end of a socketpair to corral as descriptor %d", f.fd, err, f.fd)
	}
	// Close-on-exec before anything starts; ask.Open then trades it for a
	// copy of its own and closes this number.
	if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("--ask-fd %d: %v", f.fd, err)
	}
	ch, err := askch.Open(f.fd, f.timeout)
	if err != nil {
		return nil, fmt.Errorf("--ask-fd %d: %v", f.fd, err)
	}
	return ch, nil
}
