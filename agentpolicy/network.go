package agentpolicy

import (
	"fmt"
	"slices"

	"corral.dev/corral/policyengine"
)

// HostAnswer is the policy's standing answer for a host no network rule
// lists, from its {tool: network, command_glob: "HOST:PORT"} rules (what
// RememberHost writes): a deny rule refuses it, an allow rule allows it,
// and with neither ok is false and the caller is asked. Only the ask
// channel consults these rules: they answer the question it would put, and
// a run without one asks nobody.
func (e *Evaluator) HostAnswer(host string, port int) (d policyengine.Decision, ok bool) {
	target := hostPort(host, port)
	for _, list := range []struct {
		rules  []compiledRule
		action policyengine.Action
		name   string
	}{{e.deny, policyengine.Deny, "deny"}, {e.allow, policyengine.Allow, "allow"}} {
		for _, r := range list.rules {
			if r.Tool != NetworkTool || r.CommandGlob == "" || r.Command != "" {
				continue
			}
			if r.SkillName != "" && !slices.Contains(e.skills, r.SkillName) {
				continue
			}
			if r.glob.match(target) {
				return policyengine.Decision{Action: list.action, Rule: "permissions." + list.name + " " + r.text(), Layer: r.layer,
					Reason: fmt.Sprintf("%s: the %s policy's rule %s", target, r.layer, r.text())}, true
			}
		}
	}
	return policyengine.Decision{}, false
}
