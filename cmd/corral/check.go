package main

import (
	"bufio"
	"bytes"
	"corral.dev/corral"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
)

var checkCommand = command{
	name:  "check",
	usage: "read|write|net|url|exec|env ARG | tool NAME [COMMAND]\ncorral check [flags] --stdin",
	summary: `Answer one permission question with a JSON decision on stdout: allowed
only where both the skills and the agent policy allow.
Exit 0 allow, 1 deny, 2 confirm, 125 bad input (with a deny answer that
has an "error"). With --stdin, read JSON lines
{"kind":"net","arg":"api.a.com:443"} ({"kind":"tool","arg":"bash git
status"} for a tool and its command, "skill_load NAME" for loading a skill)
and answer one decision per line, the same answer check gives; an "id" (a
string or a number) is echoed in it.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		var pf policyFlags
		pf.register(fs)
		stdin := fs.Bool("stdin", false, "answer JSON-line questions from stdin until EOF")
		noConfirm := fs.Bool("no-confirm", false, "nobody can answer: a confirm is a deny")
		auditLog := fs.String("audit-log", "", "append every denial to `file` as JSON lines")
		tier := sandbox.TierAuto
		fs.Func("tier", "answer file questions for `TIER`'s kernel plan: auto (the one exec would use here), namespaces or landlock", func(s string) error {
			t, err := sandbox.ParseTier(s)
			tier = t
			return err
		})
		return func(args []string) error {
			l, err := sf.load()
			if err != nil {
				return failed(err)
			}
			// Addresses of this machine are answered as the proxy
			// answers them: only preset:host or the literal grants one.
			host := netns.SystemHostAddrs()
			a := &asker{engine: l.Engine.WithHostAddrs(host), noConfirm: *noConfirm, agent: pf.agent, workDir: l.Vars.WorkDir, lookPath: sandbox.LookPath}
			if a.policy, err = pf.load(l); err != nil {
				return failed(err)
			}
			if a.policy != nil {
				a.policy = a.policy.WithHostAddrs(host)
			}
			a.plan = sync.OnceValues(func() (*sandbox.Plan, error) { return l.CheckPlan(a.policy, tier) })
			if *auditLog != "" {
				f, err := openOutput("--audit-log", *auditLog, nil, true)
				if err != nil {
					return failed(err)
				}
				defer f.Close()
				a.audit = f
			}
			if *stdin {
				if len(args) > 0 {
					return failed(errors.New("--stdin takes no arguments"))
				}
				return checkStream(a, os.Stdin, os.Stdout)
			}
			if len(args) == 3 && args[0] == "tool" {
				args = []string{"tool", args[1] + " " + args[2]}
			}
			if len(args) == 1 {
				args = append(args, "") // as a --stdin question without "arg"
			}
			if len(args) != 2 {
				return failed(errors.New("want KIND ARG, e.g. check net api.example.com:443, or tool NAME [COMMAND] (kinds: " + strings.Join(checkKinds, ", ") + ")"))
			}
			d, err := a.ask(args[0], args[1])
			if err != nil {
				// The answer --stdin gives the same question, and 125.
				d = badQuestion(err)
				fmt.Printf("%s", appendAnswer(nil, &d))
				return failed(err)
			}
			fmt.Printf("%s", appendAnswer(nil, &d))
			switch d.Action {
			case policyengine.Allow:
				return nil
			case policyengine.Confirm:
				return &exitError{Code: exitConfirm}
			}
			return &exitError{Code: exitDeny}
		}
	},
}

var checkKinds = []string{"read", "write", "net", "url", "exec", "env", "tool"}

// asker answers questions with the skills' engine and, when there is one,
// the agent policy.
type asker struct {
	engine    *policyengine.Engine
	policy    *agentpolicy.Evaluator
	noConfirm bool
	agent     string
	audit     io.Writer
	workDir   string
	// plan is the kernel plan exec would build, made on first use: file
	// questions are answered from it (checkfs.go).
	plan func() (*sandbox.Plan, error)
	// linkedBases are the grants' folders reached through a symlink
	// (linked), found on first use.
	linkedOnce  sync.Once
	linkedBases []linkedBase
	// lookPath finds a program name on the sandbox's PATH
	// (sandbox.LookPath); tests fake it. named keeps the plan's answer
	// for each name (programAccess): the questions of one check are
	// answered one after another.
	lookPath func(name string) string
	named    map[string]sandbox.FileAnswer
}

// ask answers one question: allowed only where the skills and the policy
// both allow. An error means the question itself is malformed.
func (a *asker) ask(kind, arg string) (answer, error) {
	var d policyengine.Decision
	var err error
	var ans answer
	if kind == "tool" {
		name, command, _ := strings.Cut(strings.TrimSpace(arg), " ")
		if name == "" {
			return ans, errors.New("want a tool name, as in tool bash 'git status'")
		}
		if name == agentpolicy.SkillLoad && strings.TrimSpace(command) == "" {
			return ans, errors.New("want the name of the skill to load, as in tool skill_load web-fetch")
		}
		d = policyengine.Decision{Action: policyengine.Allow, Reason: "skills do not restrict tools"}
		if strings.TrimSpace(command) != "" && (name == "bash" || name == "sh" || name == "shell") {
			ans = a.execAnswer(command, a.engine.CheckExec(command))
			d = ans.Decision
		}
		if a.policy != nil {
			d = agentpolicy.Combine(d, a.policy.CheckTool(name, command))
		}
	} else {
		if d, err = ask(a.engine, kind, arg); err != nil {
			return answer{Decision: d}, err
		}
		switch kind {
		case "read", "write":
			ans = a.fileAnswer(kind, arg, d)
			d = ans.Decision
		case "exec":
			ans = a.execAnswer(arg, d)
			d = ans.Decision
		}
		if a.policy != nil {
			d = agentpolicy.Combine(d, a.policyAsk(kind, arg, ans.inside))
		}
	}
	if d.Action == policyengine.Confirm && a.noConfirm {
		d.Action = policyengine.Deny
		d.Reason += " (--no-confirm: nobody can answer)"
	}
	if d.Action == policyengine.Deny && a.audit != nil {
		line, _ := json.Marshal(corral.Denial{Time: time.Now(), Agent: a.agent, Permission: kind, Context: printable.Clip(arg, corral.MaxLogged), Decision: d})
		a.audit.Write(append(line, '\n'))
	}
	ans.Decision = d
	return ans, nil
}

// policyAsk is the agent policy's answer for a kind the skills answered;
// inside asks about a file as the command sees it (answer.inside).
func (a *asker) policyAsk(kind, arg string, inside bool) policyengine.Decision {
	p := a.policy
	switch {
	case kind == "read" && inside:
		return p.CheckReadInside(arg)
	case kind == "write" && inside:
		return p.CheckWriteInside(arg)
	}
	switch kind {
	case "read":
		return p.CheckRead(arg)
	case "write":
		return p.CheckWrite(arg)
	case "net":
		host, port, err := policyengine.SplitHostPort(arg)
		if err != nil {
			return policyengine.Decision{Action: policyengine.Deny, Reason: err.Error()}
		}
		return p.CheckNetwork(host, port)
	case "url":
		return p.CheckURL(arg)
	case "exec":
		return p.CheckExec(arg)
	case "env":
		return p.CheckEnv(arg)
	}
	return policyengine.Decision{Action: policyengine.Deny, Reason: "unknown kind " + kind}
}

// ask answers one question with the skills alone. An error means the
// question itself is malformed.
func ask(e *policyengine.Engine, kind, arg string) (policyengine.Decision, error) {
	switch kind {
	case "read", "write":
		if arg == "" || strings.ContainsRune(arg, 0) {
			return policyengine.Decision{}, errors.New("empty or invalid path")
		}
		if kind == "read" {
			return e.CheckRead(arg), nil
		}
		return e.CheckWrite(arg), nil
	case "net":
		return e.CheckHostPort(arg)
	case "url":
		if _, err := policyengine.ParseURL(arg); err != nil {
			return policyengine.Decision{}, err
		}
		return e.CheckURL(arg), nil
	case "exec":
		if strings.TrimSpace(arg) == "" {
			return policyengine.Decision{}, policyengine.ErrEmptyCommand
		}
		return e.CheckExec(arg), nil
	case "env":
		if arg == "" || strings.ContainsAny(arg, "=\x00") {
			return policyengine.Decision{}, fmt.Errorf("%q is not an environment variable name", arg)
		}
		return e.CheckEnv(arg), nil
	}
	return policyengine.Decision{}, fmt.Errorf("unknown kind %q (kinds: %s)", kind, strings.Join(checkKinds, ", "))
}

// question is one line of check --stdin.
type question struct {
	Kind string     `json:"kind"`
	Arg  string     `json:"arg"`
	ID   questionID `json:"id"`
}

// questionID is a question's optional "id", a string or a number, which
// its answer echoes: a caller with several questions in flight matches
// answers without counting lines. It holds the JSON the answer writes.
type questionID struct{ json string }

func (q *questionID) UnmarshalJSON(b []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		q.json = ""
	case string:
		q.json = string(appendJSONString(nil, v))
	case json.Number:
		q.json = v.String()
	default:
		return errors.New(`"id" must be a string or a number`)
	}
	return nil
}

func (q questionID) MarshalJSON() ([]byte, error) { return []byte(q.json), nil }

// IsZero reports a question without an id (omitzero).
func (q questionID) IsZero() bool { return q.json == "" }

// answer is a decision, or the reason a question could not be answered.
// File answers say whose file they are about (View: "host" for read and
// write, "sandbox" for what a command line does inside it) and, when
// symlinks were followed, the real path answered for.
type answer struct {
	ID questionID `json:"id,omitzero"`
	policyengine.Decision
	View  string `json:"view,omitempty"`
	Path  string `json:"path,omitempty"`
	Error string `json:"error,omitempty"`
	// inside is set where the host's file is reached through the system
	// baseline's entry for a place of the sandbox's own (the landlock
	// tier's /proc/cpuinfo): the agent policy is asked about it as the
	// command sees it too.
	inside bool
}

// badQuestion is the answer to a question that cannot be answered (an
// unknown kind, a malformed argument): a deny saying why. check gives it
// on stdout and exits 125; check --stdin gives it and goes on.
func badQuestion(err error) answer {
	return answer{Decision: policyengine.Decision{Action: policyengine.Deny, Reason: "bad input: " + err.Error()}, Error: err.Error()}
}

// maxQuestion bounds one line of check --stdin.
const maxQuestion = 1 << 20

// checkStream answers questions line by line. Output is buffered and
// flushed whenever no further input is waiting, so a caller that asks one
// question at a time gets its answer at once and a bulk caller gets
// throughput.
func checkStream(e *asker, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	var buf []byte
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			var q question
			var a answer
			if jerr := parseQuestion(line, &q); jerr != nil {
				a = answer{Decision: policyengine.Decision{Action: policyengine.Deny, Reason: "bad input: not a JSON question"}, Error: jerr.Error()}
			} else if d, qerr := e.ask(q.Kind, q.Arg); qerr != nil {
				a = badQuestion(qerr)
			} else {
				a = d
			}
			a.ID = q.ID
			buf = appendAnswer(buf[:0], &a)
			if _, werr := w.Write(buf); werr != nil {
				return failed(werr)
			}
		}
		if r.Buffered() == 0 || err != nil {
			if ferr := w.Flush(); ferr != nil {
				return failed(ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return failed(err)
		}
	}
}

// readLine reads one line without its newline. Blank lines come back
// empty; a line over maxQuestion is an error.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxQuestion {
			return nil, fmt.Errorf("a question is longer than %d bytes", maxQuestion)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSpace(line), err
	}
}
