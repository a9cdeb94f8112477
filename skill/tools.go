package skill

import (
	"fmt"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"corral.dev/corral/policyengine"
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
	prog := path.Base(words[0])
	switch {
	case prefix && (policyengine.RunsNamedProgram(prog) || moreRunners[prog]):
		return nil, fmt.Sprintf("%s runs the command its arguments name: a prefix would pre-approve any command; name the exact command", prog)
	case prefix && interpreters[prog] && (len(words) == 1 || codeOptions[words[1]]):
		return nil, fmt.Sprintf("%s runs the code its arguments give: a prefix would pre-approve any command; name a script or module (Bash(python3 -m pytest:*)) or the exact command", strings.Join(words, " "))
	case prefix && len(words) == 1 && runsByOption[prog] != "":
		return nil, fmt.Sprintf("every %s command includes ones that run any command (%s): name the subcommand, as in Bash(%s status:*)", prog, runsByOption[prog], prog)
	}
	return &Command{Words: words, Prefix: prefix}, ""
}

// interpreters run the code their arguments give (sh -c, python3 -c,
// perl -e) or read from stdin: a prefix pre-approval that leaves room for
// such code (the program alone, or an option that takes code) approves
// every command, whatever an agent policy says of it.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "fish": true, "csh": true, "tcsh": true,
	"python": true, "python2": true, "python3": true, "pypy": true, "pypy3": true, "perl": true, "ruby": true, "irb": true,
	"node": true, "nodejs": true, "deno": true, "bun": true, "php": true, "lua": true, "luajit": true, "tclsh": true,
	"wish": true, "expect": true, "Rscript": true, "julia": true, "awk": true, "gawk": true, "mawk": true, "nawk": true,
}

// codeOptions are interpreters' options that take code or read it from
// stdin.
var codeOptions = map[string]bool{"-c": true, "-e": true, "-E": true, "-r": true, "-p": true, "-n": true, "-s": true, "-i": true,
	"-": true, "--eval": true, "--print": true, "--command": true, "-x": true, "-l": true, "-ic": true, "-lc": true, "-ec": true,
	"-S": true, "-f": true, "--exec": true, "-B": true, "-b": true}

// moreRunners run the command or file their arguments name beside the
// programs policyengine.RunsNamedProgram knows (wrappers, strace...): a
// prefix pre-approval of one approves every command.
var moreRunners = map[string]bool{"eval": true, "source": true, ".": true, "npx": true, "uvx": true, "pipx": true}

// runsByOption are programs that run any command through an option or a
// subcommand: a pre-approval of all of them is a pre-approval of anything.
var runsByOption = map[string]string{
	"git": "git -c alias.x=!CMD x", "make": "make --eval", "tar": "tar --to-command", "npm": "npm exec",
	"pnpm": "pnpm exec", "yarn": "yarn exec", "cargo": "cargo run", "go": "go run", "uv": "uv run",
	"docker": "docker run", "podman": "podman run", "kubectl": "kubectl exec", "ssh": "ssh HOST CMD",
	"sed": "sed 'e CMD'", "rsync": "rsync -e CMD", "zip": "zip -TT CMD", "less": "less with LESSOPEN",
	"vim": "vim -c '!CMD'", "nvim": "nvim -c '!CMD'", "emacs": "emacs --eval", "man": "man -P CMD",
}

// isPlainWordByte reports whether c stands for itself wherever it is in
// a word, in sh and in bash: no quoting, expansion, globbing, operator,
// comment, history or brace character (so not ~ # ! { } either).
func isPlainWordByte(c byte) bool {
	return isAlnum(c) || strings.IndexByte("-_./=:,+@%", c) >= 0
}
