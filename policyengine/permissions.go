package policyengine

import (
	"slices"
	"strings"
	"time"
)

// Entry is one permission value and the skills that declared it.
type Entry struct {
	Value string   `json:"value"`
	From  []string `json:"from"`
}

// Limit is one resource limit and the skills that asked for it (several
// skills when they asked for the same, largest, value).
type Limit[T int64 | int | time.Duration] struct {
	Value T        `json:"value"`
	From  []string `json:"from,omitempty"`
}

// Limits are resource caps. A zero Value means "not set".
type Limits struct {
	Memory  Limit[int64]         `json:"memory_bytes"`
	Pids    Limit[int]           `json:"pids"`
	Timeout Limit[time.Duration] `json:"timeout_ns"`
}

// Permissions is the merged permission set of the active skills, with path
// variables already expanded. Every list is sorted by Value and holds each
// value once; Merge keeps it that way.
type Permissions struct {
	Read  []Entry `json:"read"`
	Write []Entry `json:"write"`
	// Deny are fs.deny globs: a path they match is neither read nor
	// written inside the Read and Write grants (the system baseline
	// outside them is not carved).
	Deny    []Entry `json:"deny,omitempty"`
	Network []Entry `json:"network"`
	// Bind are the TCP ports ("8080") the command may listen on inside
	// its network namespace, or "*" for any: network.bind.
	Bind     []Entry `json:"bind,omitempty"`
	Exec     []Entry `json:"exec"`
	Env      []Entry `json:"env"`
	Services []Entry `json:"services"` // "name:access"
	Limits   Limits  `json:"limits"`
	// Budgets are the skills' network.budget caps, one per skill that
	// declared one; the proxy enforces every one (budget.go).
	Budgets []Budget `json:"budgets,omitempty"`

	// Declared lists the skills that declared a permissions block. When it
	// is empty the default sandbox applies (see Default).
	Declared []string `json:"declared"`
	// ExecDeclared lists the skills that declared an exec list: when any did,
	// only listed programs may run.
	ExecDeclared []string `json:"exec_declared"`
}

// Merge returns the union of p and q: lists are unioned (sources unioned
// too), limits take the larger value. Merge is commutative and idempotent,
// and leaves p and q unchanged.
func (p Permissions) Merge(q Permissions) Permissions {
	return Permissions{
		Read:         mergeEntries(p.Read, q.Read),
		Write:        mergeEntries(p.Write, q.Write),
		Deny:         mergeEntries(p.Deny, q.Deny),
		Network:      mergeEntries(p.Network, q.Network),
		Bind:         mergeEntries(p.Bind, q.Bind),
		Exec:         mergeEntries(p.Exec, q.Exec),
		Env:          mergeEntries(p.Env, q.Env),
		Services:     mergeEntries(p.Services, q.Services),
		Limits:       p.Limits.merge(q.Limits),
		Budgets:      mergeBudgets(p.Budgets, q.Budgets),
		Declared:     unionStrings(p.Declared, q.Declared),
		ExecDeclared: unionStrings(p.ExecDeclared, q.ExecDeclared),
	}
}

// IsDefault reports whether no skill declared permissions, so the default
// sandbox applies.
func (p Permissions) IsDefault() bool { return len(p.Declared) == 0 }

// ExecRestricted reports whether an exec allowlist is in force.
func (p Permissions) ExecRestricted() bool { return len(p.ExecDeclared) > 0 }

func (l Limits) merge(m Limits) Limits {
	return Limits{
		Memory:  maxLimit(l.Memory, m.Memory),
		Pids:    maxLimit(l.Pids, m.Pids),
		Timeout: maxLimit(l.Timeout, m.Timeout),
	}
}

func maxLimit[T int64 | int | time.Duration](a, b Limit[T]) Limit[T] {
	switch {
	case a.Value > b.Value:
		return Limit[T]{a.Value, slices.Clone(a.From)}
	case b.Value > a.Value:
		return Limit[T]{b.Value, slices.Clone(b.From)}
	}
	return Limit[T]{a.Value, unionStrings(a.From, b.From)}
}

// mergeEntries unions two sorted, de-duplicated entry lists into a new one.
func mergeEntries(a, b []Entry) []Entry {
	out := make([]Entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Value < b[j].Value):
			out = append(out, Entry{a[i].Value, slices.Clone(a[i].From)})
			i++
		case i == len(a) || b[j].Value < a[i].Value:
			out = append(out, Entry{b[j].Value, slices.Clone(b[j].From)})
			j++
		default:
			out = append(out, Entry{a[i].Value, unionStrings(a[i].From, b[j].From)})
			i++
			j++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// NewEntries builds a sorted, de-duplicated entry list of values declared
// by one source.
func NewEntries(source string, values []string) []Entry {
	vs := slices.Clone(values)
	slices.Sort(vs)
	vs = slices.Compact(vs)
	if len(vs) == 0 {
		return nil
	}
	out := make([]Entry, len(vs))
	for i, v := range vs {
		out[i] = Entry{Value: v, From: []string{source}}
	}
	return out
}

func unionStrings(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Values returns the values of entries.
func Values(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Value
	}
	return out
}

// sources joins the distinct sources of entries for use in a reason.
func sources(entries []Entry) string {
	var all []string
	for _, e := range entries {
		all = unionStrings(all, e.From)
	}
	return strings.Join(all, ", ")
}

// Normalize returns p in the documented shape (every list sorted by
// Value, each value once, sources merged) whatever order its lists are in.
func (p Permissions) Normalize() Permissions {
	fold := func(es []Entry) []Entry {
		var out []Entry
		for _, e := range es {
			out = mergeEntries(out, []Entry{{e.Value, unionStrings(nil, e.From)}})
		}
		return out
	}
	p.Read, p.Write, p.Deny, p.Network, p.Bind = fold(p.Read), fold(p.Write), fold(p.Deny), fold(p.Network), fold(p.Bind)
	p.Exec, p.Env, p.Services = fold(p.Exec), fold(p.Env), fold(p.Services)
	p.Declared, p.ExecDeclared = unionStrings(nil, p.Declared), unionStrings(nil, p.ExecDeclared)
	p.Budgets = mergeBudgets(nil, p.Budgets)
	return p
}
