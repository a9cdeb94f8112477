//go:build !linux

package sandbox

import "corral/policyengine"

// ScriptInterpreters finds nothing off Linux, where no kernel exec
// allowlist grants interpreters.
func ScriptInterpreters(p policyengine.Permissions, workDir string) map[string]string { return nil }
