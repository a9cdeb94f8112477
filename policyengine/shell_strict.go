package policyengine

import (
	"fmt"
	"strings"
)

// A command line is checked for two shells: `corral exec -- sh -c LINE`
// runs dash, an agent's bash tool runs bash. Where the two read a line
// differently, or corral cannot be sure how either reads it, the splitter
// refuses with a shellUnsureError (ErrUnclear: a policy asks the user,
// the exec check denies) rather than pick one reading.

// shellUnsureError names a construct the splitter will not guess at.
type shellUnsureError struct {
	offset int
	msg    string
}

func (e *shellUnsureError) Error() string {
	return fmt.Sprintf("at offset %d: %s", e.offset, e.msg)
}

func (e *shellUnsureError) Is(target error) bool { return target == ErrUnclear }

func shellUnsuref(offset int, format string, args ...any) error {
	return &shellUnsureError{offset: offset, msg: fmt.Sprintf(format, args...)}
}

// Reasons shared by the checks.
const (
	whyAnsiC = "$'...' is a quote in bash but \"$\" and a single-quoted string in sh (dash), which split the line differently"
	whyArith = "arithmetic with a name or an expansion: bash evaluates a variable's value as an expression " +
		"(x='a[$(cmd)]' runs cmd), sh (dash) does not"
	whyDoubleParen = "((...)) is arithmetic in bash but two nested subshells running commands in sh (dash)"
	whyOldArith    = "$[...] is arithmetic in bash (evaluating names' values as expressions) but literal text in sh (dash)"
	whySubscript   = "an array subscript that is not a number: bash evaluates it as arithmetic, on names' values too " +
		"(x='a[$(cmd)]'; b[x]=1 runs cmd), and sh (dash) has no arrays"
	whyTranslated = "$\"...\" is a translated string in bash, expanded again after a lookup in a message catalog " +
		"the line can choose (TEXTDOMAINDIR), but \"$\" and a double-quoted string in sh (dash)"
	whyCond = "[[ is a keyword in bash but a plain command in sh (dash), where < > ( && || in it are operators"
)

// shellCtx is one level of nesting the continuation pass is in.
type shellCtx struct {
	kind   byte // 'u' unquoted (the line, $(...), <(...)), '"', '{' (${...}), '`'
	parens int  // open "(" in a 'u' level
	dq     bool // a '{' level inside double quotes
}

// joinContinuations removes every backslash-newline the shell removes
// before it reads tokens: outside single quotes and comments, inside
// double quotes too. Done first, it keeps "$\<newline>(", "esa\<newline>c"
// or "<<E\<newline>OF" from reading as something else than the shell
// reads. Where the place of a continuation cannot be told for sure (a
// line with a here-document, inside backquotes or ${...}, or after a case
// pattern's ")" inside a substitution), it refuses.
func joinContinuations(line string) (string, error) {
	if !strings.Contains(line, "\\\n") {
		return line, nil
	}
	j := &joiner{
		line:  line,
		b:     make([]byte, 0, len(line)),
		stack: []shellCtx{{kind: 'u'}},
		// A case pattern's ")" inside $(...) would close it here.
		unsureParens: strings.Contains(line, "case") && (strings.Contains(line, "(") || strings.Contains(line, "`")),
	}
	for i := 0; i < len(line); i++ {
		var err error
		if i, err = j.step(i); err != nil {
			return "", err
		}
	}
	return string(j.b), nil
}

// joiner is joinContinuations' pass over one line: b is the line so
// far without its continuations, stack the nesting it is in, pending the
// here-documents whose bodies start after the current line.
type joiner struct {
	line         string
	b            []byte
	stack        []shellCtx
	pending      []shellHeredoc
	unsureParens bool
}

// peek returns the index of the next byte at or after i that is not part
// of a continuation.
func (j *joiner) peek(i int) int {
	for i < len(j.line) && j.line[i] == '\\' && i+1 < len(j.line) && j.line[i+1] == '\n' {
		i += 2
	}
	return i
}

// at is the byte at i, or 0 past the end.
func (j *joiner) at(i int) byte {
	if i < len(j.line) {
		return j.line[i]
	}
	return 0
}

func (j *joiner) push(c shellCtx) { j.stack = append(j.stack, c) }
func (j *joiner) pop()            { j.stack = j.stack[:len(j.stack)-1] }

// step reads the byte at i (and what belongs to it) and returns the
// index of the last byte it took.
func (j *joiner) step(i int) (int, error) {
	c := j.line[i]
	top := &j.stack[len(j.stack)-1]
	switch {
	case c == '\n' && len(j.pending) > 0 && top.kind == 'u':
		if len(j.stack) > 1 {
			return 0, shellUnsuref(i, "a here-document whose line has a newline inside a substitution, in a line with a line continuation")
		}
		j.b = append(j.b, c)
		end, err := copyHeredocBodies(j.line, i+1, j.pending, &j.b)
		if err != nil {
			return 0, err
		}
		j.pending = j.pending[:0]
		return end - 1, nil
	case c == '\\' && j.at(i+1) == '\n':
		switch {
		case top.kind == '`':
			return 0, shellUnsuref(i, "a line continuation (backslash-newline) inside backquotes")
		case top.kind == '{':
			return 0, shellUnsuref(i, "a line continuation (backslash-newline) inside ${...}")
		case j.unsureParens && len(j.stack) > 1:
			return 0, shellUnsuref(i, "a line continuation (backslash-newline) inside a substitution holding case")
		}
		return i + 1, nil
	case c == '\\': // an escape: the next byte is taken as is
		j.b = append(j.b, c)
		if i+1 < len(j.line) {
			i++
			j.b = append(j.b, j.line[i])
		}
		return i, nil
	case top.kind == '`':
		if c == '`' {
			j.pop()
		}
		j.b = append(j.b, c)
		return i, nil
	}
	return j.syntax(i, c, top)
}

// syntax reads a byte outside backquotes that is not a backslash:
// quotes, substitutions, here-documents, parentheses and comments change
// the nesting; anything else is copied.
func (j *joiner) syntax(i int, c byte, top *shellCtx) (int, error) {
	unquoted := top.kind == 'u' || top.kind == '{' && !top.dq
	switch {
	case c == '\'' && unquoted:
		end := strings.IndexByte(j.line[i+1:], '\'')
		if end < 0 {
			end = len(j.line) - i - 1 // the splitter reports it
		}
		j.b = append(j.b, j.line[i:min(i+2+end, len(j.line))]...)
		return i + end + 1, nil
	case c == '"' && top.kind == '"', c == '}' && top.kind == '{':
		j.pop()
	case c == '"':
		j.push(shellCtx{kind: '"'})
	case c == '`':
		j.push(shellCtx{kind: '`'})
	case c == '<' && top.kind == 'u' && j.at(j.peek(i+1)) == '<':
		return j.heredoc(i)
	case c == '$' || (c == '<' || c == '>') && top.kind == 'u':
		return j.substitution(i, c, top, unquoted)
	case c == '(' && top.kind == 'u':
		top.parens++
	case c == ')' && top.kind == 'u':
		if top.parens > 0 {
			top.parens--
		} else if len(j.stack) > 1 {
			j.pop()
		}
	case c == '#' && top.kind == 'u' && (len(j.b) == 0 || strings.IndexByte(" \t\n;&|()<>", j.b[len(j.b)-1]) >= 0):
		end := strings.IndexByte(j.line[i:], '\n')
		if end < 0 {
			end = len(j.line) - i
		}
		j.b = append(j.b, j.line[i:i+end]...)
		return i + end - 1, nil
	}
	j.b = append(j.b, c)
	return i, nil
}

// heredoc reads "<<" at i (continuations between its characters
// dropped): a here-string, or a here-document operator whose body is
// copied after the line.
func (j *joiner) heredoc(i int) (int, error) {
	k := j.peek(i + 1)
	if l := j.peek(k + 1); j.at(l) == '<' { // a here-string
		j.b = append(j.b, "<<<"...)
		return l, nil
	}
	if len(j.stack) > 1 {
		return 0, shellUnsuref(i, "a here-document inside a substitution, in a line with a line continuation")
	}
	doc, end, err := heredocOperator(j.line, k+1)
	if err != nil {
		return 0, err
	}
	j.b = append(j.b, '<', '<')
	j.b = append(j.b, j.line[k+1:end]...)
	j.pending = append(j.pending, doc)
	return end - 1, nil
}

// substitution reads "$", "<" or ">" at i: "$(", "<(", ">(" and "${" open
// a level (continuations before the bracket dropped); $'...' is refused.
func (j *joiner) substitution(i int, c byte, top *shellCtx, unquoted bool) (int, error) {
	k := j.peek(i + 1)
	next := j.at(k)
	switch {
	case next == '(':
		j.push(shellCtx{kind: 'u'})
	case next == '{' && c == '$':
		j.push(shellCtx{kind: '{', dq: top.kind == '"' || top.kind == '{' && top.dq})
	case next == '\'' && c == '$' && unquoted:
		return 0, shellUnsuref(i, "%s", whyAnsiC)
	default:
		j.b = append(j.b, c)
		return i, nil
	}
	j.b = append(j.b, c, next)
	return k, nil
}

// plainArith reports whether arithmetic text holds only numbers and
// operators: no names, expansions or subscripts, whose values bash would
// evaluate as expressions of their own.
func plainArith(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= '0' && c <= '9', strings.IndexByte(" \t\n+-*/%<>=!&|^~?:,()", c) >= 0:
		case c == '_' || c == '#' || c == '@' || c|0x20 >= 'a' && c|0x20 <= 'z':
			// Only inside a number: 0x1f, 16#ff.
			j := i
			for j > 0 && (isAlnum(text[j-1]) || text[j-1] == '_' || text[j-1] == '#' || text[j-1] == '@') {
				j--
			}
			if text[j] < '0' || text[j] > '9' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}

// checkParam refuses the ${...} forms at src[open:] that bash and dash
// read differently or that make bash evaluate a value again: ${x=...} and
// ${x:=...} assign inside a word (a later ${x@P} or $((x)) runs what was
// assigned), ${x@P} and other transformations, ${!x} indirection, array
// subscripts and ${x:offset} (arithmetic on names). ${x}, ${#x}, the
// -, ?, + defaults and the #, % (and bash's /, ^, ,) patterns are read.
func checkParam(src string, open int) error {
	at := func(i int) byte {
		if i < len(src) {
			return src[i]
		}
		return 0
	}
	i := open + 2
	length := false
	switch at(i) {
	case '!':
		if at(i+1) == '}' {
			return nil // ${!}, the last background job
		}
		return shellUnsuref(open, "${!...} indirection is bash's only (and evaluates the named variable's subscript)")
	case '#':
		if at(i+1) == '}' {
			return nil
		}
		if n := shellNameLen(src[i+1:]); n > 0 || at(i+1) >= '0' && at(i+1) <= '9' || strings.IndexByte("@*?-$!", at(i+1)) >= 0 {
			length = true
			i++
		}
	}
	switch n := shellNameLen(src[i:]); {
	case n > 0:
		i += n
	case at(i) >= '0' && at(i) <= '9':
		for at(i) >= '0' && at(i) <= '9' {
			i++
		}
	case strings.IndexByte("@*#?-$!", at(i)) >= 0 && at(i) != 0:
		i++
	default:
		return shellUnsuref(open, "a ${...} that does not start with a parameter name")
	}
	if at(i) == '[' {
		j := i + 1
		for at(j) >= '0' && at(j) <= '9' || (j == i+1 && (at(j) == '@' || at(j) == '*')) {
			j++
		}
		if at(j) != ']' || j == i+1 {
			return shellUnsuref(open, "an array subscript in ${...}: bash evaluates it as arithmetic, on names too, and sh (dash) has no arrays")
		}
		i = j + 1
	}
	c := at(i)
	if length && c != '}' {
		return shellUnsuref(open, "a ${#...} that is not the length of a parameter")
	}
	switch c {
	case '}', '-', '?', '+', '#', '%', '/', '^', ',':
		return nil
	case '=':
		return shellUnsuref(open, "${x=...} assigns inside a word: what it assigns may be evaluated again (${x@P}, $((x))) by bash")
	case ':':
		switch at(i + 1) {
		case '-', '?', '+':
			return nil
		case '=':
			return shellUnsuref(open, "${x:=...} assigns inside a word: what it assigns may be evaluated again (${x@P}, $((x))) by bash")
		}
		return shellUnsuref(open, "${x:offset} is bash's only, and evaluates its offset as arithmetic, on names too")
	case '@':
		return shellUnsuref(open, "${x@...} transformations are bash's only (${x@P} runs the command substitutions in x's value)")
	}
	return shellUnsuref(open, "a ${...} operator %q that corral does not read", string(c))
}

// nameBuiltins are the bash builtins whose arguments are variable names
// (with =value for the declaring ones); optName are those that take a
// name only after an option (printf -v NAME, test -v NAME, wait -p
// NAME). bash evaluates a name's array subscript as arithmetic:
// a[$(cmd)] runs cmd, and so does a name that an expansion gives.
var (
	nameBuiltins = map[string]bool{
		"declare": true, "typeset": true, "local": true, "export": true, "readonly": true,
		"read": true, "unset": true, "getopts": true, "mapfile": true, "readarray": true,
	}
	optName = map[string]string{"printf": "-v", "test": "-v", "[": "-v", "wait": "-p"}
)

// bashEvaluates says why the builtin prog with args may run a command
// in bash although it runs nothing in sh (dash), or "": let and
// declare -i evaluate arithmetic on names' values, and a name with a
// subscript or an expansion in it is evaluated as an expression.
func bashEvaluates(prog string, args []string) string {
	switch prog {
	case "let":
		return "let evaluates arithmetic, in which bash evaluates variables' values as expressions (x='a[$(cmd)]' runs cmd)"
	case "jobs", "compgen", "complete", "hash":
		// jobs -x CMD runs CMD, compgen -C CMD and -F FUNC run code, -W
		// expands its word list (command substitutions too), hash -p
		// FILE NAME makes NAME run FILE.
		opts := map[string]string{"jobs": "x", "compgen": "CFW", "complete": "CFW", "hash": "p"}[prog]
		for _, a := range args {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], opts) || unsureOption(a) {
				return fmt.Sprintf("%s %s runs, or makes later names run, code its words give", prog, a)
			}
		}
		return ""
	}
	opt, named := optName[prog]
	if !named && !nameBuiltins[prog] {
		return ""
	}
	for i, a := range args {
		if named && (i == 0 || args[i-1] != opt) && !strings.HasPrefix(a, opt) {
			continue
		}
		if (prog == "declare" || prog == "typeset" || prog == "local") && (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) &&
			strings.ContainsAny(a, "in") {
			// -i evaluates values as arithmetic; -n makes a name
			// reference, whose target's subscript is evaluated on use.
			return fmt.Sprintf("%s %s: an integer variable (-i) or a name reference (-n) makes bash evaluate later "+
				"assignments or uses as arithmetic, on names' values too (x='a[$(cmd)]' runs cmd)", prog, a)
		}
		name, _, _ := strings.Cut(a, "=")
		if why := evalVarWhy(name); why != "" {
			return prog + " " + why
		}
		if strings.ContainsAny(name, "$`") || !plainSubscript(name) || strings.Contains(name, "[") && strings.ContainsAny(a, "$`") {
			return fmt.Sprintf("%s %q: bash evaluates a name's subscript as arithmetic, "+
				"which can run commands (a[$(cmd)]); sh (dash) does not", prog, a)
		}
	}
	return ""
}

// plainSubscript reports whether name (NAME, NAME+ or NAME[SUB]) has no
// subscript, or a number, @ or * as its subscript.
func plainSubscript(name string) bool {
	name = strings.TrimSuffix(name, "+")
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return true
	}
	sub, ok := strings.CutSuffix(name[i+1:], "]")
	if !ok || sub == "" {
		return false
	}
	if sub == "@" || sub == "*" {
		return true
	}
	for j := 0; j < len(sub); j++ {
		if sub[j] < '0' || sub[j] > '9' {
			return false
		}
	}
	return true
}

// evalVars are the variables whose value a shell later expands or runs as
// code of its own: bash expands PS4 (command substitutions too) before
// every command traced by set -x, the prompts and PROMPT_COMMAND in an
// interactive shell; BASH_ENV and ENV name a script a shell reads first,
// SHELLOPTS and BASHOPTS set options (xtrace) of a bash started later.
var evalVars = map[string]bool{
	"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true,
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	// bash's hash table and aliases: a name's entry says what it runs.
	"BASH_CMDS": true, "BASH_ALIASES": true,
}

// evalVarWhy says why assigning the variable name (NAME, NAME+ or
// NAME[SUB]) is refused, or "".
func evalVarWhy(name string) string {
	name = strings.TrimSuffix(name, "+")
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if !evalVars[name] {
		return ""
	}
	return fmt.Sprintf("assigns %s, whose value a shell expands or runs later (PS4='$(cmd)'; set -x runs cmd in bash)", name)
}

// heredocOperator reads what follows "<<" at line[i:] (an optional "-",
// blanks and the delimiter word) for joinContinuations, and returns the
// here-document and where the word ends. A delimiter it cannot read
// exactly (with an expansion or a continuation in it) is refused.
func heredocOperator(line string, i int) (shellHeredoc, int, error) {
	var doc shellHeredoc
	if i < len(line) && line[i] == '-' {
		doc.stripTabs = true
		i++
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	unsure := func() (shellHeredoc, int, error) {
		return doc, 0, shellUnsuref(i, "a here-document delimiter that is not plain text, in a line with a line continuation")
	}
	var delim []byte
	for i < len(line) && strings.IndexByte(" \t\n;&|()<>", line[i]) < 0 {
		switch c := line[i]; c {
		case '\'', '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 || strings.ContainsAny(line[i+1:i+1+end], "\\$`\n") {
				return unsure()
			}
			delim = append(delim, line[i+1:i+1+end]...)
			doc.quoted = true
			i += end + 2
		case '\\':
			if i+1 >= len(line) || line[i+1] == '\n' {
				return unsure()
			}
			delim = append(delim, line[i+1])
			doc.quoted = true
			i += 2
		case '$', '`':
			return unsure()
		default:
			delim = append(delim, c)
			i++
		}
	}
	if len(delim) == 0 {
		return unsure()
	}
	doc.delim = string(delim)
	return doc, i, nil
}

// copyHeredocBodies copies the bodies of docs, which start at line[i:],
// to b as they are, and returns where they end. A line continuation in
// an unquoted body, which the shell removes before it looks for the
// delimiter, is refused.
func copyHeredocBodies(line string, i int, docs []shellHeredoc, b *[]byte) (int, error) {
	for _, doc := range docs {
		for i < len(line) {
			end := strings.IndexByte(line[i:], '\n')
			next := len(line)
			if end < 0 {
				end = len(line)
			} else {
				end += i
				next = end + 1
			}
			text := line[i:end]
			if !doc.quoted && strings.HasSuffix(text, "\\") && end < len(line) {
				return 0, shellUnsuref(end-1, "a line continuation (backslash-newline) in the body of here-document %q, "+
					"whose delimiter is not quoted", doc.delim)
			}
			*b = append(*b, line[i:next]...)
			i = next
			if doc.stripTabs {
				text = strings.TrimLeft(text, "\t")
			}
			if text == doc.delim {
				break
			}
		}
	}
	return i, nil
}
