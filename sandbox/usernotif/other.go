//go:build !linux

package usernotif

import (
	"errors"
	"net/netip"
	"os"
)

// Supervisor answers the connect notifications of one sandbox; off Linux
// there are none.
type Supervisor struct{}

// Start fails off Linux: seccomp user notification is Linux's. It still
// closes listener, whose ownership passes to it.
func Start(listener *os.File, allowed netip.AddrPort, dial func(family int) (*os.File, error), log func(string)) (*Supervisor, error) {
	if listener != nil {
		listener.Close()
	}
	return nil, errors.New("usernotif: seccomp user notification needs Linux")
}

// Stop does nothing off Linux.
func (s *Supervisor) Stop() {}

// Stats is always zero off Linux.
func (s *Supervisor) Stats() (allowed, refused int) { return 0, 0 }
