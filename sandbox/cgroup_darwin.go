package sandbox

import (
	"errors"

	"corral/policyengine"
)

// ErrUnsupported means a Linux kernel feature corral would use has no
// macOS counterpart.
var ErrUnsupported = errors.New("macOS has no cgroups")

// Cgroup is Linux-only: macOS has no per-sandbox memory or process cap.
type Cgroup struct {
	Version int
	Path    string
}

// NewCgroup fails on macOS: no cgroups. A limit a skill or flag asks for
// then stops the run, the implicit defaults are dropped with a warning,
// as on a Linux host without a writable cgroup.
func NewCgroup(parent string, memory int64, pids int) (*Cgroup, error) { return nil, ErrUnsupported }

// JoinFiles is empty on macOS.
func (c *Cgroup) JoinFiles() []string { return nil }

// Usage reports nothing on macOS.
func (c *Cgroup) Usage() (peak int64, oomKills int) { return 0, 0 }

// Remove does nothing on macOS.
func (c *Cgroup) Remove() error { return nil }

// RemoveStale does nothing on macOS.
func RemoveStale(parent string) []string { return nil }

// Prepare does nothing on macOS: the profile is rendered when the plan
// runs.
func Prepare(p policyengine.Permissions) {}
