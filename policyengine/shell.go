package policyengine

import (
	"errors"
	"fmt"
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

// wordOrRedirect reads a redirection or a word and gives the word its
// role in the current command.
func (s *shellSplitter) wordOrRedirect(sc *shellSimple, cases *[]shellCaseState) error {
	if op, end := s.redirectAt(); op != "" {
		if s.at(s.pos) == '{' {
			// {NAME}>FILE sets NAME to the descriptor's number.
			name, _, _ := strings.Cut(s.src[s.pos+1:], "}")
			why := evalVarWhy(name)
			if why == "" {
				why = hiddenAssignWhy(name)
			}
			if why != "" {
				return shellUnsuref(s.pos, "a {%s} redirection %s", name, why)
			}
		}
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
	if c := s.at(s.pos); (c == '<' || c == '>') && strings.HasPrefix(s.src[start:], "{") && strings.HasSuffix(w.value, "}") {
		// {NAME}>FILE: bash puts the new descriptor's number in NAME
		// (PATH too, and a subscript is evaluated as arithmetic); dash
		// reads a word.
		return shellUnsuref(start, "a {NAME} redirection, which makes bash set NAME (and evaluate a subscript in it) but is a word in sh (dash)")
	}
	return s.addWord(sc, w, cases)
}

// shellRedirectOps are the redirection operators, longest first.
var shellRedirectOps = [...]string{"<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"}

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
			if why := hiddenAssignWhy(w.value); why != "" {
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
