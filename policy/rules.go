package policy

import (
	"fmt"
	"slices"
	"strings"

	"corral/policyengine"
)

// SystemTools are tools allowed without a rule: they only read.
var SystemTools = []string{"read", "grep", "glob", "search"}

// SystemCommands are commands allowed without a rule: they only read
// (see readOnly for the flags that would make them write or run others).
var SystemCommands = []string{"pwd", "ls", "rg", "grep", "find", "sort", "cat", "head", "tail", "wc", "stat",
	"file", "uname", "whoami", "date", "git status", "git diff", "git show", "git log", "git rev-parse",
	"git ls-files", "git grep"}

// writingFlags make an otherwise read-only command write files or run
// other programs.
var writingFlags = map[string][]string{
	"find": {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"},
	"sort": {"-o", "--output"},
	"git":  {"--output", "-o", "--ext-diff", "--textconv"},
	"rg":   {"--pre"},
}

// compiledRule is a Rule with its layer.
type compiledRule struct {
	Rule
	layer string
	glob  urlRule // CommandGlob compiled with the same * ? \* syntax
}

func (r compiledRule) text() string {
	var parts []string
	for _, f := range [][2]string{{"tool", r.Tool}, {"command", r.Command}, {"command_glob", r.CommandGlob}, {"skill_name", r.SkillName}} {
		if f[1] != "" {
			parts = append(parts, f[0]+": "+f[1])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// segment is one command of a shell line, normalised.
type segment struct {
	words []string
	text  string
	redir bool // has an output redirection
}

func segments(line string) ([]segment, error) {
	cmds, err := policyengine.SplitCommandLine(line)
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, c := range cmds {
		if c.Program == "" {
			continue
		}
		words := append([]string{c.Program}, c.Args...)
		s := segment{words: words, text: strings.Join(words, " ")}
		for _, r := range c.Redirects {
			if r.Op != "<" && r.Op != "<<" && r.Op != "<<<" && r.Op != "<&" {
				s.redir = true
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, policyengine.ErrEmptyCommand
	}
	return out, nil
}

// matches reports whether the rule matches the segment (or the whole
// line, for command_glob) of a use of tool.
func (r compiledRule) matches(tool string, seg *segment, line string, skills []string) bool {
	if r.Tool != "" && r.Tool != tool {
		return false
	}
	if r.SkillName != "" && !slices.Contains(skills, r.SkillName) {
		return false
	}
	if r.Command != "" {
		if seg == nil {
			return false
		}
		want := strings.Fields(r.Command)
		if len(seg.words) < len(want) || !slices.Equal(seg.words[:len(want)], want) {
			return false
		}
	}
	if r.CommandGlob != "" {
		if seg == nil {
			return false
		}
		if !globMatch(r.glob.glob, r.glob.escape, []rune(seg.text)) && !globMatch(r.glob.glob, r.glob.escape, []rune(line)) {
			return false
		}
	}
	return true
}

// readOnly reports whether the built-in allowlist covers the segment.
func readOnly(seg segment) bool {
	if seg.redir {
		return false
	}
	name := seg.words[0]
	if len(seg.words) > 1 && slices.Contains(SystemCommands, name+" "+seg.words[1]) {
		// "git status" and friends.
	} else if name == "git" || !slices.Contains(SystemCommands, name) {
		return false
	}
	for _, w := range seg.words[1:] {
		for _, f := range writingFlags[name] {
			if w == f || strings.HasPrefix(w, f+"=") {
				return false
			}
		}
	}
	return true
}

// decideCommand applies the rules to a shell line run by tool: a deny rule
// on any segment denies; every segment allowed (by a rule or the built-in
// read-only list) allows; anything else needs confirmation.
func decideCommand(allow, deny []compiledRule, tool, line string, skills []string) policyengine.Decision {
	segs, err := segments(line)
	if err != nil {
		return policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot check the command line: %v", err)}
	}
	norm := strings.Join(strings.Fields(line), " ")
	for i := range segs {
		for _, r := range deny {
			if r.matches(tool, &segs[i], norm, skills) {
				return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
					Reason: fmt.Sprintf("%q is denied by the %s policy's rule %s", segs[i].text, r.layer, r.text())}
			}
		}
	}
	var unsure []string
	var by []string
	for i := range segs {
		ok := false
		for _, r := range allow {
			if r.matches(tool, &segs[i], norm, skills) {
				ok = true
				by = append(by, r.text())
				break
			}
		}
		if !ok && (tool == "" || tool == "bash" || tool == "shell") && readOnly(segs[i]) {
			ok = true
			by = append(by, "the built-in read-only list")
		}
		if !ok {
			unsure = append(unsure, segs[i].text)
		}
	}
	if len(unsure) > 0 {
		suggest, _ := RememberCommands(unsure[0])
		return policyengine.Decision{Action: policyengine.Confirm,
			Reason: fmt.Sprintf("no rule allows %q: ask the user, or add {command: %q} to permissions.allow", strings.Join(unsure, "; "), strings.Join(suggest, " "))}
	}
	return policyengine.Decision{Action: policyengine.Allow, Rule: strings.Join(by, "; "),
		Reason: fmt.Sprintf("every command of %q is allowed (%s)", norm, strings.Join(by, "; "))}
}

// decideTool applies the rules to a tool used without a command line.
func decideTool(allow, deny []compiledRule, tool string, skills []string) policyengine.Decision {
	for _, r := range deny {
		if r.Command == "" && r.CommandGlob == "" && r.matches(tool, nil, "", skills) {
			return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
				Reason: fmt.Sprintf("tool %s is denied by the %s policy's rule %s", tool, r.layer, r.text())}
		}
	}
	for _, r := range allow {
		if r.Command == "" && r.CommandGlob == "" && r.matches(tool, nil, "", skills) {
			return policyengine.Decision{Action: policyengine.Allow, Rule: "permissions.allow " + r.text(), Layer: r.layer,
				Reason: fmt.Sprintf("tool %s is allowed by the %s policy's rule %s", tool, r.layer, r.text())}
		}
	}
	if slices.Contains(SystemTools, tool) {
		return policyengine.Decision{Action: policyengine.Allow, Rule: "built-in read-only tools",
			Reason: fmt.Sprintf("tool %s only reads: it is on the built-in allowlist", tool)}
	}
	return policyengine.Decision{Action: policyengine.Confirm,
		Reason: fmt.Sprintf("no rule allows tool %s: ask the user, or add {tool: %s} to permissions.allow", tool, tool)}
}
