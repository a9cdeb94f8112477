package policyengine

import (
	"fmt"
	"path"
	"strings"
)

// fs.deny globs carve paths out of the skills' fs.read and fs.write
// grants: a path a deny glob matches, or that lies in a folder one
// matches, is neither read nor written, if it
// lies inside a grant's base folder (the tree the sandbox binds and
// walks for matches). The system baseline outside every grant is not
// carved: the sandbox does not walk /usr for matches, so a deny of
// **/*.pem leaves /etc/ssl/certs readable unless a grant covers it, and
// check says so.

// compileDeny compiles p's deny globs and lists the grants' bases.
func compileDeny(p Permissions) ([]globRule, []string, error) {
	var rules []globRule
	for _, entry := range p.Deny {
		g, err := CompileGlob(entry.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("deny rule %q: %w", entry.Value, err)
		}
		rules = append(rules, globRule{glob: g, entry: entry, why: matchesFrom(entry)})
	}
	if len(rules) == 0 {
		return nil, nil, nil
	}
	return rules, GrantBases(p), nil
}

// GrantBases are the base folders (or files) of p's fs.read and fs.write
// globs: where fs.deny applies.
func GrantBases(p Permissions) []string {
	var bases []string
	for _, list := range [][]Entry{p.Read, p.Write} {
		for _, e := range list {
			if g, err := CompileGlob(e.Value); err == nil {
				bases = append(bases, g.Base())
			}
		}
	}
	return bases
}

// denied returns the deny rule that carves clean out of a grant: one
// that matches clean or a folder above it (a denied folder is masked
// whole in the sandbox, so nothing below it is reached either).
func (e *Engine) denied(clean string) (globRule, bool) {
	if len(e.deny) == 0 || !within(clean, e.granted) {
		return globRule{}, false
	}
	for p := clean; ; p = path.Dir(p) {
		for _, r := range e.deny {
			if r.glob.matchClean(p) {
				return r, true
			}
		}
		if p == "/" {
			return globRule{}, false
		}
	}
}

// Denied reports the fs.deny entry that carves the absolute, clean path
// p out of the grants, if one does.
func (e *Engine) Denied(p string) (Entry, bool) {
	r, ok := e.denied(e.abs(p))
	return r.entry, ok
}

// within tells whether p is one of roots or below one, segment by
// segment.
func within(p string, roots []string) bool {
	for _, r := range roots {
		if r == "/" || p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
