//go:build !linux

package sandbox

import "corral.dev/corral/policyengine"

// ProgramExists is nil off Linux: every program counts as there.
func ProgramExists(p policyengine.Permissions, workDir string) func(prog string) bool { return nil }

// KernelExec knows nothing off Linux, where no kernel exec allowlist
// grants files.
func KernelExec(p policyengine.Permissions, workDir string) func(prog string) (string, bool) {
	return nil
}

// LookPath finds nothing off Linux, where check answers by the globs.
func LookPath(name string) string { return "" }
