package policyengine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Cap is one egress budget: how many requests (connections the proxy
// decided to allow) and how many bytes the client may send upstream.
// Zero means no cap of that kind.
type Cap struct {
	Requests int64 `json:"requests,omitempty"`
	Sent     int64 `json:"sent_bytes,omitempty"`
}

// IsZero reports whether c caps nothing.
func (c Cap) IsZero() bool { return c.Requests == 0 && c.Sent == 0 }

// String reads like the YAML: "requests 20, sent 1048576 bytes".
func (c Cap) String() string {
	var parts []string
	if c.Requests > 0 {
		parts = append(parts, "requests "+strconv.FormatInt(c.Requests, 10))
	}
	if c.Sent > 0 {
		parts = append(parts, "sent "+strconv.FormatInt(c.Sent, 10)+" bytes")
	}
	return strings.Join(parts, ", ")
}

// HostCap is a budget shared by every target a host pattern (as in
// network.allow) matches.
type HostCap struct {
	Pattern string `json:"pattern"`
	Cap
}

// Budget is one skill's network.budget. Each caps every host on its own
// (all its ports together), Hosts cap the targets their pattern matches,
// together, instead of Each, and Total caps the whole run. A request
// counts against every cap that applies and must fit in all of them.
type Budget struct {
	From  string    `json:"from"`
	Each  Cap       `json:"each"`
	Total Cap       `json:"total"`
	Hosts []HostCap `json:"hosts,omitempty"` // sorted by Pattern
}

// IsZero reports whether b caps nothing.
func (b Budget) IsZero() bool {
	return b.Each.IsZero() && b.Total.IsZero() && len(b.Hosts) == 0
}

// mergeBudgets unions two budget lists. Budgets are never combined into
// one: each skill's budget stays as it declared it and the proxy enforces
// all of them, so merging can only add caps, never lift one another skill
// set. (A larger value cannot win here, as it does for limits: a budget
// guards data leaving the sandbox, and the skill that set the smaller one
// relies on it.) Sorted by skill, then by content, duplicates dropped, so
// the merge is commutative and idempotent.
func mergeBudgets(a, b []Budget) []Budget {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, compareBudgets)
	out = slices.CompactFunc(out, func(x, y Budget) bool { return compareBudgets(x, y) == 0 })
	if len(out) == 0 {
		return nil
	}
	return out
}

func compareBudgets(x, y Budget) int {
	if c := cmp.Compare(x.From, y.From); c != 0 {
		return c
	}
	if c := compareCaps(x.Each, y.Each); c != 0 {
		return c
	}
	if c := compareCaps(x.Total, y.Total); c != 0 {
		return c
	}
	return slices.CompareFunc(x.Hosts, y.Hosts, func(p, q HostCap) int {
		if c := cmp.Compare(p.Pattern, q.Pattern); c != 0 {
			return c
		}
		return compareCaps(p.Cap, q.Cap)
	})
}

func compareCaps(x, y Cap) int {
	if c := cmp.Compare(x.Requests, y.Requests); c != 0 {
		return c
	}
	return cmp.Compare(x.Sent, y.Sent)
}

// Lines describes b for explain, one cap a line.
func (b Budget) Lines() []string {
	var out []string
	if !b.Each.IsZero() {
		out = append(out, fmt.Sprintf("each host: %s", b.Each))
	}
	for _, h := range b.Hosts {
		out = append(out, fmt.Sprintf("%s (together): %s", h.Pattern, h.Cap))
	}
	if !b.Total.IsZero() {
		out = append(out, fmt.Sprintf("all hosts together: %s", b.Total))
	}
	return out
}
