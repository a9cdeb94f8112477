package corral

import (
	"errors"
	"io/fs"
	"os"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/sandbox"
)

// CheckPlan is the kernel plan `corral exec` would build for these skills
// in their work dir (capped by the agent policy ev, as exec caps them),
// built without running anything: the folders exec would create first
// are taken as made, not made. `corral check` answers file questions from
// it, so that it answers what exec enforces.
// tier is the tier exec would run in (sandbox.TierAuto: the one this host
// gives).
func (s *Skills) CheckPlan(ev *agentpolicy.Evaluator, tier sandbox.Tier) (*sandbox.Plan, error) {
	sk := s
	if ev != nil && !ev.Empty() {
		capped, _, err := s.Capped(ev)
		if err != nil {
			return nil, err
		}
		sk = capped
	}
	var made []string
	for _, r := range sk.writeRoots() {
		if _, err := os.Lstat(r.dir); errors.Is(err, fs.ErrNotExist) {
			made = append(made, r.dir)
		}
	}
	spec := sandbox.Spec{WorkDir: sk.Vars.WorkDir, Env: os.Environ(), Home: sk.Vars.Home, Keep: KeptPaths(sk, ev), Tier: tier, HomeStore: sk.HomeStore(tier), HomeGit: sk.HasGitIdentity(), SetEnv: sk.Exports}
	return sandbox.CheckPlan(sk.Perms, spec, made)
}
