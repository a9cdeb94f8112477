package skill

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"corral.dev/corral/policyengine"
)

// Merge expands each skill's path variables and returns the union of all
// skills' permissions. Skills without a permissions block add nothing; if
// none has one, the result IsDefault and the default sandbox applies.
func Merge(skills []*Skill, vars Variables) (policyengine.Permissions, error) {
	var out policyengine.Permissions
	for _, s := range skills {
		p, err := s.expanded(vars)
		if err != nil {
			return policyengine.Permissions{}, err
		}
		out = out.Merge(p)
	}
	return out, nil
}

// DefaultPermissions is the default sandbox for $WORK_DIR: system files
// read-only (the sandbox's baseline), the workspace read-write, no network,
// no exec restriction. Its limits are every run's defaults
// (sandbox.ResolveLimits), so they do not count as asked for.
func DefaultPermissions(workDir string) policyengine.Permissions {
	const source = "default sandbox"
	return policyengine.Permissions{
		Write: policyengine.NewEntries(source, []string{filepath.Join(workDir, "**")}),
	}
}

// expanded returns the skill's permissions with variables expanded and each
// entry attributed to the skill.
func (s *Skill) expanded(vars Variables) (policyengine.Permissions, error) {
	p := s.Permissions
	if p == nil {
		return policyengine.Permissions{}, nil
	}
	vals := map[string]string{
		"SKILL_DIR": s.Dir,
		"WORK_DIR":  vars.WorkDir,
		"DATA_DIR":  filepath.Join(vars.DataDir, s.Name),
		"HOME":      vars.Home,
		"TMPDIR":    vars.TmpDir,
	}
	paths := func(field string, globs []string) ([]policyengine.Entry, error) {
		out := make([]string, 0, len(globs))
		for i, g := range globs {
			v, err := expand(g, vals)
			if err == nil {
				_, err = policyengine.CompileGlob(v)
			}
			if err != nil {
				return nil, &Error{File: s.File, Field: fmt.Sprintf("permissions.fs.%s[%d]", field, i), Err: err}
			}
			out = append(out, filepath.Clean(v))
		}
		return policyengine.NewEntries(s.Name, out), nil
	}
	read, err := paths("read", p.Read)
	if err != nil {
		return policyengine.Permissions{}, err
	}
	write, err := paths("write", p.Write)
	if err != nil {
		return policyengine.Permissions{}, err
	}
	denyGlobs := make([]string, len(p.Deny))
	for i, g := range p.Deny {
		denyGlobs[i] = denyPath(g)
	}
	deny, err := paths("deny", denyGlobs)
	if err != nil {
		return policyengine.Permissions{}, err
	}
	network := make([]string, 0, len(p.Network))
	for _, h := range p.Network {
		hp, err := policyengine.ParseHostPattern(h)
		if err != nil {
			return policyengine.Permissions{}, &Error{File: s.File, Field: "permissions.network.allow", Err: err}
		}
		network = append(network, hp.String())
	}
	var services []string
	for name, access := range p.Services {
		services = append(services, name+":"+access)
	}
	slices.Sort(services)
	out := policyengine.Permissions{
		Read:     read,
		Write:    write,
		Deny:     deny,
		Network:  policyengine.NewEntries(s.Name, network),
		Bind:     policyengine.NewEntries(s.Name, p.Bind),
		Exec:     policyengine.NewEntries(s.Name, p.Exec),
		Env:      policyengine.NewEntries(s.Name, p.Env),
		Services: policyengine.NewEntries(s.Name, services),
		Declared: []string{s.Name},
	}
	if p.Exec != nil {
		out.ExecDeclared = []string{s.Name}
	}
	if !p.Budget.IsZero() {
		b := p.Budget
		b.From, b.Hosts = s.Name, slices.Clone(b.Hosts)
		out.Budgets = []policyengine.Budget{b}
	}
	src := []string{s.Name}
	if p.Limits.Memory > 0 {
		out.Limits.Memory = policyengine.Limit[int64]{Value: p.Limits.Memory, From: src}
	}
	if p.Limits.Pids > 0 {
		out.Limits.Pids = policyengine.Limit[int]{Value: p.Limits.Pids, From: src}
	}
	if p.Limits.Timeout > 0 {
		out.Limits.Timeout = policyengine.Limit[time.Duration]{Value: p.Limits.Timeout, From: src}
	}
	return out, nil
}
