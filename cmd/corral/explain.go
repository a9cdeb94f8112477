package main

import (
	"corral.dev/corral"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/skill"
)

var explainCommand = command{
	name:  "explain",
	usage: "",
	summary: `Show the skills, the merged permissions (and which skill each entry came
from) and what the sandbox will allow.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		var pf policyFlags
		pf.register(fs)
		asJSON := fs.Bool("json", false, "print JSON instead of text")
		tier := sandbox.TierAuto
		fs.Func("tier", "explain the plan of `TIER`: auto (the one exec would choose here), namespaces or landlock", func(s string) error {
			t, err := sandbox.ParseTier(s)
			tier = t
			return err
		})
		return func(args []string) error {
			if len(args) > 0 {
				return failed(fmt.Errorf("unexpected arguments %q", args))
			}
			l, err := sf.load()
			if err != nil {
				return failed(err)
			}
			ev, err := pf.load(l)
			if err != nil {
				return failed(err)
			}
			x, err := explain(l, ev, pf.global, tier)
			if err != nil {
				return failed(err)
			}
			if *asJSON {
				enc := json.NewEncoder(escapedJSON{os.Stdout})
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(x)
			}
			x.writeText(escapedText{os.Stdout})
			return nil
		}
	},
}

type skillView struct {
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	File          string            `json:"file"`
	Declares      bool              `json:"declares_permissions"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	AllowedTools  []toolView        `json:"allowed_tools,omitempty"`
}

// toolView is an allowed-tools entry and, in words, what it became.
type toolView struct {
	skill.Tool
	Mapping string `json:"mapping"`
}

func newSkillView(s *skill.Skill) skillView {
	v := skillView{Name: s.Name, Description: s.Description, File: s.File, Declares: s.Permissions != nil,
		License: s.License, Compatibility: s.Compatibility, Metadata: s.Metadata}
	for _, t := range s.AllowedTools {
		v.AllowedTools = append(v.AllowedTools, toolView{t, t.Mapping()})
	}
	return v
}

// explanation is what explain prints.
type explanation struct {
	Skills      []skillView              `json:"skills"`
	WorkDir     string                   `json:"work_dir"`
	Default     bool                     `json:"default_sandbox"`
	Permissions policyengine.Permissions `json:"permissions"`
	Summary     []string                 `json:"summary"`
	Plan        *sandbox.Plan            `json:"plan,omitempty"`
	PlanError   string                   `json:"plan_error,omitempty"`
	Policy      *policyView              `json:"policy,omitempty"`
	// Protected is the list of paths kept read-only inside writable
	// roots (policyengine.ProtectedPaths).
	Protected []policyengine.ProtectedPath `json:"protected_paths"`
}

// policyView is the agent policy in force and what it did to the skills'
// permissions.
type policyView struct {
	Layers    []agentpolicy.LayerInfo `json:"layers"`
	URLLayer  string                  `json:"url_policy_layer,omitempty"`
	Narrowing []string                `json:"narrowing,omitempty"`
}

func explain(l *corral.Skills, ev *agentpolicy.Evaluator, global string, tier sandbox.Tier) (*explanation, error) {
	x := &explanation{WorkDir: l.Vars.WorkDir, Default: l.Perms.IsDefault(), Protected: policyengine.ProtectedPaths}
	if ev != nil {
		capped, notes, err := l.Capped(ev)
		if err != nil {
			return nil, err
		}
		x.Policy = &policyView{Layers: ev.Layers(), URLLayer: ev.URLLayer(), Narrowing: notes}
		l = &corral.Skills{List: l.List, Perms: capped.Perms, Vars: l.Vars, Engine: capped.Engine}
	}
	x.Permissions = l.Perms
	for _, s := range l.List {
		x.Skills = append(x.Skills, newSkillView(s))
	}
	x.Summary = summarise(l.Perms)
	spec := sandbox.Spec{WorkDir: l.Vars.WorkDir, Env: []string{"PATH=" + os.Getenv("PATH")}, BestEffort: true, Home: l.Vars.Home, Keep: corral.KeptPaths(l, ev, global), Tier: tier, HomeStore: l.HomeStore(tier), HomeGit: l.HasGitIdentity(), SetEnv: l.Exports}
	plan, err := sandbox.BuildPlan(l.Perms, spec, sandbox.Probe(l.Perms, spec))
	if err != nil {
		x.PlanError = err.Error()
	}
	x.Plan = plan
	return x, nil
}

// summarise says in sentences what the merged permissions allow.
func summarise(p policyengine.Permissions) []string {
	var out []string
	if p.IsDefault() {
		out = append(out, "No skill declares permissions, so the default sandbox applies: system files read-only, the work directory read-write, no network, any program, 512 MiB of memory.")
	}
	out = append(out, fmt.Sprintf("Files: read %s; write %s; the system baseline (%d paths such as /usr/** and /etc/ssl/certs/**, but not /usr/etc or /usr/local/etc) is read-only.",
		orNone(policyengine.Values(p.Read)), orNone(policyengine.Values(p.Write)), len(policyengine.SystemRead)))
	if len(p.Deny) > 0 {
		out = append(out, "Denied inside those grants, for read and write (fs.deny): "+strings.Join(policyengine.Values(p.Deny), ", ")+"; what matches at launch is masked (empty, read-only, mode 000; the landlock tier refuses it), and a name that could match made in a write grant is refused by corral's seccomp supervisor, which makes every new name there itself.")
	}
	if len(p.Network) == 0 {
		out = append(out, "Network: none (no TCP, no UDP, no DNS).")
	} else {
		out = append(out, "Network: only "+strings.Join(policyengine.Values(p.Network), ", ")+"; loopback, private, link-local and cloud-metadata addresses only where a preset: rule or an IP rule names them.")
	}
	if ports, any := p.BindPorts(); any {
		out = append(out, "Listening: any TCP port, reachable from inside the sandbox only (its own network namespace).")
	} else if len(ports) > 0 {
		out = append(out, "Listening: TCP ports "+strings.Join(policyengine.Values(p.Bind), ", ")+", reachable from inside the sandbox only (its own network namespace).")
	}
	if len(p.Budgets) > 0 {
		out = append(out, fmt.Sprintf("Egress budgets: the proxy enforces the network.budget of %d skill(s) (above); a request over a cap is refused with 403 and a connection over a byte cap is cut.", len(p.Budgets)))
	}
	if p.ExecRestricted() {
		out = append(out, "Programs: only "+orNone(policyengine.Values(p.Exec))+" (exec lists of "+strings.Join(p.ExecDeclared, ", ")+").")
	} else {
		out = append(out, "Programs: any (no skill declares an exec list).")
	}
	out = append(out, "Environment: "+strings.Join(append(policyengine.Values(p.Env), policyengine.DefaultEnv...), ", ")+"; every other variable is dropped.")
	out = append(out, "Limits: "+sandbox.LimitsText(sandbox.ResolveLimits(p.Limits, sandbox.LimitFlags{}))+".")
	return out
}

func (x *explanation) writeText(w io.Writer) {
	fmt.Fprintf(w, "skills:\n")
	if len(x.Skills) == 0 {
		fmt.Fprintf(w, "  (none)\n")
	}
	for _, s := range x.Skills {
		s.writeText(w, x.Policy != nil)
	}
	fmt.Fprintf(w, "\nwork dir: %s\n", x.WorkDir)
	if pv := x.Policy; pv != nil {
		fmt.Fprintf(w, "\nagent policy (lowest layer first; the permissions below are already capped by it):\n")
		for _, l := range pv.Layers {
			fmt.Fprintf(w, "  %-10s %s: %s\n", l.Name, l.Source, l.Summary)
		}
		if pv.URLLayer != "" {
			fmt.Fprintf(w, "  URL policy: the %s layer's (the highest that sets one replaces the others)\n", pv.URLLayer)
		}
		for _, n := range pv.Narrowing {
			fmt.Fprintf(w, "  capped: %s\n", n)
		}
	}
	if x.Default {
		fmt.Fprintf(w, "\ndefault sandbox: no skill declares permissions\n")
	}
	p := x.Permissions
	fmt.Fprintf(w, "\nmerged permissions:\n")
	section := func(name string, entries []policyengine.Entry) {
		fmt.Fprintf(w, "  %s:\n", name)
		if len(entries) == 0 {
			fmt.Fprintf(w, "    (none)\n")
		}
		for _, e := range entries {
			fmt.Fprintf(w, "    %-40s  from %s\n", e.Value, strings.Join(e.From, ", "))
		}
	}
	section("fs.read", p.Read)
	section("fs.write", p.Write)
	if len(p.Deny) > 0 {
		section("fs.deny", p.Deny)
	}
	section("network.allow", p.Network)
	section("network.bind", p.Bind)
	writeBudgets(w, p.Budgets)
	section("exec", p.Exec)
	section("env", p.Env)
	section("services", p.Services)
	fmt.Fprintf(w, "\nwhat the sandbox allows:\n")
	for _, s := range x.Summary {
		fmt.Fprintf(w, "  - %s\n", s)
	}
	if x.PlanError != "" {
		fmt.Fprintf(w, "\nkernel plan: %s\n", x.PlanError)
	}
	if x.Plan != nil {
		writePlan(w, x.Plan)
	}
	writeProtected(w, x.Protected)
}

// writeBudgets prints every skill's network.budget, a cap a line.
func writeBudgets(w io.Writer, budgets []policyengine.Budget) {
	fmt.Fprintf(w, "  network.budget (every skill's caps hold, per run; sent counts bytes to the host):\n")
	if len(budgets) == 0 {
		fmt.Fprintf(w, "    (none)\n")
	}
	for _, b := range budgets {
		for _, l := range b.Lines() {
			fmt.Fprintf(w, "    %-40s  from %s\n", l, b.From)
		}
	}
}

// writeText prints the skill, its Agent Skills fields and what each
// allowed-tools entry became; policy says whether an agent policy is in
// force, without which pre-approvals change no answer.
func (s skillView) writeText(w io.Writer, policy bool) {
	note := ""
	if !s.Declares {
		note = "  [declares no permissions]"
	}
	fmt.Fprintf(w, "  %s  %s%s\n    %s\n", s.Name, s.File, note, s.Description)
	if s.License != "" {
		fmt.Fprintf(w, "    license: %s\n", s.License)
	}
	if s.Compatibility != "" {
		fmt.Fprintf(w, "    compatibility: %s\n", s.Compatibility)
	}
	if len(s.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(s.Metadata)) {
			kv = append(kv, k+"="+s.Metadata[k])
		}
		fmt.Fprintf(w, "    metadata: %s\n", strings.Join(kv, ", "))
	}
	if len(s.AllowedTools) == 0 {
		return
	}
	effect := "no agent policy is in force, so nothing asks and they change no answer"
	if policy {
		effect = "allowed where the agent policy would ask; never past its deny rules or caps, nor the exec list"
	}
	fmt.Fprintf(w, "    allowed-tools (pre-approved commands: %s):\n", effect)
	for _, t := range s.AllowedTools {
		fmt.Fprintf(w, "      %-28s -> %s\n", t.Entry, t.Mapping)
	}
}

// writeProtected prints the paths kept read-only inside writable roots.
func writeProtected(w io.Writer, list []policyengine.ProtectedPath) {
	fmt.Fprintf(w, "\nprotected paths: read-only inside every writable root unless a write grant names them exactly; created by a run, they are renamed to NAME%s-RANDOM afterwards\n", sandbox.QuarantineSuffix)
	fmt.Fprintf(w, "  (also: the active skills' folders and the policy files, always; private keys in ~/.ssh are empty where a grant reaches them)\n")
	for _, p := range list {
		at, name := "<root>/", p.Path
		if p.Home {
			at = "~/"
		}
		if p.Dir {
			name += "/"
		}
		fmt.Fprintf(w, "    %-32s %s\n", at+name, p.Why)
	}
}

// writePlan prints the kernel plan: each rule beside the glob it came from.
func writePlan(w io.Writer, p *sandbox.Plan) {
	fmt.Fprintf(w, "\nkernel plan (%s tier):\n  protections:\n", p.Tier.Name)
	for _, pr := range p.Protections {
		mark := "yes"
		if !pr.Enforced {
			mark = "NO "
		}
		fmt.Fprintf(w, "    [%s] %-15s %s\n", mark, pr.Name, pr.Detail)
	}
	fmt.Fprintf(w, "  landlock (ABI %d) rules:\n", p.Landlock.ABI)
	for _, r := range p.Landlock.Rules {
		fmt.Fprintf(w, "    %-45s %-22s from %s\n", r.Path, rightsOrCustom(r), r.From)
	}
	for _, r := range p.Landlock.PortRules {
		fmt.Fprintf(w, "    %-45s %-22s from %s\n", fmt.Sprintf("TCP port %d", r.Port), r.Rights, r.From)
	}
	if p.Landlock.HandledNet != 0 && len(p.Landlock.PortRules) == 0 {
		fmt.Fprintf(w, "    %-45s %-22s\n", "TCP (any port)", "no bind, no connect")
	}
	if p.Proxy != nil {
		fmt.Fprintf(w, "  egress proxy (served by corral, enforcing %d network.allow rule(s)):\n", p.Proxy.Rules)
		fmt.Fprintf(w, "    listens on %s inside the sandbox\n", strings.Join(p.Proxy.Addrs, " and "))
		fmt.Fprintf(w, "    HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and lower-case) are %s; NO_PROXY covers localhost\n", sandbox.ProxyURL)
	} else {
		fmt.Fprintf(w, "  network: none (no network.allow rule: no proxy, only lo)\n")
	}
	fmt.Fprintf(w, "  mounts (new root holding only these):\n")
	for _, m := range p.Mounts {
		flags := ""
		if m.ReadOnly {
			flags += " ro"
		}
		if m.NoExec {
			flags += " noexec"
		}
		src := ""
		if m.Source != "" && m.Source != m.Target {
			src = " <- " + m.Source
		}
		fmt.Fprintf(w, "    %-8s %s%s%s  (%s)\n", m.Kind, m.Target, src, flags, m.Why)
	}
	if len(p.Deny) > 0 {
		fmt.Fprintf(w, "  fs.deny (read and write refused inside %s; the mounts of kind mask above hide what matches at launch):\n", strings.Join(p.DenyWithin, ", "))
		for _, d := range p.Deny {
			fmt.Fprintf(w, "    %-40s  from %s\n", d.Glob, d.From)
		}
	}
	if len(p.Notify) > 0 {
		names := make([]string, len(p.Notify))
		for i, n := range p.Notify {
			names[i] = n.Syscall
		}
		fmt.Fprintf(w, "  supervised (fs.deny: corral makes every new name, the kernel rules hold no make right): %s\n", strings.Join(names, ", "))
	}
	if len(p.Quarantine) > 0 {
		fmt.Fprintf(w, "  protected paths missing at launch, renamed to NAME%s-RANDOM after the run if the command creates them:\n", sandbox.QuarantineSuffix)
		for _, q := range p.Quarantine {
			if q.Real != "" {
				fmt.Fprintf(w, "    %s (a symlink: quarantined unless it still leads to %s)\n", q.Path, q.Real)
			} else {
				fmt.Fprintf(w, "    %s\n", q.Path)
			}
		}
	}
	if p.Exec.Restricted {
		fmt.Fprintf(w, "  executable files:\n")
		for _, t := range p.Exec.Allowed {
			fmt.Fprintf(w, "    %-45s %s\n", t.Path, t.From)
		}
	}
	fmt.Fprintf(w, "  seccomp: %d rules (every other syscall allowed):\n", len(p.Seccomp))
	for _, r := range p.Seccomp {
		cond := ""
		if r.Arg != nil {
			cond = fmt.Sprintf(" when arg%d %s 0x%x/0x%x", r.Arg.Index, r.Arg.Op, r.Arg.Value, r.Arg.Mask)
		}
		if r.When != nil {
			cond += fmt.Sprintf(" and arg%d %s 0x%x/0x%x", r.When.Index, r.When.Op, r.When.Value, r.When.Mask)
		}
		fmt.Fprintf(w, "    %-20s %s%s  (%s)\n", r.Syscall, r.Errno, cond, r.Why)
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintf(w, "  warnings:\n")
		for _, s := range p.Warnings {
			fmt.Fprintf(w, "    ! %s\n", s)
		}
	}
}

func rightsOrCustom(r sandbox.PathRule) string {
	if r.Rights != "" {
		return r.Rights
	}
	return fmt.Sprintf("0x%x", r.Access)
}

func orNone(v []string) string {
	if len(v) == 0 {
		return "nothing"
	}
	return strings.Join(v, ", ")
}
