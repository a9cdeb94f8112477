package agentpolicy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// Narrow intersects the skills' permissions with every layer's caps, for
// the kernel sandbox. An entry inside a cap stays; an entry wider than a
// cap becomes the cap; an entry neither inside nor around a cap is
// dropped. Where containment cannot be told (two globs with wildcards
// mid-path), the entry is dropped: narrower is safe. Limits become the
// smaller of the two. The notes say what changed.
func (e *Evaluator) Narrow(p policyengine.Permissions) (policyengine.Permissions, []string) {
	var notes []string
	for _, c := range e.caps {
		source := "policy " + c.label
		if c.fs {
			capRead := append(append([]policyengine.Entry(nil), c.perms.Read...), c.perms.Write...)
			var n1, n2 []string
			// A write grant implies read: what the caps cut from the write
			// may still be readable.
			p.Read, n1 = narrowGlobs(mergeEntries(p.Read, p.Write), capRead, source)
			p.Write, n2 = narrowGlobs(p.Write, c.perms.Write, source)
			notes = append(append(notes, n1...), n2...)
		}
		if c.network {
			var n []string
			p.Network, n = narrowHosts(p.Network, c.perms.Network, source, e.host)
			notes = append(notes, n...)
		}
		if c.exec {
			p.Exec, notes = keepIf(p.Exec, notes, source, "exec", func(v string) bool { return slices.Contains(policyengine.Values(c.perms.Exec), v) })
			if len(p.Exec) == 0 && len(p.ExecDeclared) == 0 {
				// No skill restricted exec: the cap does.
				p.Exec = c.perms.Exec
				p.ExecDeclared = []string{source}
				notes = append(notes, fmt.Sprintf("exec: only %s (%s)", strings.Join(policyengine.Values(c.perms.Exec), ", "), source))
			}
		}
		if c.env {
			p.Env, notes = keepIf(p.Env, notes, source, "env", func(v string) bool { return c.engine.CheckEnv(v).Action == policyengine.Allow })
		}
		if c.memory > 0 && (p.Limits.Memory.Value == 0 || p.Limits.Memory.Value > c.memory) {
			p.Limits.Memory = policyengine.Limit[int64]{Value: c.memory, From: []string{source}}
		}
		if c.pids > 0 && (p.Limits.Pids.Value == 0 || p.Limits.Pids.Value > c.pids) {
			p.Limits.Pids = policyengine.Limit[int]{Value: c.pids, From: []string{source}}
		}
		if c.timeout > 0 && (p.Limits.Timeout.Value == 0 || p.Limits.Timeout.Value > c.timeout) {
			p.Limits.Timeout.Value, p.Limits.Timeout.From = c.timeout, []string{source}
		}
	}
	// Back to the documented shape: sorted, one entry a value, sources
	// merged.
	return p.Normalize(), notes
}

func keepIf(entries []policyengine.Entry, notes []string, source, what string, ok func(string) bool) ([]policyengine.Entry, []string) {
	var kept []policyengine.Entry
	for _, e := range entries {
		if ok(e.Value) {
			kept = append(kept, e)
		} else {
			notes = append(notes, fmt.Sprintf("%s %s dropped: outside the caps of %s", what, e.Value, source))
		}
	}
	return kept, notes
}

// narrowGlobs intersects path globs with cap globs: an entry inside any
// cap stays; otherwise every cap inside the entry takes its place.
func narrowGlobs(entries, caps []policyengine.Entry, source string) ([]policyengine.Entry, []string) {
	var out []policyengine.Entry
	var notes []string
	var capGlobs []*policyengine.Glob
	for _, c := range caps {
		cg, _ := policyengine.CompileGlob(c.Value)
		capGlobs = append(capGlobs, cg)
	}
	for _, e := range entries {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil {
			continue
		}
		inside := false
		for _, cg := range capGlobs {
			if cg != nil && globInside(g, cg) {
				inside = true
				break
			}
		}
		if inside {
			out = append(out, e)
			continue
		}
		var narrowed []string
		for i, cg := range capGlobs {
			if cg != nil && globInside(cg, g) {
				out = append(out, policyengine.Entry{Value: caps[i].Value, From: append(append([]string(nil), e.From...), source)})
				narrowed = append(narrowed, caps[i].Value)
			}
		}
		if len(narrowed) > 0 {
			notes = append(notes, fmt.Sprintf("%s narrowed to %s (%s)", e.Value, strings.Join(narrowed, ", "), source))
		} else {
			notes = append(notes, fmt.Sprintf("%s dropped: outside the caps of %s", e.Value, source))
		}
	}
	return out, notes
}

// globInside reports whether every path a matches, b matches.
func globInside(a, b *policyengine.Glob) bool {
	if b.Subtree() {
		return under(a.Base(), b.Base())
	}
	if a.Literal() {
		return b.Match(a.Base())
	}
	return a.String() == b.String()
}

func under(p, root string) bool {
	p, root = path.Clean(p), path.Clean(root)
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// narrowHosts intersects host patterns with cap patterns. A wildcard
// never grants the machine's own addresses (host, when known), so a cap
// naming one of them does not narrow it to that address: the
// intersection is empty there.
func narrowHosts(entries, caps []policyengine.Entry, source string, host policyengine.HostAddrs) ([]policyengine.Entry, []string) {
	var out []policyengine.Entry
	var notes []string
	for _, e := range entries {
		hp, err := policyengine.ParseHostPattern(e.Value)
		if err != nil {
			continue
		}
		var wider []policyengine.Entry
		kept := false
		for _, c := range caps {
			cp, err := policyengine.ParseHostPattern(c.Value)
			if err != nil {
				continue
			}
			if cp.Covers(hp) {
				out = append(out, e)
				kept = true
				break
			}
			covers := hp.Covers(cp)
			if cp.IsIP() && host != nil && host.IsHost(cp.Addr()) {
				covers = hp.CoversHostAddr(cp)
			}
			if covers {
				wider = append(wider, policyengine.Entry{Value: c.Value, From: append(append([]string(nil), e.From...), source)})
			}
		}
		switch {
		case kept:
		case len(wider) > 0:
			out = append(out, wider...)
			notes = append(notes, fmt.Sprintf("%s narrowed to %s (%s)", e.Value, strings.Join(policyengine.Values(wider), ", "), source))
		default:
			notes = append(notes, fmt.Sprintf("%s dropped: outside the network caps of %s", e.Value, source))
		}
	}
	return dedupe(out), notes
}

func mergeEntries(a, b []policyengine.Entry) []policyengine.Entry {
	return dedupe(append(append([]policyengine.Entry(nil), a...), b...))
}

func dedupe(es []policyengine.Entry) []policyengine.Entry {
	var out []policyengine.Entry
	seen := map[string]int{}
	for _, e := range es {
		if i, ok := seen[e.Value]; ok {
			out[i].From = append(out[i].From, e.From...)
			continue
		}
		seen[e.Value] = len(out)
		out = append(out, e)
	}
	return out
}
