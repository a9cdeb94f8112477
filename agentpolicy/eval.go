package agentpolicy

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/skill"
)

func (c *Caps) validate() error {
	for _, h := range c.Network {
		if _, err := policyengine.ParseHostPattern(h); err != nil {
			return fmt.Errorf("network: %w", err)
		}
	}
	if c.FS != nil {
		for _, g := range append(append([]string(nil), c.FS.Read...), c.FS.Write...) {
			x, err := skill.ExpandPath(g, skill.Variables{WorkDir: "/w", Home: "/h", TmpDir: "/t", DataDir: "/d"})
			if err != nil {
				return fmt.Errorf("fs: %w", err)
			}
			if _, err := policyengine.CompileGlob(x); err != nil {
				return fmt.Errorf("fs: %q: %w", g, err)
			}
		}
	}
	if l := c.Limits; l != nil {
		if l.Memory != "" {
			if _, err := skill.ParseSize(l.Memory); err != nil {
				return fmt.Errorf("limits.memory: %w", err)
			}
		}
		if l.Timeout != "" {
			if _, err := skill.ParseDuration(l.Timeout); err != nil {
				return fmt.Errorf("limits.timeout: %w", err)
			}
		}
		if l.Pids < 0 {
			return fmt.Errorf("limits.pids %d: must be positive", l.Pids)
		}
	}
	return nil
}

// capLayer is one layer's caps, compiled.
type capLayer struct {
	label                  string
	fs, network, exec, env bool // which dimensions the layer caps
	engine                 *policyengine.Engine
	perms                  policyengine.Permissions
	memory                 int64
	pids                   int
	timeout                time.Duration
}

// Options are what an Evaluator needs beyond the policy.
type Options struct {
	Vars   skill.Variables // expand the caps' paths
	Skills []string        // names of the active skills, for skill_name rules (but in skill_load questions)
	// Preapproved are the commands the active skills' allowed-tools
	// pre-approve (Preapprovals): where the policy would ask, they allow.
	Preapproved []Preapproval
}

// Evaluator decides with a Stack.
type Evaluator struct {
	stack       Stack
	url         *compiledURL
	allow, deny []compiledRule
	pre         []Preapproval
	caps        []capLayer
	skills      []string
	host        policyengine.HostAddrs // nil: no address is known to be the host's
}

// WithHostAddrs returns a copy of e whose network caps and URL presets
// know which addresses are this machine's own (policyengine.CatHost), as
// the proxy and check need.
func (e *Evaluator) WithHostAddrs(h policyengine.HostAddrs) *Evaluator {
	c := *e
	c.host = h
	c.caps = append([]capLayer(nil), e.caps...)
	for i := range c.caps {
		if c.caps[i].engine != nil {
			c.caps[i].engine = c.caps[i].engine.WithHostAddrs(h)
		}
	}
	return &c
}

// New compiles the stack.
func New(s Stack, o Options) (*Evaluator, error) {
	e := &Evaluator{stack: s, skills: o.Skills, pre: o.Preapproved}
	for _, l := range s {
		p := l.Policy
		if u := p.urlPolicy(); u != nil {
			c := compileURL(u, l.label())
			e.url = &c // the highest layer that sets it replaces the lower ones
		}
		for _, list := range []struct {
			dst   *[]compiledRule
			rules []Rule
		}{{&e.allow, p.Permissions.Allow}, {&e.deny, p.Permissions.Deny}} {
			for _, r := range list.rules {
				cr := compiledRule{Rule: r, layer: l.label()}
				if r.CommandGlob != "" {
					cr.glob = compileGlob(r.CommandGlob)
				}
				*list.dst = append(*list.dst, cr)
			}
		}
		if p.Caps != nil {
			c, err := compileCaps(p.Caps, l.label(), o.Vars)
			if err != nil {
				return nil, err
			}
			e.caps = append(e.caps, c)
		}
	}
	return e, nil
}

func compileCaps(c *Caps, label string, vars skill.Variables) (capLayer, error) {
	cl := capLayer{label: label}
	source := "policy " + label
	expand := func(globs []string) ([]string, error) {
		var out []string
		for _, g := range globs {
			for name, v := range map[string]string{"WORK_DIR": vars.WorkDir, "HOME": vars.Home, "TMPDIR": vars.TmpDir, "DATA_DIR": vars.DataDir} {
				if v == "" && (strings.Contains(g, "$"+name) || strings.Contains(g, "${"+name+"}") || (name == "HOME" && strings.HasPrefix(g, "~"))) {
					return nil, fmt.Errorf("policy %s: caps.fs %q uses $%s, which has no value here", label, g, name)
				}
			}
			x, err := skill.ExpandPath(g, vars)
			if err != nil {
				return nil, fmt.Errorf("policy %s: caps.fs: %w", label, err)
			}
			out = append(out, x)
		}
		return out, nil
	}
	if c.FS != nil && (len(c.FS.Read) > 0 || len(c.FS.Write) > 0) {
		cl.fs = true
		r, err := expand(c.FS.Read)
		if err != nil {
			return cl, err
		}
		w, err := expand(c.FS.Write)
		if err != nil {
			return cl, err
		}
		cl.perms.Read, cl.perms.Write = policyengine.NewEntries(source, r), policyengine.NewEntries(source, w)
	}
	cl.network, cl.exec, cl.env = len(c.Network) > 0, len(c.Exec) > 0, len(c.Env) > 0
	cl.perms.Network = policyengine.NewEntries(source, c.Network)
	cl.perms.Exec = policyengine.NewEntries(source, c.Exec)
	if cl.exec {
		cl.perms.ExecDeclared = []string{source}
	}
	cl.perms.Env = policyengine.NewEntries(source, c.Env)
	if l := c.Limits; l != nil {
		cl.memory, _ = skill.ParseSize(l.Memory)
		cl.timeout, _ = skill.ParseDuration(l.Timeout)
		cl.pids = l.Pids
	}
	enginePerms := cl.perms
	if !cl.fs {
		// This layer caps no files: its engine must not refuse an exec
		// check's redirections for want of fs grants.
		enginePerms.Read = policyengine.NewEntries(source, []string{"/**"})
		enginePerms.Write = policyengine.NewEntries(source, []string{"/**"})
	}
	eng, err := policyengine.New(enginePerms, policyengine.Options{WorkDir: vars.WorkDir})
	if err != nil {
		return cl, fmt.Errorf("policy %s: caps: %w", label, err)
	}
	cl.engine = eng
	return cl, nil
}

// Empty reports whether no layer is in force.
func (e *Evaluator) Empty() bool { return len(e.stack) == 0 }

func layered(d policyengine.Decision, label string) policyengine.Decision {
	d.Layer = label
	d.Unlisted = false // a cap is a ceiling: nobody is asked past it
	// The engine words its reasons for skills; these are caps.
	reason := strings.NewReplacer(
		"of skills policy "+label, "of the caps",
		"permissions.network.allow", "caps.network",
		"permissions.exec", "caps.exec",
		"permissions.fs.", "caps.fs.",
		"permissions.env", "caps.env",
	).Replace(d.Reason)
	d.Reason = "the " + label + " policy's caps: " + reason
	return d
}

var allow = policyengine.Decision{Action: policyengine.Allow, Reason: "no policy rule or cap applies"}

// capCheck runs check on every layer that caps the dimension.
func (e *Evaluator) capCheck(on func(capLayer) bool, check func(*policyengine.Engine) policyengine.Decision) policyengine.Decision {
	for _, c := range e.caps {
		if !on(c) {
			continue
		}
		if d := check(c.engine); d.Action != policyengine.Allow {
			return layered(d, c.label)
		}
	}
	return allow
}

// CheckRead decides a read against the fs caps.
func (e *Evaluator) CheckRead(path string) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.fs }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckRead(path) })
}

// CheckWrite decides a write against the fs caps.
func (e *Evaluator) CheckWrite(path string) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.fs }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckWrite(path) })
}

// CheckReadInside decides a read against the fs caps, of the path as a
// sandboxed command sees it (policyengine.Engine.CheckReadInside).
func (e *Evaluator) CheckReadInside(path string) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.fs }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckReadInside(path) })
}

// CheckWriteInside decides a write against the fs caps, of the path as a
// sandboxed command sees it.
func (e *Evaluator) CheckWriteInside(path string) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.fs }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckWriteInside(path) })
}

// CheckEnv decides an environment variable against the env caps.
func (e *Evaluator) CheckEnv(name string) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.env }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckEnv(name) })
}

// CheckNetwork decides host:port against the network caps.
func (e *Evaluator) CheckNetwork(host string, port int) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.network }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckNetwork(host, port) })
}

// CheckAddr decides an address a name resolved to against the network
// caps (address categories need a preset or an IP rule there too).
func (e *Evaluator) CheckAddr(host string, addr netip.Addr, port int) policyengine.Decision {
	return e.capCheck(func(c capLayer) bool { return c.network }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckAddr(host, addr, port) })
}

// CheckURL decides a URL: the URL policy (if any layer sets one), then the
// network caps.
func (e *Evaluator) CheckURL(raw string) policyengine.Decision {
	u, err := policyengine.ParseURL(raw)
	if err != nil {
		return policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot check URL: %v", err)}
	}
	return e.checkParsed(u, false)
}

// checkParsed decides a URL by the URL rules (a tunnel's by scheme and
// host only), then its host and port by the network rules.
func (e *Evaluator) checkParsed(u policyengine.URL, tunnel bool) policyengine.Decision {
	if u.IsIP {
		u.Category = policyengine.HostCategory(e.host, u.Addr, u.Category)
	}
	d := allow
	if e.url != nil {
		if tunnel {
			d = e.url.decideTunnel(u)
		} else {
			d = e.url.decide(u)
		}
		if d.Action != policyengine.Allow {
			return d
		}
	}
	if c := e.CheckNetwork(u.Host, u.Port); c.Action != policyengine.Allow {
		return c
	}
	return d
}

// CheckRequest decides a proxy request: an absolute-URI request by its
// URL, a CONNECT tunnel by https://host:port/.
func (e *Evaluator) CheckRequest(method, rawURL, host string, port int) policyengine.Decision {
	if rawURL != "" {
		return e.CheckURL(rawURL)
	}
	// A tunnel: its paths are unseen, so the URL rules apply by scheme
	// and host (decideTunnel).
	scheme := "https"
	if port == 80 {
		scheme = "http"
	}
	h := host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	u, err := policyengine.ParseURL(fmt.Sprintf("%s://%s:%d/", scheme, h, port))
	if err != nil {
		return policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot check the tunnel: %v", err)}
	}
	return e.checkParsed(u, true)
}

// CheckTool decides a tool use; command is its shell line, if any, or
// for SkillLoad the name of the skill to load.
func (e *Evaluator) CheckTool(tool, command string) policyengine.Decision {
	if tool == SkillLoad {
		return decideSkillLoad(e.allow, e.deny, strings.TrimSpace(command))
	}
	if strings.TrimSpace(command) == "" {
		return decideTool(e.allow, e.deny, tool, e.skills)
	}
	d := decideCommand(e.allow, e.deny, e.pre, tool, command, e.skills)
	if d.Action == policyengine.Deny {
		return d
	}
	if c := e.capCheck(func(c capLayer) bool { return c.exec }, func(x *policyengine.Engine) policyengine.Decision { return x.CheckExec(command) }); c.Action != policyengine.Allow {
		return c
	}
	return d
}

// CheckExec decides a shell line run by the bash tool.
func (e *Evaluator) CheckExec(line string) policyengine.Decision { return e.CheckTool("bash", line) }

// Combine is the answer when skills and policy both have a say: allowed
// only where both allow; the skills' denial first, then the policy's
// denial, then its confirm.
func Combine(skills, pol policyengine.Decision) policyengine.Decision {
	switch {
	case skills.Action != policyengine.Allow:
		return skills
	case pol.Action != policyengine.Allow:
		return pol
	}
	if pol.Layer != "" {
		skills.Reason += "; " + pol.Reason
		skills.Layer = pol.Layer
	}
	return skills
}

// LayerInfo describes a layer for explain.
type LayerInfo struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Summary string `json:"summary"`
}

// Layers describes the layers in force, lowest first.
func (e *Evaluator) Layers() []LayerInfo {
	var out []LayerInfo
	for _, l := range e.stack {
		p := l.Policy
		var parts []string
		if u := p.urlPolicy(); u != nil {
			def := u.Default
			if def == "" {
				def = "deny"
			}
			parts = append(parts, fmt.Sprintf("URL policy (default %s, %d allow, %d deny, %d allow_override, %d deny_override)",
				def, len(u.Allow), len(u.Deny), len(u.AllowOverride), len(u.DenyOverride)))
		}
		if n := len(p.Permissions.Allow) + len(p.Permissions.Deny); n > 0 {
			parts = append(parts, fmt.Sprintf("%d allow and %d deny tool/command rules", len(p.Permissions.Allow), len(p.Permissions.Deny)))
		}
		if p.Caps != nil {
			parts = append(parts, "caps")
		}
		if len(parts) == 0 {
			parts = []string{"empty"}
		}
		out = append(out, LayerInfo{Name: l.Name, Source: l.Source, Summary: strings.Join(parts, "; ")})
	}
	return out
}

// URLLayer names the layer whose URL policy is in force ("" for none).
func (e *Evaluator) URLLayer() string {
	if e.url == nil {
		return ""
	}
	return e.url.layer
}

// LimitCeilings are the smallest limit caps of all layers (0: none), which
// no flag may raise.
func (e *Evaluator) LimitCeilings() (memory int64, pids int, timeout time.Duration) {
	for _, c := range e.caps {
		if c.memory > 0 && (memory == 0 || c.memory < memory) {
			memory = c.memory
		}
		if c.pids > 0 && (pids == 0 || c.pids < pids) {
			pids = c.pids
		}
		if c.timeout > 0 && (timeout == 0 || c.timeout < timeout) {
			timeout = c.timeout
		}
	}
	return memory, pids, timeout
}
