package main

import (
	"path"
	"runtime"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// Files in `check` are answered from the kernel plan exec would build
// (sandbox.CheckPlan), not from the fs globs alone: the plan knows the
// protected paths bound read-only inside write grants, the private /tmp,
// /proc and /dev, the files the sandbox gets its own version of, the
// noexec mounts and the Landlock rules. A file is allowed only where the
// globs allow the real path and the plan lets the command reach it.

// filePlan builds the plan once, on the first file question; nil off
// Linux, where the Seatbelt profile follows the globs. An error means
// exec would refuse to run at all (a grant through a planted symlink).
func (a *asker) filePlan() (*sandbox.Plan, error) {
	if runtime.GOOS != "linux" || a.plan == nil {
		return nil, nil
	}
	return a.plan()
}

// refused is the answer to every file question when exec would refuse to
// build the sandbox: nothing runs, so nothing is reached.
func refused(err error) answer {
	return answer{Decision: policyengine.Decision{Action: policyengine.Deny,
		Reason: "exec would refuse to run with these permissions, so nothing is reached: " + err.Error()}}
}

// fileAnswer narrows the skills' glob decision d on a read or write of
// arg (a host path) to what the kernel plan enforces.
func (a *asker) fileAnswer(kind, arg string, d policyengine.Decision) answer {
	plan, err := a.filePlan()
	if err != nil {
		return refused(err)
	}
	if plan == nil {
		return answer{Decision: d}
	}
	op := sandbox.OpRead
	if kind == "write" {
		op = sandbox.OpWrite
	}
	h := sandbox.ResolveHost(arg, a.workDir)
	out := answer{Decision: d, View: string(sandbox.ViewHost)}
	through := ""
	if len(h.Links) > 0 || h.Real != path.Clean(h.Path) {
		// The kernel follows the links: the file reached is the real one,
		// and the globs are asked about that.
		out.Path = h.Real
		if len(h.Links) > 0 {
			through = h.Path + " resolves through the symlink " + strings.Join(distinct(h.Links), ", ") + " to " + h.Real + ": "
		}
		d = a.realDecision(op, h.Real)
		out.Decision = d
	} else if d.Action != policyengine.Allow {
		// The real path inside a grant's folder that is a symlink.
		d = a.realDecision(op, h.Real)
		out.Decision = d
	}
	fa := plan.FileAccess(h, op, sandbox.ViewHost)
	if fa.Allowed && d.Action != policyengine.Allow {
		if in := a.insideDecision(op, h.Real); in.Action == policyengine.Allow {
			// The baseline's entry for a place of the sandbox's own
			// (/proc/**) where this tier shows the host's file (the
			// landlock tier's /proc/cpuinfo): the command reads it.
			d, out.Decision, out.inside = in, in, true
		}
	}
	switch {
	case !fa.Allowed && (d.Action == policyengine.Allow || !ungranted[fa.Kind]):
		// The plan decides: the globs allow it, or the plan's reason
		// (private, protected, replaced) is the one to act on.
		out.Decision = policyengine.Decision{Action: policyengine.Deny, Rule: d.Rule,
			Reason: through + fa.Reason + joinAdvice(fa.Advice)}
	case !fa.Allowed:
		out.Reason = through + d.Reason + " (in the sandbox: " + fa.Reason + ")"
	case d.Action != policyengine.Allow:
		out.Reason = through + d.Reason + " (the kernel rule is wider than the glob: a sandboxed command could still do it; " + fa.Reason + ")"
	default:
		out.Reason = through + d.Reason + "; the sandbox reaches the host's file (" + fa.Reason + ")"
	}
	out.Reason = a.withVars(out.Reason)
	return out
}

// realDecision is the skills' decision on the host's file at real. A
// grant whose folder is reached through a symlink (a work dir given as a
// link to another folder) is bound, and given its Landlock rule, at the
// real path: real is asked about as such a grant names it too.
func (a *asker) realDecision(op sandbox.FileOp, real string) policyengine.Decision {
	ask := a.engine.CheckRead
	if op == sandbox.OpWrite {
		ask = a.engine.CheckWrite
	}
	d := ask(real)
	if d.Action == policyengine.Allow {
		return d
	}
	for _, l := range a.linked() {
		if rest, ok := strings.CutPrefix(real, l.real); ok && (rest == "" || rest[0] == '/') {
			if via := ask(l.base + rest); via.Action == policyengine.Allow {
				via.Reason = real + " is " + l.base + rest + " (the grant's folder " + l.base + " is a symlink to " + l.real + "): " + via.Reason
				return via
			}
		}
	}
	return d
}

// linkedBase is a grant's base folder and the real path it resolves to.
type linkedBase struct{ base, real string }

// linked are the grants' bases that resolve through a symlink, found
// once.
func (a *asker) linked() []linkedBase {
	a.linkedOnce.Do(func() {
		for _, b := range policyengine.GrantBases(a.engine.Permissions()) {
			if h := sandbox.ResolveHost(b, "/"); h.Err == "" && h.Real != path.Clean(b) {
				a.linkedBases = append(a.linkedBases, linkedBase{path.Clean(b), h.Real})
			}
		}
	})
	return a.linkedBases
}

// insideDecision is the skills' decision on real as the command sees it
// (policyengine.Engine.CheckReadInside).
func (a *asker) insideDecision(op sandbox.FileOp, real string) policyengine.Decision {
	if op == sandbox.OpRead {
		return a.engine.CheckReadInside(real)
	}
	return a.engine.CheckWriteInside(real)
}

// withVars writes the work dir as $WORK_DIR in the quoted paths of
// advice, so it can be pasted into a skill.
func (a *asker) withVars(s string) string {
	if a.workDir == "" || a.workDir == "/" {
		return s
	}
	s = strings.ReplaceAll(s, `"`+a.workDir+`/`, `"$WORK_DIR/`)
	return strings.ReplaceAll(s, `"`+a.workDir+`"`, `"$WORK_DIR"`)
}

// ungranted are the kinds of plan answers that a grant would change: where
// the globs deny too, their reason (which names the grant to add) leads.
var ungranted = map[string]bool{"ungranted": true, "landlock": true, "private": true, "hidden": true}

// distinct returns list without repeats (a symlink loop names its links
// many times), in order.
func distinct(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func joinAdvice(advice string) string {
	if advice == "" {
		return ""
	}
	return "; " + advice
}
