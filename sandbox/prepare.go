package sandbox

import (
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox/seccomp"
)

// Prepare starts compiling the seccomp program that a plan for p will
// need (the table BuildPlan picks: seccomp.Rules, with memfds refused
// when p has an exec allowlist). Pass the result to the run in
// RunOptions.Seccomp.
func Prepare(p policyengine.Permissions) *seccomp.Prepared {
	return seccomp.Prepare(seccomp.Rules(p.ExecRestricted()))
}
