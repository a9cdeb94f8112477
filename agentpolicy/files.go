package agentpolicy

import "path/filepath"

// Files are the absolute paths of the policy files the layers were read
// from (not --policy-json): the sandbox keeps them read-only to the runs
// they govern.
func (e *Evaluator) Files() []string {
	var out []string
	for _, l := range e.stack {
		if l.Name == "invocation" {
			continue
		}
		if abs, err := filepath.Abs(l.Source); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
