//go:build !linux

package seccomp

// Rules is empty off Linux: there is no seccomp to load.
func Rules(restricted bool) []Rule { return nil }

// Table is empty off Linux.
func Table() []Rule { return nil }
