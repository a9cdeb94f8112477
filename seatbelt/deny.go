package seatbelt

import (
	"fmt"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// deny renders fs.deny after every allow (Seatbelt's later rule wins):
// read and write refused on each path a deny glob matches and below it,
// inside the fs grants, as policyengine decides. A glob that starts with
// "**" below its base ("/**/.env") is rendered once per grant it
// reaches, re-rooted at the grant's base, so the system baseline outside
// the grants keeps its files as on Linux; any other glob is rendered as
// it is, which can only deny more (a baseline file it matches too).
func (r *renderer) deny() error {
	if len(r.perms.Deny) == 0 {
		return nil
	}
	bases := policyengine.GrantBases(r.perms)
	var filters []string
	for _, e := range r.perms.Deny {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil {
			return fmt.Errorf("fs.deny %q: %w", e.Value, err)
		}
		note := comment("fs.deny " + e.Value + " (" + strings.Join(e.From, ", ") + ")")
		roots := []string{g.Base()}
		if segs := g.Segments(); len(segs) > 0 && segs[0].DoubleStar {
			roots = nil
			for _, b := range bases {
				switch {
				case within(b, g.Base()):
					roots = append(roots, b)
				case within(g.Base(), b):
					roots = append(roots, g.Base())
				}
			}
			slices.Sort(roots)
			roots = slices.Compact(roots)
		}
		for _, root := range roots {
			rule := globRuleAt(g, root)
			switch rule.Kind {
			case filterLiteral:
				rule.Kind = filterSubpath
			case filterRegex:
				rule.Value = strings.TrimSuffix(rule.Value, "$") + "(/.*)?$"
			}
			filters = append(filters, r.filter("DENY", rule)+" ; "+note)
		}
	}
	r.line("")
	r.line("; fs.deny: carved out of the grants above for reading and writing, with")
	r.line("; everything inside a denied folder.")
	r.rule("deny file-read* file-write* file-map-executable process-exec", filters)
	return nil
}

// within tells whether p is root or below it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
