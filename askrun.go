package corral

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/ask"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

// asking is a run's side of the ask channel (Spec.Ask): it fills in who
// asks, answers from the policy's remembered hosts before it asks the
// caller, carries out "remember" with agentpolicy's own code (the same
// as `corral policy remember`), and records every question and answer in
// the report and the audit log.
type asking struct {
	spec  Spec
	names []string // the active skills
	r     *Result
	audit *auditLog
	warn  func(string)
	mu    sync.Mutex // r.Asked: network questions come from many connections
}

// askRecord is an audit-log line of a question and its answer.
type askRecord struct {
	Agent      string `json:"agent,omitempty"`
	Permission string `json:"permission"` // "ask"
	ask.Record
}

func newAsking(spec Spec, names []string, r *Result, audit *auditLog, warn func(string)) *asking {
	if spec.Ask == nil {
		return nil
	}
	return &asking{spec: spec, names: names, r: r, audit: audit, warn: warn}
}

// fill adds who asks to q.
func (a *asking) fill(q *ask.Question) {
	q.Agent, q.Skills, q.Program = a.spec.Agent, a.names, a.spec.Argv[0]
}

// record keeps q and its answer in the report and the audit log.
func (a *asking) record(q ask.Question, ans ask.Answer) {
	q.Reason = printable.Clip(q.Reason, MaxLogged)
	q.Command = printable.Clip(q.Command, MaxLogged)
	q.URL = printable.Clip(q.URL, MaxLogged)
	q.V, q.Type, q.ID = ask.Version, "question", ans.ID
	if t, ok := a.spec.Ask.(interface{ Timeout() time.Duration }); ok && ans.ID != "" {
		q.TimeoutMS = t.Timeout().Milliseconds()
	}
	rec := ask.Record{Time: time.Now(), Question: q, Answer: ans}
	a.mu.Lock()
	if len(a.r.Asked) < maxAsked {
		a.r.Asked = append(a.r.Asked, rec)
	}
	a.mu.Unlock()
	a.audit.write(askRecord{Agent: a.spec.Agent, Permission: "ask", Record: rec})
}

// maxAsked bounds the questions the report keeps (the audit log has all).
const maxAsked = 1000

// network is the egress proxy's Config.Ask.
func (a *asking) network(ctx context.Context, q ask.Question) ask.Answer {
	a.fill(&q)
	if pol := a.spec.Policy; pol != nil {
		if d, ok := pol.HostAnswer(q.Host, q.Port); ok {
			ans := ask.Answer{Reply: ask.Deny, By: "policy", Note: d.Reason}
			if d.Action == policyengine.Allow {
				ans.Reply, ans.Note = ask.AllowRun, "remembered: "+d.Reason
			}
			a.record(q, ans)
			return ans
		}
	}
	a.grantsNote(&q)
	ans := a.spec.Ask.Ask(ctx, q)
	if ans.Reply == ask.Remember {
		ans = a.remember(ans, func(file string) ([]agentpolicy.Rule, error) { return agentpolicy.RememberHost(file, q.Host, q.Port) })
	}
	a.record(q, ans)
	return ans
}

// command asks about a command line the agent policy wants confirmed.
// The answer allows this run of it (allow-once and allow-run alike), or
// remembers it in the policy file first.
func (a *asking) command(ctx context.Context, line string, d policyengine.Decision) ask.Answer {
	q := ask.Question{Kind: ask.Command, Command: line, Reason: d.Reason, Grants: map[ask.Reply]string{
		ask.AllowOnce: "run this command line this once",
		ask.AllowRun:  "run this command line this once (a run is one command)",
		ask.Deny:      "refuse it (exit 126)",
		ask.Remember:  "add rules allowing exactly these commands to the agent policy file (as corral policy remember does), then run it",
	}}
	a.fill(&q)
	a.grantsNote(&q)
	ans := a.spec.Ask.Ask(ctx, q)
	if ans.Reply == ask.Remember {
		ans = a.remember(ans, func(file string) ([]agentpolicy.Rule, error) { return agentpolicy.Remember(file, line) })
	}
	a.record(q, ans)
	return ans
}

// grantsNote says in q where remember would write, or that it cannot.
func (a *asking) grantsNote(q *ask.Question) {
	if a.spec.RememberTo == "" {
		q.Grants[ask.Remember] = "nothing can be written (no --policy file): counts as allow-once"
		return
	}
	q.Grants[ask.Remember] += " (" + a.spec.RememberTo + ")"
}

// remember writes the answer to the policy file with write. A remember
// that cannot be written still allows what was asked, this once, since
// the caller approved it; the note and a warning say why nothing was
// stored.
func (a *asking) remember(ans ask.Answer, write func(file string) ([]agentpolicy.Rule, error)) ask.Answer {
	if a.spec.RememberTo == "" {
		ans.Reply, ans.Note = ask.AllowOnce, "remember: no policy file to write (--policy): allowed once"
		a.warn("the ask channel answered remember, but there is no --policy file to write it to: allowed this once")
		return ans
	}
	added, err := write(a.spec.RememberTo)
	if err != nil {
		ans.Reply, ans.Note = ask.AllowOnce, fmt.Sprintf("remember: %v: allowed once", err)
		a.warn(fmt.Sprintf("the ask channel answered remember, but nothing was written: %v; allowed this once", err))
		return ans
	}
	var rules []string
	for _, r := range added {
		rules = append(rules, "permissions.allow "+r.String())
	}
	if len(rules) == 0 {
		ans.Note = "remember: " + a.spec.RememberTo + " already has the rules"
	} else {
		ans.Note = "remembered in " + a.spec.RememberTo + ": " + strings.Join(rules, ", ")
	}
	return ans
}
