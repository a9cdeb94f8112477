//go:build !linux && !darwin

package sandbox

import (
	"os"

	"corral.dev/corral/policyengine"
)

var forwarded = []os.Signal{os.Interrupt}

// Probe reports no kernel features off Linux.
func Probe(p policyengine.Permissions, spec Spec) *Facts {
	return &Facts{LandlockErr: ErrUnsupported.Error(), UserNSErr: ErrUnsupported.Error(), Files: map[string]FileInfo{}, Programs: map[string]Program{}}
}

// Launch is unsupported off Linux.
type Launch struct{}

// Start is unsupported off Linux.
func Start(stdio Stdio) (*Launch, error) { return nil, ErrUnsupported }

// Abort does nothing off Linux.
func (l *Launch) Abort() {}

// Started has nothing to wait for here: Start did it all.
func (l *Launch) Started() error { return nil }

// Run is unsupported off Linux.
func (l *Launch) Run(plan *Plan, opts RunOptions) (*Result, error) { return nil, ErrUnsupported }

// resolver is Linux-only.
type resolver struct{}
