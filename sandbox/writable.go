package sandbox

import (
	"path/filepath"

	"corral.dev/corral/policyengine"
)

// WritableRoots are the host folders a command sandboxed with p can
// write, or an earlier run in the same work dir could have: the work dir
// and the base of every write grant that reaches the host (the kernel
// grants a glob's whole base; a grant that covers /tmp reaches only the
// sandbox's private one, and is not bound). Each comes as written and,
// where it differs, as its real path. corral's own output files
// (--report, --audit-log) must lie outside all of them.
func WritableRoots(p policyengine.Permissions, workDir string) []string {
	bases := []string{workDir}
	for _, w := range p.Write {
		if g, err := policyengine.CompileGlob(w.Value); err == nil && hiddenUnder(g.Base()) == "" {
			bases = append(bases, g.Base())
		}
	}
	var roots []string
	for _, b := range bases {
		if b == "" {
			continue
		}
		roots = append(roots, filepath.Clean(b))
		if real, err := filepath.EvalSymlinks(b); err == nil && real != b {
			roots = append(roots, real)
		}
	}
	return roots
}
