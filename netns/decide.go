package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
)

// The order of a decision is the order in which things could leave the
// host, each step only once the ones before it allowed the request:
//
//  1. the rules: network.allow and the agent policy (nothing leaves);
//  2. network.budget counts the request, or refuses it (nothing leaves);
//  3. the ask channel, for a host no rule lists (a question leaves, to the
//     caller, who is not the command's to reach);
//  4. the lookup of a name (a DNS query leaves: the name is the command's
//     choice, so it carries data to the name's servers, answered or not);
//  5. the checks of every address (categories, the proxy itself);
//  6. the dial of a checked address.
//
// A request a budget refuses therefore makes no question and no query. One
// refused at step 3, or an IP literal refused at step 5, gives its place
// in the counts back: nothing left for it. One refused after its lookup
// or dial keeps it: the query or the connection attempt left, and a
// command spelling data into names whose lookups fail, or that resolve to
// refused addresses, would otherwise send them without end. For the same
// reason a name's bytes are taken from the byte caps before its lookup
// (takeName), so a budget with only a byte cap bounds such names too.

// connect decides the request, resolves its host, checks every address and
// dials a checked one. On refusal it returns the status and the decision
// whose reason explains it; asked is the ask channel's answer, if it was
// asked.
func (p *Proxy) connect(req *request) (_ net.Conn, _ int, _ policyengine.Decision, asked *ask.Answer) {
	host := canonicalHost(req.host)
	url := ""
	if !req.connect {
		url = "http://" + authority(host, req.port, 80) + req.target
	}
	d, unlisted, ok := p.rules(req, host, url)
	if !ok {
		return nil, 403, d, nil
	}
	adm, err := p.budgets.admit(host, req.port)
	if err != nil {
		return nil, 403, policyengine.Decision{Action: policyengine.Deny, Reason: err.Error(), Rule: "network.budget"}, nil
	}
	if unlisted != nil {
		// Asked before the name is resolved: a lookup of a name no rule
		// lists would carry whatever the command put in it to the
		// name's DNS servers, answer or not. An address category
		// (loopback, metadata, the host's own) still refuses it after
		// an allowing answer.
		if d, asked = p.ask(req, host, *unlisted); d.Action != policyengine.Allow {
			adm.release()
			return nil, 403, d, asked
		}
	}
	if _, isIP := policyengine.ParseIP(host); !isIP {
		if err := adm.takeName(host); err != nil {
			adm.release()
			return nil, 403, policyengine.Decision{Action: policyengine.Deny, Reason: err.Error(), Rule: "network.budget"}, asked
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, looked, status, refusal := p.addresses(ctx, host, req.port)
	if addrs == nil {
		if !looked {
			adm.release()
		}
		return nil, status, refusal, asked
	}
	if m := adm.meterOf(); m != nil {
		m.ev, m.audit = Event{Method: req.method, Host: host, Port: req.port, URL: url, Rule: "network.budget"}, p.cfg.Audit
	}
	c, status, refusal := p.dial(ctx, host, addrs, req.port)
	if c == nil {
		return nil, status, refusal, asked
	}
	return metered(c, adm.meterOf()), 200, d, asked
}

// rules decides the request by the skills' network.allow and the agent
// policy. ok is false for a refusal no answer can lift (d says why);
// unlisted, when set, is a refusal only for want of a rule, which the
// ask channel may lift.
func (p *Proxy) rules(req *request, host, url string) (d policyengine.Decision, unlisted *policyengine.Decision, ok bool) {
	d = p.cfg.Engine.CheckNetwork(req.host, req.port)
	if d.Action != policyengine.Allow {
		if !p.askable(host, d) {
			return d, nil, false
		}
		refused := d
		unlisted = &refused
	}
	if pol := p.cfg.Policy; pol != nil {
		pd := pol.CheckRequest(req.method, url, host, req.port)
		if pd.Action != policyengine.Allow {
			if !p.askable(host, pd) {
				return pd, nil, false
			}
			if unlisted == nil {
				unlisted = &pd
			}
		} else if pd.Rule != "" {
			d.Rule += "; policy " + pd.Rule
			d.Layer = pd.Layer
		}
	}
	return d, unlisted, true
}

// addresses resolves host (an IP literal is its own address) and checks
// every address it has: a resolver that mixes a public address with
// 127.0.0.1 is refused outright, not just the address dialled. looked
// says a lookup was made (a query left the host).
func (p *Proxy) addresses(ctx context.Context, host string, port int) (_ []netip.Addr, looked bool, _ int, _ policyengine.Decision) {
	var addrs []netip.Addr
	if a, ok := policyengine.ParseIP(host); ok {
		addrs = []netip.Addr{a}
	} else {
		looked = true
		var err error
		addrs, err = p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, looked, 502, policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot resolve %s: %v", host, errText(err))}
		}
	}
	for i, a := range addrs {
		a = a.WithZone("").Unmap()
		addrs[i] = a
		if ad := p.cfg.Engine.CheckAddr(host, a, port); ad.Action != policyengine.Allow {
			return nil, looked, 403, ad
		}
		if pol := p.cfg.Policy; pol != nil {
			if ad := pol.CheckAddr(host, a, port); ad.Action != policyengine.Allow {
				return nil, looked, 403, ad
			}
		}
		if p.isSelf(a, port) {
			return nil, looked, 403, policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("%s is the proxy itself; it never relays to itself", netip.AddrPortFrom(a, uint16(port)))}
		}
	}
	return addrs, looked, 0, policyengine.Decision{}
}

// dial connects to the first of the checked addresses that answers.
func (p *Proxy) dial(ctx context.Context, host string, addrs []netip.Addr, port int) (net.Conn, int, policyengine.Decision) {
	var lastErr error
	for _, a := range addrs {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, 200, policyengine.Decision{}
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	status := 502
	if ctx.Err() != nil || isTimeout(lastErr) {
		status = 504
	}
	return nil, status, policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot connect to %s port %d: %s", host, port, errText(lastErr))}
}
