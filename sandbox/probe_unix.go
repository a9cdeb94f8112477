//go:build linux || darwin

package sandbox

import (
	"path/filepath"
	"strings"

	"corral.dev/corral/policyengine"
)

// statGrants records the facts of every fs grant's base folder and, for a
// read glob the kernel cannot express, of the paths matching it now.
func (f *Facts) statGrants(p policyengine.Permissions) {
	for _, list := range [][]policyengine.Entry{p.Read, p.Write} {
		for _, e := range list {
			g, err := policyengine.CompileGlob(e.Value)
			if err != nil {
				continue
			}
			f.stat(g.Base())
			if !g.Subtree() && !g.Literal() && !strings.Contains(e.Value, "**") {
				matches, _ := filepath.Glob(e.Value)
				f.Matches[e.Value] = matches
				for _, m := range matches {
					f.stat(m)
				}
			}
		}
	}
}
