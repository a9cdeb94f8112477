// Package ask is corral's ask channel: the questions corral puts to its
// caller while a run goes on (may the sandbox reach a host no rule lists?
// may this command line, which the agent policy wants confirmed, run?) and
// the answers it takes back, one JSON line each, over a descriptor the
// caller passed (docs/ask.md is the protocol, version 1).
//
// It does not decide anything: the egress proxy and the preflight ask only
// what they would otherwise refuse for lack of a rule, never what a deny
// rule, a cap or an address category refuses. What it guards against is
// the channel itself becoming a way round the policy or a way to stall
// corral: every question is bounded in time, whatever is not a well-formed
// answer to it is a denial, one writer keeps questions from interleaving,
// and the descriptor is corral's alone (close-on-exec, never passed to the
// sandbox), so the sandboxed command cannot answer its own questions.
package ask

import (
	"context"
	"time"
)

// Version is the protocol version, the "v" of every message.
const Version = 1

// DefaultTimeout bounds the wait for one answer.
const DefaultTimeout = 30 * time.Second

// Kind is what a question is about.
type Kind string

const (
	// Network: the egress proxy met a host no network rule lists.
	Network Kind = "network"
	// Command: the agent policy wants the command line confirmed.
	Command Kind = "command"
)

// Reply is an answer's verdict.
type Reply string

const (
	AllowOnce Reply = "allow-once" // this one connection, or this one run of the command
	AllowRun  Reply = "allow-run"  // this host:port until the run ends (a command: this run)
	Deny      Reply = "deny"
	Remember  Reply = "remember" // written to the policy file, then allowed
)

// Allows reports whether r lets the thing asked about go ahead.
func (r Reply) Allows() bool { return r == AllowOnce || r == AllowRun || r == Remember }

// Question is one question, as sent (one JSON line).
type Question struct {
	V    int    `json:"v"`
	Type string `json:"type"` // "question"
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Host, Port, Method and URL say what the proxy was asked for (URL
	// only for a plain-HTTP request; a CONNECT tunnel shows no path).
	Host   string `json:"host,omitempty"`
	Port   int    `json:"port,omitempty"`
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	// Command is the command line the policy wants confirmed.
	Command string `json:"command,omitempty"`
	// Agent, Skills and Program say who asked, as far as corral knows:
	// the --agent name, the active skills, the program the run started.
	Agent   string   `json:"agent,omitempty"`
	Skills  []string `json:"skills,omitempty"`
	Program string   `json:"program,omitempty"`
	// Reason is why corral would refuse it without an answer.
	Reason string `json:"reason"`
	// Grants says what each answer would grant.
	Grants map[Reply]string `json:"grants"`
	// TimeoutMS is how long corral waits; then it denies.
	TimeoutMS int64 `json:"timeout_ms"`
}

// Answer is how a question was settled.
type Answer struct {
	// ID is the question's id, when it was sent.
	ID    string `json:"id,omitempty"`
	Reply Reply  `json:"answer"`
	// By is who answered: the caller's "by" ("caller" when it gave none),
	// or corral itself when nobody did: "timeout", "eof", "garbage",
	// "closed", "policy" (a remembered rule), "run" (an allow-run given
	// earlier in the run).
	By string `json:"by"`
	// Note says more where corral settled it, or what remember wrote.
	Note string `json:"note,omitempty"`
}

// Asker puts a question and waits, bounded, for its answer. It never
// returns an allowing answer it did not get.
type Asker interface {
	Ask(ctx context.Context, q Question) Answer
}

// Record is a question and its answer, as the audit log and the report
// keep them.
type Record struct {
	Time     time.Time `json:"time"`
	Question Question  `json:"question"`
	Answer   Answer    `json:"answer"`
}
