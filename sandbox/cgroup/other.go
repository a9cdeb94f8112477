//go:build !linux

package cgroup

import (
	"errors"
	"fmt"
)

var errUnsupported = fmt.Errorf("no cgroups outside Linux: %w", errors.ErrUnsupported)

// Group is Linux-only: elsewhere there is no per-sandbox memory or
// process cap.
type Group struct {
	Version int
	Path    string
}

// New fails off Linux. A limit a skill or flag asks for then stops
// the run, the implicit defaults are dropped with a warning, as on a Linux
// host without a writable cgroup.
func New(parent string, memory int64, pids int) (*Group, error) { return nil, errUnsupported }

// Probe fails off Linux.
func Probe(memory int64, pids int) (*Group, error) { return nil, errUnsupported }

// Where is empty off Linux.
func (c *Group) Where() string { return "" }

// Attach does nothing off Linux.
func (c *Group) Attach(pid int) error { return nil }

// JoinFiles is empty off Linux.
func (c *Group) JoinFiles() []string { return nil }

// Usage reports nothing off Linux.
func (c *Group) Usage() (peak int64, oomKills int) { return 0, 0 }

// RemovedWhenEmpty is false off Linux.
func (c *Group) RemovedWhenEmpty() bool { return false }

// Observe does nothing off Linux.
func (c *Group) Observe() {}

// Remove does nothing off Linux.
func (c *Group) Remove() error { return nil }

// RemoveStale does nothing off Linux.
func RemoveStale(parent string) []string { return nil }
