package netns

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
)

// The proxy asks (Config.Ask) only about a host no rule lists: a request
// the skills' allow list or the agent's URL policy refuses for want of a
// rule, and nothing else. A deny rule, a policy cap, network.budget, an
// address category of an IP literal (loopback, the host's own addresses,
// private, link-local, metadata) or the proxy itself refuse without a
// question. The question comes after the rules and the budget and before
// the name is resolved (decide.go): a lookup of a name no rule lists
// would carry the command's data to that name's servers. An allowing
// answer still meets the checks of every address the name resolves to,
// so it only lets through what the allow list alone held back.

// grants are the host:ports an allow-run (or remember) answer opened for
// the rest of the run.
type grants struct {
	mu   sync.Mutex
	open map[string]ask.Answer
}

func (g *grants) lookup(key string) (ask.Answer, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.open[key]
	return a, ok
}

func (g *grants) add(key string, a ask.Answer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[string]ask.Answer{}
	}
	g.open[key] = a
}

// askable reports whether refusal d of host may be put to the caller.
func (p *Proxy) askable(host string, d policyengine.Decision) bool {
	if p.cfg.Ask == nil || !d.Unlisted {
		return false
	}
	_, cat, addr, isIP := policyengine.Classify(host)
	if isIP {
		cat = policyengine.HostCategory(p.cfg.HostAddrs, addr, cat)
	}
	return cat == policyengine.CatNone
}

// ask puts the request to the caller, or finds an allow-run given earlier
// in the run, and returns the decision to go on with (Allow) or to refuse
// with, and the answer for the audit.
func (p *Proxy) ask(req *request, host string, refused policyengine.Decision) (policyengine.Decision, *ask.Answer) {
	key := hostPort(host, req.port)
	if a, ok := p.grants.lookup(key); ok {
		a = ask.Answer{Reply: ask.AllowRun, By: "run", Note: "allowed for the rest of the run by an earlier answer (" + a.By + ")"}
		return policyengine.Decision{Action: policyengine.Allow, Rule: "ask: allow-run", Reason: key + " was allowed for this run over the ask channel"}, &a
	}
	q := ask.Question{Kind: ask.Network, Host: host, Port: req.port, Method: req.method, Reason: refused.Reason,
		Grants: map[ask.Reply]string{
			ask.AllowOnce: "this one " + what(req) + " to " + key,
			ask.AllowRun:  "every connection to " + key + " until this run ends",
			ask.Deny:      "refuse it (403)",
			ask.Remember:  "write a rule allowing " + key + " to the agent policy file, then allow it for this run; later runs with an ask channel reach it without a question",
		}}
	if !req.connect {
		q.URL = "http://" + authority(host, req.port, 80) + req.target
	}
	start := time.Now()
	a := p.cfg.Ask(p.ctx, q)
	if !a.Reply.Allows() {
		reason := refused.Reason + "; the ask channel answered " + string(a.Reply) + " (by " + a.By + ")"
		if a.Note != "" {
			reason += ": " + a.Note
		}
		refused.Reason = reason
		return refused, &a
	}
	if a.Reply != ask.AllowOnce {
		p.grants.add(key, a)
	}
	return policyengine.Decision{Action: policyengine.Allow, Rule: "ask: " + string(a.Reply),
		Reason: fmt.Sprintf("%s was allowed over the ask channel (%s by %s after %s)", key, a.Reply, a.By, time.Since(start).Round(time.Millisecond))}, &a
}

func what(req *request) string {
	if req.connect {
		return "tunnel"
	}
	return req.method + " request"
}

// hostPort is host:port, [v6]:port for IPv6.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
