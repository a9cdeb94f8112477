package agentpolicy

import (
	"fmt"
	"strings"

	"corral.dev/corral/policyengine"
)

// Remember stores a line only when every program it runs can be written
// as a rule that matches that command and nothing else. splitPlainLine is
// the gate: it reads the small part of the shell language where the words
// the shell runs are the words written, and refuses the rest, saying why.
// It is not what corral checks lines with (policyengine is); remember
// makes the two agree before storing anything.

// plainCommand is one simple command of a plain line.
type plainCommand struct {
	words     []string                // leading assignments, program, arguments: unquoted
	redirects []policyengine.Redirect // only to /dev/null or another descriptor
	piped     bool                    // reads the output of the command before it
}

// plainUnquoted marks the bytes a word may hold outside quotes.
var plainUnquoted = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_./:,+@%-=^" {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true // bytes of UTF-8 text: word characters to the shell
	}
	return t
}()

// shellReserved are the words that open or close compound commands.
var shellReserved = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true, "for": true, "select": true, "case": true,
	"esac": true, "in": true, "function": true, "coproc": true}

// whyNotPlain says what an unquoted byte does that a rule cannot hold.
func whyNotPlain(c byte) string {
	switch c {
	case '$':
		return "$ expands a variable or runs a command when the line runs"
	case '`':
		return "backquotes run a command"
	case '*', '?', '[', ']':
		return fmt.Sprintf("%c is a pattern the shell expands into file names", c)
	case '{', '}':
		return "braces expand into several words or group commands"
	case '~':
		return "~ expands into a home folder"
	case '(', ')':
		return "parentheses open a subshell, a function or an arithmetic expression"
	case '\\':
		return "a backslash escape (write the word in single quotes instead)"
	case '#':
		return "# starts a comment"
	case '!':
		return "! negates a command or expands history"
	}
	return fmt.Sprintf("%q has a meaning to the shell that remember does not store", c)
}

// plainReader reads one line.
type plainReader struct {
	s string
	i int
}

// splitPlainLine splits a line of simple commands joined by ;, &&, ||,
// newlines and pipes (| and |&), whose words are plain characters, single
// quotes and double quotes without expansions, and whose redirections go
// to /dev/null or another descriptor. Anything else is ErrNotExact with
// the reason.
func splitPlainLine(line string) ([]plainCommand, error) {
	r := plainReader{s: line}
	var out []plainCommand
	var cur plainCommand
	pipeNext, dangling := false, "" // dangling: an operator that needs a command after it
	finish := func(op string) error {
		if len(cur.words) == 0 {
			if len(cur.redirects) > 0 || dangling != "" || op != ";" && op != "\n" {
				return notExact("%q has no command before it", op)
			}
			return nil // a blank line, or ";" after a command
		}
		cur.piped = pipeNext
		out = append(out, cur)
		cur, pipeNext, dangling = plainCommand{}, op == "|" || op == "|&", ""
		if op != ";" && op != "\n" {
			dangling = op
		}
		return nil
	}
	for {
		for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t') {
			r.i++
		}
		if r.i >= len(r.s) {
			break
		}
		rest := r.s[r.i:]
		var err error
		switch {
		case strings.HasPrefix(rest, ";;"), strings.HasPrefix(rest, ";&"):
			return nil, notExact("%q ends a case branch", rest[:2])
		case rest[0] == ';' || rest[0] == '\n':
			err = finish(rest[:1])
			r.i++
		case strings.HasPrefix(rest, "&&"), strings.HasPrefix(rest, "||"), strings.HasPrefix(rest, "|&"):
			err = finish(rest[:2])
			r.i += 2
		case rest[0] == '|':
			err = finish("|")
			r.i++
		case rest[0] == '&' && !strings.HasPrefix(rest, "&>"):
			return nil, notExact("& runs a command in the background")
		case redirectAhead(rest):
			err = r.redirect(&cur)
		default:
			err = r.word(&cur)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(cur.words) > 0 || len(cur.redirects) > 0 {
		if err := finish(";"); err != nil {
			return nil, err
		}
	}
	if dangling != "" {
		return nil, notExact("the line ends with %q", dangling)
	}
	if len(out) == 0 {
		return nil, policyengine.ErrEmptyCommand
	}
	return out, nil
}

// redirectAhead reports whether s starts with a redirection: an operator,
// or a descriptor number and one.
func redirectAhead(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i < len(s) && (s[i] == '<' || s[i] == '>') || i == 0 && strings.HasPrefix(s, "&>")
}

// redirect reads a redirection. Only those that read and write no file
// are plain: a rule names a command, not where its output goes or what
// it reads.
func (r *plainReader) redirect(cur *plainCommand) error {
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	var op string
	for _, o := range []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"} {
		if strings.HasPrefix(r.s[r.i:], o) {
			op = o
			break
		}
	}
	r.i += len(op)
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t') {
		r.i++
	}
	if op[0] == '<' {
		return notExact("%s gives the command input that a rule would not hold: it would allow the command with any input", op)
	}
	var w plainCommand
	if err := r.word(&w); err != nil {
		return err
	}
	target := w.words[0]
	dup := op == ">&" && target != "" && (target == "-" || strings.Trim(target, "0123456789") == "")
	if !dup && target != "/dev/null" {
		return notExact("%s %s writes to a file, and a rule names the command, not where its output goes: remember the command without the redirection", op, target)
	}
	cur.redirects = append(cur.redirects, policyengine.Redirect{Op: op, Target: target})
	return nil
}

// word reads one word into cur: quoted parts are taken as they are
// (double quotes without $, ` or \), unquoted ones must be plain
// characters.
func (r *plainReader) word(cur *plainCommand) error {
	var b strings.Builder
	quoted, assign := false, false
	start := r.i
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>':
			return r.addWord(cur, b.String(), quoted, assign, start)
		case c == '\'':
			end := strings.IndexByte(r.s[r.i+1:], '\'')
			if end < 0 {
				return notExact("an unterminated quote")
			}
			b.WriteString(r.s[r.i+1 : r.i+1+end])
			r.i += end + 2
			quoted = true
		case c == '"':
			end := strings.IndexByte(r.s[r.i+1:], '"')
			if end < 0 {
				return notExact("an unterminated quote")
			}
			part := r.s[r.i+1 : r.i+1+end]
			if k := strings.IndexAny(part, "$`\\"); k >= 0 {
				return notExact("%c inside double quotes: %s", part[k], whyNotPlain(part[k]))
			}
			b.WriteString(part)
			r.i += end + 2
			quoted = true
		case c == '~' && tildeLiteral(b.String()):
			b.WriteByte(c)
			r.i++
		case plainUnquoted[c]:
			if c == '=' && !quoted && !assign && b.Len() > 0 && isName(b.String()) {
				assign = true
			}
			b.WriteByte(c)
			r.i++
		default:
			return notExact("%s", whyNotPlain(c))
		}
	}
	return r.addWord(cur, b.String(), quoted, assign, start)
}

// addWord gives a word its place: an assignment before the program, the
// program (never a reserved word), or an argument.
func (r *plainReader) addWord(cur *plainCommand, w string, quoted, assign bool, start int) error {
	if r.i == start {
		return notExact("a word is missing at offset %d", start)
	}
	program := true
	for _, x := range cur.words {
		if !isAssignment(x) {
			program = false
		}
	}
	if program && !quoted && shellReserved[w] {
		return notExact("%q opens or closes a compound command", w)
	}
	if program && !assign && isAssignment(w) {
		// A program named NAME=value, quoted so the shell runs it:
		// corral reads it as a program too, but this gate keeps
		// assignments and programs apart by the text alone.
		return notExact("a program named %q", w)
	}
	cur.words = append(cur.words, w)
	return nil
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// isAssignment reports whether a word reads as NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	return ok && isName(name)
}

// tildeLiteral reports whether a ~ after before is itself, not the start
// of a home folder: it does not start the word or follow = or :, where
// bash expands it (PATH=~/bin, --prefix=~/x, a:~/b).
func tildeLiteral(before string) bool {
	return before != "" && !strings.HasSuffix(before, "=") && !strings.HasSuffix(before, ":")
}
