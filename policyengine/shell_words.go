package policyengine

import (
	"fmt"
	"slices"
	"strings"
)

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
