package policyengine

import (
	"fmt"
	"strings"
)

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
