package main

import (
	"path"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// absent are the kinds of plan answers for a program that is not there
// in the sandbox at all (none at that path, one outside every grant or in
// a private folder): exec exits 127 for it, not found, as for a missing
// program, rather than 126.
var absent = map[string]bool{"missing": true, "ungranted": true, "private": true, "hidden": true}

// execAnswer narrows an allowed command line to what the plan lets run:
// a program named by its path must be executable in the sandbox, and a
// redirection must be possible there. Only the commands before any cd are
// looked at (after it, relative paths start elsewhere).
func (a *asker) execAnswer(line string, d policyengine.Decision) answer {
	if d.Action != policyengine.Allow {
		return answer{Decision: d}
	}
	plan, err := a.filePlan()
	if err != nil {
		return refused(err)
	}
	if plan == nil {
		return answer{Decision: d}
	}
	cmds, err := policyengine.SplitCommandLine(line)
	if err != nil {
		return answer{Decision: d}
	}
	deny := func(what string, fa sandbox.FileAnswer, view sandbox.View) answer {
		return answer{Decision: policyengine.Decision{Action: policyengine.Deny, Rule: fa.Rule, NotFound: view == sandbox.ViewHost && absent[fa.Kind],
			Reason: a.withVars(what + ": " + fa.Reason + joinAdvice(fa.Advice))}, View: string(view)}
	}
	functions := map[string]bool{}
	for _, c := range cmds {
		if p := path.Base(c.Program); p == "cd" || p == "pushd" || p == "popd" {
			break
		}
		for _, r := range c.Redirects {
			op := sandbox.OpWrite
			switch r.Op {
			case "<<", "<<<", ">&", "<&":
				continue
			case "<":
				op = sandbox.OpRead
			}
			if fa := plan.FileAccess(sandbox.ResolveHost(r.Target, a.workDir), op, sandbox.ViewSandbox); !fa.Allowed {
				return deny("the redirection "+r.Op+" "+r.Target, fa, sandbox.ViewSandbox)
			}
		}
		if c.Function != "" {
			functions[c.Function] = true
			continue
		}
		// A program is run from what the sandbox starts with: one in
		// its private /tmp is not the host's, and one a name on the PATH
		// finds must be there.
		if fa, ok := a.programAccess(plan, c.Program, functions); ok && !fa.Allowed {
			return deny(c.Program, fa, sandbox.ViewHost)
		}
	}
	return answer{Decision: d}
}

// programAccess is the plan's answer for running word, when there is a
// file to ask about (programPath). A name's answer is kept: check --stdin
// asks about the same few names over and over, and each costs a stat per
// PATH folder and per folder on the way to the file.
func (a *asker) programAccess(plan *sandbox.Plan, word string, functions map[string]bool) (sandbox.FileAnswer, bool) {
	if functions[word] {
		return sandbox.FileAnswer{}, false // the line's own function
	}
	named := !strings.Contains(word, "/")
	if fa, ok := a.named[word]; named && ok {
		return fa, fa.Kind != ""
	}
	var fa sandbox.FileAnswer
	if prog := a.programPath(word, functions); prog != "" {
		fa = plan.FileAccess(sandbox.ResolveHost(prog, a.workDir), sandbox.OpExec, sandbox.ViewHost)
	}
	if named {
		if a.named == nil {
			a.named = map[string]sandbox.FileAnswer{}
		}
		a.named[word] = fa
	}
	return fa, fa.Kind != ""
}

// programPath is the file a command's program word runs, for the plan to
// answer: a path as written, or the file a name finds on the sandbox's
// PATH (as exec's plan and the shell inside find it: /usr/local/bin/x may
// be a link to a folder the sandbox does not have). "" for a word a shell
// expansion decides, a shell builtin or a function the line defines, and
// a name the PATH does not hold (a function defined elsewhere, or a
// missing program, which the shell reports at run time).
func (a *asker) programPath(word string, functions map[string]bool) string {
	switch {
	case word == "" || strings.ContainsAny(word, "$`*?[~"):
		return ""
	case strings.Contains(word, "/"):
		return word
	case functions[word] || policyengine.IsShellBuiltin(word):
		return ""
	}
	return a.lookPath(word)
}
