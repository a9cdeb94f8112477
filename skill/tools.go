package skill

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// allowed-tools is the Agent Skills format's experimental list of tools a
// skill pre-approves, in Claude Code's permission-rule syntax: a tool name,
// optionally with an argument in parentheses (Read, WebFetch,
// mcp__github__create_issue, Bash(git add:*), Bash(npm run test)).
//
// corral maps only Bash entries that name a command, and only to what the
// entry says: Bash(PREFIX:*) (or Bash(PREFIX *)) pre-approves one program
// run whose words start with PREFIX's, Bash(COMMAND) one whose words are
// exactly COMMAND's. The words must be plain (no quotes, variables,
// operators or globs), so that what the rule compares is what the shell
// runs: an entry corral cannot read that way is kept and shown as not
// mapped, never widened to its program. Entries whose syntax cannot even
// be split (an unclosed parenthesis) are errors, as other bad input is.

// Tool is one allowed-tools entry as written and what corral makes of it.
type Tool struct {
	Entry string `json:"entry"`         // as written: Bash(git add:*)
	Name  string `json:"tool"`          // the tool: Bash, Read, mcp__github__create_issue
	Arg   string `json:"arg,omitempty"` // between the parentheses
	// Command is the command a Bash entry pre-approves; nil when the entry
	// maps to nothing, and NotMapped says why.
	Command   *Command `json:"command,omitempty"`
	NotMapped string   `json:"not_mapped,omitempty"`
}

// Command is a command a skill pre-approves: one program run (a segment of
// a shell line) whose words are Words, or start with them when Prefix is
// set. The words are plain: what the shell runs is what they say.
type Command struct {
	Words  []string `json:"words"`
	Prefix bool     `json:"prefix"`
}

// Mapping says in words what the entry became.
func (t Tool) Mapping() string {
	switch {
	case t.Command == nil:
		return "not mapped: " + t.NotMapped
	case t.Command.Prefix:
		return fmt.Sprintf("command rule: %q, then any arguments", strings.Join(t.Command.Words, " "))
	}
	return fmt.Sprintf("command rule: exactly %q", strings.Join(t.Command.Words, " "))
}

// tools decodes allowed-tools. The format accepts a space-separated
// string or a list of strings; corral takes both, and splits each string
// (and each item of a list) the same way, at spaces and at commas outside
// parentheses, since Claude Code's documentation writes "Read, Grep, Glob".
func (d *decoder) tools(n *yaml.Node, field string) ([]Tool, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	type text struct {
		node  *yaml.Node
		field string
	}
	var texts []text
	switch n.Kind {
	case yaml.ScalarNode:
		texts = []text{{n, field}}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			texts = append(texts, text{item, fmt.Sprintf("%s[%d]", field, i)})
		}
	default:
		return nil, d.errorf(n, field, "must be a string of tools separated by spaces, or a list of them, not %s", kindName(n))
	}
	out := []Tool{}
	for _, t := range texts {
		s, err := d.str(t.node, t.field)
		if err != nil {
			return nil, err
		}
		entries, err := splitTools(s)
		if err != nil {
			return nil, d.errorf(t.node, t.field, "%v", err)
		}
		for _, e := range entries {
			tool, err := parseTool(e)
			if err != nil {
				return nil, d.errorf(t.node, t.field, "%v", err)
			}
			out = append(out, tool)
		}
	}
	return out, nil
}

func isToolSeparator(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','
}

// splitTools splits s into entries at separators outside parentheses.
func splitTools(s string) ([]string, error) {
	var out []string
	depth, start := 0, -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if depth == 0 && isToolSeparator(c) {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		switch c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return nil, fmt.Errorf("%q has a ')' that closes nothing", s[start:i+1])
			}
			depth--
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("%q has a '(' that is not closed", s[start:])
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out, nil
}

// parseTool reads one entry: NAME or NAME(ARG), the parentheses balanced.
func parseTool(entry string) (Tool, error) {
	name, rest, paren := strings.Cut(entry, "(")
	if !validToolName(name) {
		return Tool{}, fmt.Errorf("%q is not a tool: want a name of letters, digits, '_', '-', '.' and '*' (Read, mcp__server__tool), then an optional (ARGUMENT)", entry)
	}
	t := Tool{Entry: entry, Name: name}
	if paren {
		end := closing(rest)
		if end != len(rest)-1 {
			return Tool{}, fmt.Errorf("%q has text after its closing ')'", entry)
		}
		t.Arg = rest[:end]
	}
	t.Command, t.NotMapped = mapTool(t.Name, t.Arg, paren)
	return t, nil
}

// closing is the index in s of the ')' that closes a '(' just before s,
// or -1.
func closing(s string) int {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func validToolName(s string) bool {
	return s != "" && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '*' })
}

// Reasons an entry is not mapped.
const (
	notShell    = "corral turns only Bash(...) entries into command rules; the permissions block says which files and hosts the sandbox reaches"
	anyCommand  = "it pre-approves every command line; corral maps only entries that name a command"
	wildcard    = "a '*' inside the command: corral maps only a trailing ':*' or ' *'"
	shellSyntax = "quotes, variables, operators, globs or other shell syntax in the command: only plain words map, so that the rule compares what the shell runs"
	assignment  = "it starts with a variable assignment, which can make a program run another"
)

// mapTool turns a Bash entry into the command it pre-approves, or says
// why it maps to nothing.
func mapTool(name, arg string, paren bool) (*Command, string) {
	if name != "Bash" {
		return nil, notShell
	}
	if !paren {
		return nil, anyCommand
	}
	text, prefix := strings.CutSuffix(arg, ":*")
	words := strings.Fields(text)
	if !prefix && len(words) > 0 && words[len(words)-1] == "*" {
		words, prefix = words[:len(words)-1], true
	}
	if len(words) == 0 {
		return nil, anyCommand
	}
	for _, w := range words {
		if strings.Contains(w, "*") {
			return nil, wildcard
		}
		if !allBytes(w, isPlainWordByte) {
			return nil, shellSyntax
		}
	}
	if strings.Contains(words[0], "=") {
		return nil, assignment
	}
	return &Command{Words: words, Prefix: prefix}, ""
}

// isPlainWordByte reports whether c stands for itself wherever it is in
// a word, in sh and in bash: no quoting, expansion, globbing, operator,
// comment, history or brace character (so not ~ # ! { } either).
func isPlainWordByte(c byte) bool {
	return isAlnum(c) || strings.IndexByte("-_./=:,+@%", c) >= 0
}
