//go:build !linux

package sandbox

import (
	"os"

	"corral.dev/corral/sandbox/usernotif"
)

// The landlock tier is Linux's: elsewhere there is no such run.
type landlockRun struct{}

func (e *execution) prepareLandlock(*Spec) (*landlockRun, error) { return nil, ErrUnsupported }
func (r *landlockRun) serve(*execution, []*os.File)              {}
func (r *landlockRun) close(func(string))                        {}
func (r *landlockRun) makeTmp() error                            { return ErrUnsupported }

// tier is the launcher's own (macOS: its Seatbelt profile).
func (e *execution) tier(launch **Launch) (TierInfo, error) { return (*launch).Tier() }

// superviseCreate does nothing off Linux: no plan notifies a syscall.
func superviseCreate(*usernotif.Config, *Plan) {}
