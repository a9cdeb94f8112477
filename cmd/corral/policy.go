package main

import (
	"flag"

	"corral.dev/corral"
	"corral.dev/corral/agentpolicy"
)

// policyFlags are the agent policy's flags, shared by check, exec, proxy
// and explain.
type policyFlags struct {
	global, project, invocation string
	agent                       string
}

func (f *policyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.project, "policy", "", "the project's agent policy `file` (YAML or JSON)")
	fs.StringVar(&f.invocation, "policy-json", "", "a per-invocation agent policy as a JSON `object`, above the files")
	fs.StringVar(&f.global, "global-policy", agentpolicy.GlobalFile(), "the global agent policy `file`, used when it exists (\"\" for none)")
	fs.StringVar(&f.agent, "agent", "", "the agent's `id`, written into every audit event")
}

// load compiles the layers in force; nil when there are none.
func (f *policyFlags) load(s *corral.Skills) (*agentpolicy.Evaluator, error) {
	ev, err := s.Policy(f.global, f.project, f.invocation)
	if err != nil || ev.Empty() {
		return nil, err
	}
	return ev, nil
}
