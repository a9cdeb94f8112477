//go:build !linux

package sandbox

import "corral/policyengine"

// Cgroup is Linux-only: elsewhere there is no per-sandbox memory or
// process cap.
type Cgroup struct {
	Version int
	Path    string
}

// NewCgroup fails off Linux. A limit a skill or flag asks for then stops
// the run, the implicit defaults are dropped with a warning, as on a Linux
// host without a writable cgroup.
func NewCgroup(parent string, memory int64, pids int) (*Cgroup, error) { return nil, ErrUnsupported }

// ProbeCgroup fails off Linux.
func ProbeCgroup(memory int64, pids int) (*Cgroup, error) { return nil, ErrUnsupported }

// Where is empty off Linux.
func (c *Cgroup) Where() string { return "" }

// Attach does nothing off Linux.
func (c *Cgroup) Attach(pid int) error { return nil }

// JoinFiles is empty off Linux.
func (c *Cgroup) JoinFiles() []string { return nil }

// Usage reports nothing off Linux.
func (c *Cgroup) Usage() (peak int64, oomKills int) { return 0, 0 }

// Remove does nothing off Linux.
func (c *Cgroup) Remove() error { return nil }

// RemoveStale does nothing off Linux.
func RemoveStale(parent string) []string { return nil }

// Seccomp is Linux's; off Linux there is no program to prepare.
type Seccomp struct{}

// Prepare does nothing off Linux: on macOS the profile is rendered when
// the plan runs.
func Prepare(p policyengine.Permissions) *Seccomp { return nil }

// HostProgramIndex is empty here: the program index is for Linux's exec
// allowlist.
func HostProgramIndex() ProgramIndex { return ProgramIndex{Source: "none"} }

// CreateHooksFolders has nothing to do here.
func CreateHooksFolders(f *Facts) ([]string, error) { return nil, nil }

// Held watches nothing here: protected paths are a Linux mount feature.
type Held struct{}

// Hold watches nothing here.
func Hold(paths []string) *Held { return &Held{} }

// Replaced is always empty here.
func (h *Held) Replaced() []string { return nil }

// Files is always empty here.
func (h *Held) Files() []HeldFile { return nil }

// Close does nothing here.
func (h *Held) Close() {}

// startNativeSignals has no init to forward to here.
func startNativeSignals() bool { return false }

// stopNativeSignals has nothing to stop here.
func stopNativeSignals() {}

// nativeEnding is never called here (startNativeSignals fails).
func nativeEnding() int { select {} }
