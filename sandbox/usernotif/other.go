//go:build !linux

package usernotif

import (
	"errors"
	"net/netip"
	"os"
)

// Config says what the supervisor allows; see the Linux documentation.
type Config struct {
	Proxy    netip.AddrPort
	Dial     func(family int) (*os.File, error)
	Writable []string
	Redirect *Redirect
	Log      func(string)
}

// Redirect configures the namespaces tier's connect supervision; see the
// Linux documentation.
type Redirect struct {
	Proxy4, Proxy6 netip.AddrPort
	Originals      *Originals
	Loopback       []uint16
}

// Supervisor answers the connect and chmod notifications of one sandbox;
// off Linux there are none.
type Supervisor struct{}

// StartConfig fails off Linux: seccomp user notification is Linux's. It
// still closes listener, whose ownership passes to it.
func StartConfig(listener *os.File, cfg Config) (*Supervisor, error) {
	if listener != nil {
		listener.Close()
	}
	return nil, errors.New("usernotif: seccomp user notification needs Linux")
}

// Start is StartConfig for a connect-only caller; it fails off Linux.
func Start(listener *os.File, allowed netip.AddrPort, dial func(family int) (*os.File, error), log func(string)) (*Supervisor, error) {
	return StartConfig(listener, Config{Proxy: allowed, Dial: dial, Log: log})
}

// Stop does nothing off Linux.
func (s *Supervisor) Stop() {}

// Stats is always zero off Linux.
func (s *Supervisor) Stats() (allowed, refused int) { return 0, 0 }
