package agentpolicy

import (
	"slices"
	"strconv"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/skill"
)

// Preapproval is a command an active skill's allowed-tools pre-approves
// (skill.Command, from Bash(git add:*) or Bash(npm run test)). It answers
// only where the policy would ask: a program of a bash-tool command line
// that no allow rule covers needs confirmation, unless a skill
// pre-approves it. It never beats a deny rule of any layer or the caps,
// and Combine puts the skills' own answer (exec lists, fs grants) first,
// so it widens nothing the sandbox enforces. Without a policy nothing
// asks, and pre-approvals change no answer.
type Preapproval struct {
	Skill string // the skill's name
	Entry string // the allowed-tools entry as written
	skill.Command
}

// Preapprovals are the commands the skills' allowed-tools entries map to,
// in the skills' order.
func Preapprovals(list []*skill.Skill) []Preapproval {
	var out []Preapproval
	for _, s := range list {
		for _, t := range s.AllowedTools {
			if t.Command != nil {
				out = append(out, Preapproval{Skill: s.Name, Entry: t.Entry, Command: *t.Command})
			}
		}
	}
	return out
}

func (p Preapproval) layer() string { return "skill " + p.Skill }

func (p Preapproval) text() string { return "allowed-tools " + p.Entry + " of skill " + p.Skill }

// matches reports whether p pre-approves seg, one program a line run by
// tool starts. A skill is trusted less than the policy's author, so its
// pre-approval is narrower than a command rule of the same words: the
// bash tool only; the words as written (./git is not git, and git -C x
// add is not git add); none of the compared words from an expansion; no
// NAME=value before the program, which can make it run another; no
// redirection that writes a file, a write the entry does not name.
func (p Preapproval) matches(tool string, seg *segment) bool {
	if tool != "bash" || seg == nil || seg.assigns || seg.writes || len(seg.words) < len(p.Words) {
		return false
	}
	if !p.Prefix && len(seg.words) != len(p.Words) {
		return false
	}
	for _, i := range seg.expanding {
		if i < len(p.Words) {
			return false
		}
	}
	return slices.Equal(seg.words[:len(p.Words)], p.Words)
}

// writesFile reports whether an output redirection writes a file: one
// that copies or closes a descriptor (2>&1, >&-) or goes to /dev/null
// writes none.
func writesFile(r policyengine.Redirect) bool {
	switch r.Op {
	case "<", "<<", "<<-", "<<<", "<&":
		return false
	case ">&":
		if _, err := strconv.Atoi(r.Target); err == nil || r.Target == "-" {
			return false
		}
	}
	return r.Target != "/dev/null"
}
