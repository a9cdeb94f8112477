//go:build !linux

package seccomp

// Prepared is Linux's; off Linux there is no program to prepare.
type Prepared struct{}

// Prepare does nothing off Linux: on macOS the profile is rendered when
// the plan runs.
func Prepare(rules []Rule) *Prepared { return nil }
