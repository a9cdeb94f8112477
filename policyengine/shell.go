package policyengine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Redirect is one redirection of a command: Op is one of ">", ">>", "<",
// ">|", "&>", "&>>", "<>", ">&", "<&", "<<" (here-document, Target is the
// delimiter) or "<<<" (here-string), with any fd number stripped; Target is
// the unquoted word after it.
type Redirect struct {
	Op     string `json:"op"`
	Target string `json:"target"`
}

// Command is one simple command of a command line.
type Command struct {
	// Program is the first word after leading VAR=value assignments,
	// unquoted; "" if the segment is only assignments and redirections.
	Program string `json:"program"`
	// Args are the remaining words, unquoted. Expansions ($x, $(...),
	// `...`, ${...}) are kept as written since their value is unknown.
	Args      []string   `json:"args,omitempty"`
	Redirects []Redirect `json:"redirects,omitempty"`
	// Assigns are the leading NAME=value words, unquoted: they set the
	// program's environment (GIT_PAGER=..., LD_PRELOAD=...), or the
	// shell's variables when there is no program.
	Assigns []string `json:"assigns,omitempty"`
	// Expanding are the indices in Args of the words that start with an
	// expansion ($x, "$(...)", `...`), an unquoted glob or a brace, or
	// hold an unquoted expansion, which the shell splits into words: the
	// shell decides how they start, so they may be options ("sort *"
	// with a file named --compress-program=sh, "sort a$X").
	Expanding []int `json:"expanding,omitempty"`
	// Function is set, alone, on an entry that stands for a function
	// definition "NAME() BODY": the body's commands follow it as if they
	// ran, and later commands named NAME may call it.
	Function string `json:"function,omitempty"`
	// Conditional marks a definition that may not define NAME in the
	// line's shell: it is inside a compound command, a subshell or a
	// substitution, follows && or ||, or is a part of a pipeline or
	// runs in the background. A later NAME may then be the program.
	Conditional bool `json:"conditional,omitempty"`
}

// ErrEmptyCommand is returned for a command line that runs nothing.
var ErrEmptyCommand = errors.New("empty command line")

// maxShellNesting bounds nested substitutions, subshells and quotes so that
// hostile input cannot exhaust the stack.
const maxShellNesting = 64

// SplitCommandLine normalises and splits a shell command line into every
// simple command it would run, including those nested inside $(...),
// `...`, <(...), >(...), (subshells), { groups; }, compound commands and
// unquoted here-documents. A command comes before the commands nested in
// its words. Syntax it cannot follow (unterminated quotes, unbalanced $(,
// ( or backquotes, a quoted empty program name) is an error rather than a
// guess; a line that runs nothing is ErrEmptyCommand.
//
// Words are split as bash reads them, not expanded: a Program holding $,
// `, a glob or a brace is decided at run time. Text that bash evaluates
// again later (eval and trap arguments, sh -c scripts, variables used in
// arithmetic such as x='a[$(cmd)]'; $((x)), ${x@P}) is reported only as
// the arguments or words it is here; judging it is the caller's part.
func SplitCommandLine(line string) ([]Command, error) {
	if strings.TrimSpace(line) == "" {
		return nil, ErrEmptyCommand
	}
	line, err := joinContinuations(line)
	if err != nil {
		return nil, fmt.Errorf("split command line: %w", err)
	}
	if cmds, ok := splitPlain(line); ok {
		return cmds, nil
	}
	// Most lines have a few commands and short words: sized so that
	// neither grows.
	var wordBuf [256]byte
	s := shellSplitter{src: line, out: make([]Command, 0, 4), buf: wordBuf[:0], lastFunc: -1}
	if err := s.parseList(0, 0); err != nil {
		return nil, fmt.Errorf("split command line: %w", err)
	}
	if len(s.out) == 0 {
		return nil, ErrEmptyCommand
	}
	return s.out, nil
}

// shellSyntaxError locates what could not be parsed. Offsets inside
// backquotes and here-documents are relative to them; the wrapping error
// says where they start.
type shellSyntaxError struct {
	offset int
	msg    string
}

func (e *shellSyntaxError) Error() string {
	return fmt.Sprintf("shell syntax error at offset %d: %s", e.offset, e.msg)
}

// shellSplitter is a recursive-descent reader of one source text: the
// command line itself, or the decoded body of a backquote or here-document.
type shellSplitter struct {
	src   string
	pos   int
	depth int
	out   []Command
	// buf holds the unquoted text of the words being read. Words nest (a
	// word holds $(...) which holds words), so it is used as a stack: each
	// reader appends after what is there and truncates back when done.
	buf      []byte
	heredocs []shellHeredoc // bodies to skip at the next newline
	// notArith remembers where "((" turned out not to be arithmetic, and
	// children what backquotes and here-documents read while that was not
	// yet known (tentative > 0), so that nested ambiguous parentheses are
	// read twice at most, not 2^n times.
	notArith  map[int]bool
	children  map[int]shellChildResult
	tentative int
	// compound counts the open compound commands (if, while, until,
	// for, select, case, { }); afterAndOr is set after && and ||; and
	// lastFunc is the entry of the last definition the line's shell
	// makes for sure, until a separator at its level says whether it
	// is part of a pipeline or backgrounded (lastFunc = -1: none).
	compound                 int
	afterAndOr               bool
	lastFunc                 int
	lastFuncDepth, lastFuncC int
	// wordStart is len(buf) where the word being read starts, and
	// expanding is set when an expansion starts it (see shellWord).
	wordStart int
	expanding bool
	// inParam counts the ${...} being read: bash reads $'...' in them
	// even inside double quotes (shopt extquote), dash does not.
	inParam int
}

type shellChildResult struct {
	cmds []Command
	err  error
}

type shellHeredoc struct {
	depth     int // the nesting level of its operator
	delim     string
	quoted    bool // a quoted delimiter means the body is not expanded
	stripTabs bool // <<-
}

// shellWord is one word as read, before it is given a role.
type shellWord struct {
	value  string
	quoted bool // some part was quoted or escaped: never a reserved word
	assign bool // NAME=value
	// expanding: the word starts with an expansion, a glob or a brace,
	// or holds an unquoted expansion (split into words), so the shell
	// decides how it or a word made of it starts (it may be "-o").
	expanding bool
}

func (w shellWord) is(keyword string) bool { return !w.quoted && w.value == keyword }

// shellCaseState tracks where in "case WORD in PATTERN) LIST ;; esac" the
// reader is, so that a pattern's ")" does not close a subshell.
type shellCaseState uint8

const (
	shellCaseSubject shellCaseState = iota
	shellCaseIn
	shellCasePattern
	shellCaseBody
)

// shellWordMode says how the words after a reserved word are taken.
type shellWordMode uint8

const (
	shellModeCommand  shellWordMode = iota
	shellModeHeader                 // for/select NAME in WORDS: not a command
	shellModeForIn                  // "for x" ended the line; "in WORDS" may follow
	shellModeSkipName               // function NAME
)

// shellSimple is the simple command being collected.
type shellSimple struct {
	cmd         Command
	mark        int // len(out) at its start: nested commands go after it
	hasProgram  bool
	assigns     bool
	cond        bool // inside [[ ]], where && < ( are operands
	mode        shellWordMode
	headerWords int
	headerIn    bool // the for header has its "in"
}

func shellSyntaxErrorf(offset int, format string, args ...any) error {
	return &shellSyntaxError{offset: offset, msg: fmt.Sprintf(format, args...)}
}

func (s *shellSplitter) enter(offset int) error {
	s.depth++
	if s.depth > maxShellNesting {
		return shellSyntaxErrorf(offset, "nested more than %d levels deep", maxShellNesting)
	}
	return nil
}

func (s *shellSplitter) leave() { s.depth-- }

// at returns the byte at i, or 0 past the end.
func (s *shellSplitter) at(i int) byte {
	if i < len(s.src) {
		return s.src[i]
	}
	return 0
}

// skip advances by n bytes without running past the end.
func (s *shellSplitter) skip(n int) { s.pos = min(s.pos+n, len(s.src)) }

// parseList reads a list of commands up to closer: ')' ends $(...), <(...)
// and subshells opened at offset open, 0 ends the text.
func (s *shellSplitter) parseList(closer byte, open int) error {
	if err := s.enter(open); err != nil {
		return err
	}
	defer s.leave()
	var cases []shellCaseState
	sc := shellSimple{mark: len(s.out)}
	for {
		s.skipBlanks()
		if s.pos >= len(s.src) {
			if closer != 0 {
				return shellSyntaxErrorf(open, "unterminated %q", s.src[open:min(open+2, len(s.src))])
			}
			s.finish(&sc)
			return nil
		}
		if n := len(cases); n > 0 && cases[n-1] == shellCasePattern {
			if err := s.casePattern(&cases); err != nil {
				return err
			}
			continue
		}
		c := s.src[s.pos]
		if sc.cond && strings.IndexByte("&|<>()", c) >= 0 {
			end := s.pos + 1
			for end < len(s.src) && strings.IndexByte("&|<>()", s.src[end]) >= 0 {
				end++
			}
			sc.cmd.Args = append(sc.cmd.Args, s.src[s.pos:end])
			s.pos = end
			continue
		}
		var err error
		switch c {
		case '#':
			s.skipComment()
		case '\n':
			s.finish(&sc)
			s.listBreak(";")
			err = s.newline()
		case ';', '|':
			s.separator(&sc, cases)
		case '&':
			if s.at(s.pos+1) == '>' {
				err = s.wordOrRedirect(&sc, &cases)
			} else {
				s.separator(&sc, cases)
			}
		case ')':
			if closer != ')' {
				return shellSyntaxErrorf(s.pos, "unexpected \")\"")
			}
			s.finish(&sc)
			s.pos++
			return nil
		case '(':
			err = s.openParen(&sc)
		default:
			err = s.wordOrRedirect(&sc, &cases)
		}
		if err != nil {
			return err
		}
	}
}

// skipBlanks skips spaces and tabs. Line continuations are removed
// before (joinContinuations): one still here is refused by readWord.
func (s *shellSplitter) skipBlanks() {
	for s.pos < len(s.src) && (s.src[s.pos] == ' ' || s.src[s.pos] == '\t') {
		s.pos++
	}
}

func (s *shellSplitter) skipComment() {
	if i := strings.IndexByte(s.src[s.pos:], '\n'); i >= 0 {
		s.pos += i
	} else {
		s.pos = len(s.src)
	}
}

// separator ends the current command at a control operator. ";;", ";&"
// and ";;&" also end a case branch.
func (s *shellSplitter) separator(sc *shellSimple, cases []shellCaseState) {
	rest := s.src[s.pos:]
	n, endsBranch := 1, false
	switch {
	case strings.HasPrefix(rest, ";;&"):
		n, endsBranch = 3, true
	case strings.HasPrefix(rest, ";;"), strings.HasPrefix(rest, ";&"):
		n, endsBranch = 2, true
	case strings.HasPrefix(rest, "||"), strings.HasPrefix(rest, "|&"), strings.HasPrefix(rest, "&&"):
		n = 2
	}
	s.finish(sc)
	s.listBreak(rest[:n])
	s.pos += n
	if k := len(cases); endsBranch && k > 0 && cases[k-1] == shellCaseBody {
		cases[k-1] = shellCasePattern
	}
}

// finish records the current command if it runs a program or redirects,
// before the commands found nested in its words, and starts the next.
func (s *shellSplitter) finish(sc *shellSimple) {
	if sc.hasProgram || len(sc.cmd.Redirects) > 0 || len(sc.cmd.Assigns) > 0 {
		s.out = append(s.out, Command{})
		copy(s.out[sc.mark+1:], s.out[sc.mark:])
		s.out[sc.mark] = sc.cmd
	}
	next := shellSimple{mark: len(s.out)}
	if sc.mode == shellModeHeader && sc.headerWords == 1 {
		next.mode = shellModeForIn
	}
	*sc = next
}

// newline consumes a newline and the bodies of the here-documents
// started on the line it ends.
func (s *shellSplitter) newline() error {
	// A here-document's body starts after the line that holds its
	// operator ends at the operator's own level. A newline inside a
	// substitution on that line, or the end of a line after a
	// substitution that holds the operator, is read differently by bash
	// and dash (dash runs the lines of "$(cat <<E)" as commands).
	for _, doc := range s.heredocs {
		if doc.depth != s.depth {
			return shellUnsuref(s.pos, "a here-document %q whose line has a newline inside a substitution, "+
				"or whose operator is inside one that ends before the line does: where its body starts cannot be told for sure", doc.delim)
		}
	}
	s.pos++
	for _, doc := range s.heredocs {
		start := s.pos
		body := s.heredocBody(doc)
		if !doc.quoted {
			// An unquoted body is expanded, so $(...) in it runs.
			if err := s.child(2*start, body, true); err != nil {
				return fmt.Errorf("in here-document at offset %d: %w", start, err)
			}
		}
	}
	s.heredocs = s.heredocs[:0]
	return nil
}

// heredocBody consumes lines up to and including the delimiter line, or
// to the end if there is none.
func (s *shellSplitter) heredocBody(doc shellHeredoc) string {
	start := s.pos
	for s.pos < len(s.src) {
		lineEnd := len(s.src)
		if i := strings.IndexByte(s.src[s.pos:], '\n'); i >= 0 {
			lineEnd = s.pos + i
		}
		line, bodyEnd := s.src[s.pos:lineEnd], s.pos
		s.pos = min(lineEnd+1, len(s.src))
		if doc.stripTabs {
			line = strings.TrimLeft(line, "\t")
		}
		if line == doc.delim {
			return s.src[start:bodyEnd]
		}
	}
	return s.src[start:]
}

// casePattern reads one token of a case pattern list: words and "|" are
// patterns, ")" starts the branch body, "esac" ends the case.
func (s *shellSplitter) casePattern(cases *[]shellCaseState) error {
	n := len(*cases)
	switch s.src[s.pos] {
	case '\n':
		return s.newline()
	case '#':
		s.skipComment()
	case ')':
		(*cases)[n-1] = shellCaseBody
		s.pos++
	case '(', '|', ';', '&', '<', '>':
		s.pos++
	default:
		start := s.pos
		w, err := s.readWord()
		if err != nil {
			return err
		}
		if s.pos == start {
			s.pos++
		} else if w.is("esac") {
			*cases = (*cases)[:n-1]
			s.compound = max(s.compound-1, 0)
		}
	}
	return nil
}

// openParen handles "(" where a word could start: a subshell, an
// arithmetic command "((...))", or the "()" of a function definition.
func (s *shellSplitter) openParen(sc *shellSimple) error {
	start := s.pos
	if sc.hasProgram {
		end := start + 1
		for end < len(s.src) && (s.src[end] == ' ' || s.src[end] == '\t') {
			end++
		}
		if len(sc.cmd.Args) > 0 || s.at(end) != ')' {
			return shellSyntaxErrorf(start, "unexpected \"(\" after %q", sc.cmd.Program)
		}
		// NAME() BODY defines a function: NAME runs nothing now, and the
		// body is reported as if it ran, since it may be called.
		s.defineFunction(sc, sc.cmd.Program)
		sc.cmd.Program, sc.hasProgram = "", false
		s.pos = end + 1
		return nil
	}
	// Redirections after the parentheses apply to all inside, so they
	// are reported after those commands, as for { group; } > out.
	defer func() { sc.mark = len(s.out) }()
	if s.at(start+1) == '(' && !s.notArith[start] {
		if ok, err := s.tryArith(start, start+2); err != nil || ok {
			if err == nil {
				err = shellUnsuref(start, "%s", whyDoubleParen)
			}
			return err
		}
	}
	s.pos = start + 1
	return s.parseList(')', start)
}

// tryArith reads "((" ... "))" (or "$((" ... "))") from bodyStart as
// arithmetic. If the parentheses do not close with "))", bash reads the
// text as nested subshells instead: then everything found is undone,
// start is remembered and the caller parses it again as commands.
func (s *shellSplitter) tryArith(start, bodyStart int) (bool, error) {
	outLen, docLen := len(s.out), len(s.heredocs)
	s.pos = bodyStart
	s.tentative++
	ok, err := s.scanArith(start)
	s.tentative--
	if err != nil {
		return false, err
	}
	// bash expands "$((" as arithmetic only if its parentheses balance
	// when counted plainly, even inside $(...); otherwise it runs it as
	// commands (parse.y parse_comsub, subst.c chk_arithsub).
	if ok && (s.src[start] != '$' || shellArithBalanced(s.src[bodyStart:s.pos-2])) {
		return true, nil
	}
	if s.notArith == nil {
		s.notArith = make(map[int]bool)
	}
	s.notArith[start] = true
	clear(s.out[outLen:])
	s.out, s.heredocs, s.pos = s.out[:outLen], s.heredocs[:docLen], start
	return false, nil
}

// shellArithBalanced reports whether the parentheses in text balance,
// skipping only quoted strings and escaped characters, as bash checks
// the text of "$((...))".
func shellArithBalanced(text string) bool {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return false
			}
		case '\\':
			i++
		case '\'':
			if end := strings.IndexByte(text[i+1:], '\''); end >= 0 {
				i += end + 1
			} else {
				i = len(text)
			}
		case '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		}
	}
	return depth == 0
}

// wordOrRedirect reads a redirection or a word and gives the word its
// role in the current command.
func (s *shellSplitter) wordOrRedirect(sc *shellSimple, cases *[]shellCaseState) error {
	if op, end := s.redirectAt(); op != "" {
		return s.redirect(sc, op, end)
	}
	start := s.pos
	w, err := s.readWord()
	if err != nil {
		return err
	}
	if s.pos == start {
		return shellSyntaxErrorf(start, "unexpected %q", s.src[start])
	}
	return s.addWord(sc, w, cases)
}

// shellRedirectOps are the redirection operators, longest first.
var shellRedirectOps = [...]string{"<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"}

// redirectAt returns the redirection operator at pos, after an optional
// fd number or {varname}, and where it ends; "" if there is none. "<("
// and ">(" are process substitutions, which are words.
func (s *shellSplitter) redirectAt() (string, int) {
	i := s.pos
	for i < len(s.src) && s.src[i] >= '0' && s.src[i] <= '9' {
		i++
	}
	if i == s.pos && s.at(i) == '{' {
		if end := strings.IndexByte(s.src[i:], '}'); end > 1 && isShellName(s.src[i+1:i+end]) {
			i += end + 1
		}
	}
	rest := s.src[i:]
	if i == s.pos && strings.HasPrefix(rest, "&>") {
		if strings.HasPrefix(rest, "&>>") {
			return "&>>", i + 3
		}
		return "&>", i + 2
	}
	for _, op := range shellRedirectOps {
		if strings.HasPrefix(rest, op) {
			if len(op) == 1 && s.at(i+1) == '(' {
				return "", 0
			}
			return op, i + len(op)
		}
	}
	return "", 0
}

// redirect reads the target of the operator op that ends at end.
func (s *shellSplitter) redirect(sc *shellSimple, op string, end int) error {
	start := s.pos
	s.pos = end
	s.skipBlanks()
	wordStart := s.pos
	w, err := s.readWord()
	if err != nil {
		return err
	}
	if s.pos == wordStart {
		return shellSyntaxErrorf(start, "redirection %q has no target", op)
	}
	if op == "<<" || op == "<<-" {
		s.heredocs = append(s.heredocs, shellHeredoc{depth: s.depth, delim: w.value, quoted: w.quoted, stripTabs: op == "<<-"})
		op = "<<"
	}
	sc.cmd.Redirects = append(sc.cmd.Redirects, Redirect{Op: op, Target: w.value})
	return nil
}

// addWord gives a word its role: case or for header, argument, leading
// assignment, reserved word, or the program.
func (s *shellSplitter) addWord(sc *shellSimple, w shellWord, cases *[]shellCaseState) error {
	if n := len(*cases); n > 0 {
		switch (*cases)[n-1] {
		case shellCaseSubject:
			(*cases)[n-1] = shellCaseIn
			return nil
		case shellCaseIn:
			if w.is("in") {
				(*cases)[n-1] = shellCasePattern
			}
			return nil
		}
	}
	switch sc.mode {
	case shellModeHeader:
		// "for NAME do" has no "in" and no separator before its body.
		if w.is("do") && !sc.headerIn {
			sc.mode = shellModeCommand
			return nil
		}
		if sc.headerWords == 0 {
			if why := evalVarWhy(w.value); why != "" {
				return shellUnsuref(s.pos, "%s", why)
			}
		}
		sc.headerIn = sc.headerIn || sc.headerWords == 1 && w.is("in")
		sc.headerWords++
		return nil
	case shellModeSkipName:
		sc.mode = shellModeCommand
		s.defineFunction(sc, w.value)
		return nil
	case shellModeForIn:
		sc.mode = shellModeCommand
		if w.is("in") {
			sc.mode = shellModeHeader
			return nil
		}
	}
	switch {
	case sc.hasProgram:
		if w.expanding {
			sc.cmd.Expanding = append(sc.cmd.Expanding, len(sc.cmd.Args))
		}
		sc.cmd.Args = append(sc.cmd.Args, w.value)
		if sc.cond && w.is("]]") {
			sc.cond = false
		}
	case w.assign:
		if !plainSubscript(w.value[:shellAssignEnd(w.value)]) {
			return shellUnsuref(s.pos, "%s", whySubscript)
		}
		if why := evalVarWhy(w.value[:shellAssignEnd(w.value)]); why != "" {
			return shellUnsuref(s.pos, "%s", why)
		}
		sc.assigns = true
		sc.cmd.Assigns = append(sc.cmd.Assigns, w.value)
	case !sc.assigns && !w.quoted && s.reservedWord(sc, w.value, cases):
	case w.value == "":
		// bash fails on an empty command name and runs nothing after it;
		// refuse rather than report a command without a program.
		return shellSyntaxErrorf(s.pos, "empty command name")
	default:
		if w.is("[[") {
			return shellUnsuref(s.pos, "%s", whyCond)
		}
		sc.cmd.Program, sc.hasProgram = w.value, true
	}
	return nil
}

// defineFunction records the definition of function name, before the
// commands of its body.
func (s *shellSplitter) defineFunction(sc *shellSimple, name string) {
	cond := s.depth != 1 || s.compound > 0 || s.afterAndOr
	s.out = append(s.out, Command{Function: name, Conditional: cond})
	sc.mark = len(s.out)
	if !cond {
		s.lastFunc, s.lastFuncDepth, s.lastFuncC = len(s.out)-1, s.depth, s.compound
	}
}

// listBreak notes the control operator op that ends a command: after
// && and || a definition may not run; a definition that | or & follows
// is made in a subshell.
func (s *shellSplitter) listBreak(op string) {
	if s.lastFunc >= 0 && s.depth == s.lastFuncDepth && s.compound == s.lastFuncC {
		if (op == "|" || op == "|&" || op == "&") && s.lastFunc < len(s.out) && s.out[s.lastFunc].Function != "" {
			s.out[s.lastFunc].Conditional = true
		}
		s.lastFunc = -1
	}
	s.afterAndOr = op == "&&" || op == "||"
}

// reservedWord handles a reserved word in command position and reports
// whether word was one. Reserved words run nothing themselves; what they
// introduce is read as ordinary commands. "time" is not one here: bash
// reads it as a keyword, but POSIX sh (dash, which sh -c runs on Debian)
// runs the time program, so it is reported as a program.
func (s *shellSplitter) reservedWord(sc *shellSimple, word string, cases *[]shellCaseState) bool {
	switch word {
	case "then", "else", "elif", "do", "!", "in", "coproc":
	case "if", "while", "until", "{":
		s.compound++
	case "fi", "done", "}":
		s.compound = max(s.compound-1, 0)
	case "for", "select":
		s.compound++
		sc.mode = shellModeHeader
	case "function":
		sc.mode = shellModeSkipName
	case "case":
		s.compound++
		*cases = append(*cases, shellCaseSubject)
	case "esac":
		if n := len(*cases); n > 0 {
			*cases = (*cases)[:n-1]
			s.compound = max(s.compound-1, 0)
		}
	default:
		return false
	}
	return true
}

// readWord reads one word up to an unquoted blank or operator, looking
// into the substitutions it contains. Quotes and escapes are removed;
// expansions are kept as written.
func (s *shellSplitter) readWord() (w shellWord, err error) {
	start, base := s.pos, len(s.buf)
	outerStart, outerExpanding := s.wordStart, s.expanding
	s.wordStart, s.expanding = base, false
	defer func() { s.buf, s.wordStart, s.expanding = s.buf[:base], outerStart, outerExpanding }()
	quotedAt := -1 // offset in the value of the first quote or escape
	modified := false
loop:
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if strings.IndexByte("'\"\\", c) >= 0 || c == '$' && (s.at(s.pos+1) == '\'' || s.at(s.pos+1) == '"') {
			if quotedAt < 0 {
				quotedAt = len(s.buf) - base
			}
			modified = true
		}
		nested, keepRaw := s.pos, true
		switch c {
		case ' ', '\t', '\n', ';', '&', '|', ')':
			break loop
		case '<', '>':
			if s.at(s.pos+1) != '(' {
				break loop
			}
			s.pos += 2
			err = s.parseList(')', nested)
		case '(':
			// NAME=(a b c) assigns an array; any other "(" ends the word.
			if i := shellAssignEnd(s.buf[base:]); i < 0 || i != len(s.buf)-base-1 || (quotedAt >= 0 && quotedAt <= i) {
				break loop
			}
			err = s.arrayLiteral()
		case '\'':
			var text string
			text, err = s.singleQuoted()
			s.buf, keepRaw = append(s.buf, text...), false
		case '"':
			err, keepRaw = s.readDouble(true), false
		case '\\':
			switch {
			case s.pos+1 >= len(s.src):
				s.buf = append(s.buf, '\\')
			case s.src[s.pos+1] == '\n':
				// joinContinuations removed the continuations it could
				// place: this one is where it lost track.
				return w, shellUnsuref(s.pos, "a line continuation (backslash-newline) whose place cannot be told")
			default:
				s.buf = append(s.buf, s.src[s.pos+1])
			}
			s.skip(2)
			keepRaw = false
		case '$':
			switch s.at(s.pos + 1) {
			case '\'':
				return w, shellUnsuref(s.pos, "%s", whyAnsiC)
			case '"':
				return w, shellUnsuref(s.pos, "%s", whyTranslated)
			default:
				// Unquoted, its value is split into words anywhere
				// in the word: a-$X can give "-o" as a word.
				s.expanding = true
				err = s.dollar(false)
			}
		case '`':
			s.expanding = true
			err = s.backquote(false)
		default:
			if strings.IndexByte("*?[{", c) >= 0 {
				s.expansionAt() // a glob or a brace
			}
			s.buf = append(s.buf, c)
			s.pos++
			keepRaw = false
		}
		if err != nil {
			return w, err
		}
		if keepRaw { // substitutions stay in the value as written
			s.buf = append(s.buf, s.src[nested:s.pos]...)
		}
	}
	w.quoted = quotedAt >= 0
	w.expanding = s.expanding
	if modified {
		w.value = string(s.buf[base:])
	} else {
		w.value = s.src[start:s.pos]
	}
	i := shellAssignEnd(w.value)
	w.assign = i >= 0 && (quotedAt < 0 || i < quotedAt)
	return w, nil
}

// shellNameLen returns the length of the NAME at the start of v.
func shellNameLen[T string | []byte](v T) int {
	i := 0
	for i < len(v) && (v[i] == '_' || v[i]|0x20 >= 'a' && v[i]|0x20 <= 'z' || i > 0 && v[i] >= '0' && v[i] <= '9') {
		i++
	}
	return i
}

func isShellName(v string) bool { return v != "" && shellNameLen(v) == len(v) }

// shellAssignEnd returns the index of the "=" of a leading NAME=,
// NAME+= or NAME[index]=, or -1.
func shellAssignEnd[T string | []byte](v T) int {
	i := shellNameLen(v)
	if i == 0 {
		return -1
	}
	if i < len(v) && v[i] == '[' {
		for i < len(v) && v[i] != ']' {
			i++
		}
		i++
	}
	if i < len(v) && v[i] == '+' {
		i++
	}
	if i < len(v) && v[i] == '=' {
		return i
	}
	return -1
}

// arrayLiteral reads the "(a b c)" of an array assignment.
func (s *shellSplitter) arrayLiteral() error {
	open := s.pos
	if err := s.enter(open); err != nil {
		return err
	}
	defer s.leave()
	s.pos++
	for {
		s.skipBlanks()
		if s.pos >= len(s.src) {
			return shellSyntaxErrorf(open, "unterminated array \"(\"")
		}
		switch s.src[s.pos] {
		case ')':
			s.pos++
			return nil
		case '\n':
			if err := s.newline(); err != nil {
				return err
			}
		case '#':
			s.skipComment()
		default:
			start := s.pos
			w, err := s.readWord()
			if err != nil {
				return err
			}
			if s.pos == start {
				return shellSyntaxErrorf(start, "unexpected %q in array", s.src[start])
			}
			if i := strings.Index(w.value, "]="); strings.HasPrefix(w.value, "[") && i > 0 && !plainSubscript("a"+w.value[:i+1]) {
				return shellUnsuref(start, "%s", whySubscript)
			}
		}
	}
}

// singleQuoted reads '...' and returns its text.
func (s *shellSplitter) singleQuoted() (string, error) {
	open := s.pos
	end := strings.IndexByte(s.src[open+1:], '\'')
	if end < 0 {
		return "", shellSyntaxErrorf(open, "unterminated single quote")
	}
	s.pos = open + 2 + end
	return s.src[open+1 : open+1+end], nil
}

// readDouble reads "..." and, if emit, appends its unquoted text to buf.
// $(...), ${...} and backquotes inside still run and are looked into.
func (s *shellSplitter) readDouble(emit bool) error {
	open := s.pos
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		nested := s.pos
		var err error
		switch {
		case c == '"':
			s.pos++
			return nil
		case c == '\\' && s.pos+1 < len(s.src):
			switch next := s.src[s.pos+1]; next {
			case '\n':
				return shellUnsuref(s.pos, "a line continuation (backslash-newline) whose place cannot be told")
			case '"', '\\', '$', '`':
				s.appendIf(emit, next)
			default:
				s.appendIf(emit, '\\', next)
			}
			s.pos += 2
			continue
		case c == '$' && (s.at(s.pos+1) == '(' || s.at(s.pos+1) == '{'):
			s.expansionAt()
			err = s.dollar(true)
		case c == '`':
			s.expansionAt()
			err = s.backquote(true)
		case c == '$' && s.at(s.pos+1) == '[':
			return shellUnsuref(s.pos, "%s", whyOldArith)
		default:
			if c == '$' && emit {
				s.expansionAt() // "$x"
			}
			s.appendIf(emit, c)
			s.pos++
			continue
		}
		if err != nil {
			return err
		}
		if emit {
			s.buf = append(s.buf, s.src[nested:s.pos]...)
		}
	}
	return shellSyntaxErrorf(open, "unterminated double quote")
}

func (s *shellSplitter) appendIf(emit bool, b ...byte) {
	if emit {
		s.buf = append(s.buf, b...)
	}
}

// expansionAt notes an expansion, glob or brace where the word being
// read has nothing yet: the shell decides how the word starts.
func (s *shellSplitter) expansionAt() {
	if len(s.buf) == s.wordStart {
		s.expanding = true
	}
}

// dollar reads a $ expansion, looking into any command it runs. Plain
// parameters ($x, $1, $?) are just the "$".
func (s *shellSplitter) dollar(inDouble bool) error {
	start := s.pos
	switch s.at(start + 1) {
	case '(':
		if s.at(start+2) == '(' && !s.notArith[start] {
			if ok, err := s.tryArith(start, start+3); err != nil || ok {
				if err == nil && !plainArith(s.src[start+3:s.pos-2]) {
					err = shellUnsuref(start, "%s", whyArith)
				}
				return err
			}
		}
		s.pos = start + 2
		return s.parseList(')', start)
	case '{':
		if err := checkParam(s.src, start); err != nil {
			return err
		}
		s.pos = start + 2
		return s.scanParam(start, inDouble)
	case '\'':
		if !inDouble || s.inParam > 0 {
			return shellUnsuref(start, "%s", whyAnsiC)
		}
	case '[':
		return shellUnsuref(start, "%s", whyOldArith)
	case '"':
		if !inDouble || s.inParam > 0 {
			return shellUnsuref(start, "%s", whyTranslated)
		}
	}
	s.pos++
	return nil
}

// scanArith reads arithmetic up to the "))" that closes it and reports
// whether there was one. Arithmetic runs nothing, but $(...) in it does.
func (s *shellSplitter) scanArith(open int) (bool, error) {
	if err := s.enter(open); err != nil {
		return false, err
	}
	defer s.leave()
	depth := 0
	for s.pos < len(s.src) {
		var err error
		switch s.src[s.pos] {
		case '(':
			depth++
			s.pos++
		case ')':
			if depth == 0 {
				if s.at(s.pos+1) != ')' {
					return false, nil
				}
				s.pos += 2
				return true, nil
			}
			depth--
			s.pos++
		default:
			err = s.scanExpansion(false)
		}
		if err != nil {
			return false, err
		}
	}
	return false, shellSyntaxErrorf(open, "unterminated arithmetic %q", s.src[open:min(open+3, len(s.src))])
}

// scanParam reads ${...} after its "${", looking into substitutions in
// its operands (${x:-$(cmd)} runs cmd).
func (s *shellSplitter) scanParam(open int, inDouble bool) error {
	if err := s.enter(open); err != nil {
		return err
	}
	s.inParam++
	defer func() { s.leave(); s.inParam-- }()
	for depth := 1; s.pos < len(s.src); {
		var err error
		switch s.src[s.pos] {
		case '}':
			s.pos++
			if depth--; depth == 0 {
				return nil
			}
		case '{':
			depth++
			s.pos++
		default:
			err = s.scanExpansion(inDouble)
		}
		if err != nil {
			return err
		}
	}
	return shellSyntaxErrorf(open, "unterminated \"${\"")
}

// scanExpansion steps over one byte, escape, quoted string or expansion
// of text that is not split into words (arithmetic, ${...} operands,
// here-document bodies), looking into the commands it runs.
func (s *shellSplitter) scanExpansion(inDouble bool) error {
	switch s.src[s.pos] {
	case '\\':
		s.skip(2)
	case '\'':
		if inDouble {
			s.pos++
			return nil
		}
		_, err := s.singleQuoted()
		return err
	case '"':
		return s.readDouble(false)
	case '`':
		return s.backquote(inDouble)
	case '$':
		return s.dollar(inDouble)
	default:
		s.pos++
	}
	return nil
}

// scanHeredocBody looks into the substitutions of an unquoted
// here-document body, the splitter's text, where quotes are literal.
func (s *shellSplitter) scanHeredocBody() error {
	for s.pos < len(s.src) {
		var err error
		switch s.src[s.pos] {
		case '\\':
			s.skip(2)
		case '$', '`':
			err = s.scanExpansion(true)
		default:
			s.pos++
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// backquote reads `...`: its text, with the backslash escapes that
// backquotes add removed, is a command list of its own.
func (s *shellSplitter) backquote(inDouble bool) error {
	open := s.pos
	end := open + 1
	for ; end < len(s.src) && s.src[end] != '`'; end++ {
		if s.src[end] == '\\' {
			end++
		}
	}
	if end >= len(s.src) {
		return shellSyntaxErrorf(open, "unterminated backquote")
	}
	s.pos = end + 1
	if len(s.heredocs) > 0 && strings.IndexByte(s.src[open:end], '\n') >= 0 {
		return shellUnsuref(open, "a here-document %q whose line has a newline inside backquotes: "+
			"where its body starts cannot be told for sure", s.heredocs[0].delim)
	}
	if err := s.child(2*open+1, unescapeBackquoted(s.src[open+1:end], inDouble), false); err != nil {
		return fmt.Errorf("inside backquotes at offset %d: %w", open, err)
	}
	return nil
}

// child reads text that is a source of its own, a here-document body or
// else a backquoted command list, adding the commands it finds. While
// arithmetic is tentative, the result is kept under key for when the same
// text is read again as commands. Keys are 2*offset for here-document
// bodies and 2*offset+1 for backquotes: one offset can start either,
// depending on how the text before it is read.
func (s *shellSplitter) child(key int, text string, heredoc bool) error {
	if r, ok := s.children[key]; ok {
		s.out = append(s.out, r.cmds...)
		return r.err
	}
	n := len(s.out)
	sub := shellSplitter{src: text, depth: s.depth, out: s.out, buf: s.buf, lastFunc: -1}
	var err error
	if heredoc {
		err = sub.scanHeredocBody()
	} else {
		err = sub.parseList(0, 0)
	}
	s.out, s.buf = sub.out, sub.buf[:len(s.buf)]
	if s.tentative > 0 {
		if s.children == nil {
			s.children = make(map[int]shellChildResult)
		}
		s.children[key] = shellChildResult{cmds: slices.Clone(s.out[n:]), err: err}
	}
	return err
}

// unescapeBackquoted removes the backslashes before \ ` $ (and " inside
// double quotes), which backquotes take for themselves.
func unescapeBackquoted(text string, inDouble bool) string {
	if strings.IndexByte(text, '\\') < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && i+1 < len(text) {
			if n := text[i+1]; n == '\\' || n == '`' || n == '$' || n == '"' && inDouble {
				c = n
				i++
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
