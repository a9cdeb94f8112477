package policyengine

import "strings"

// Most command lines an agent sends are plain: words of letters, digits
// and punctuation that means nothing to the shell, joined by pipes. For
// those, splitPlain does what SplitCommandLine would in a fraction of the
// time; anything else (quotes, expansions, redirections, lists, compound
// commands, assignments) goes to the full splitter. A fuzz test checks that
// both agree wherever splitPlain answers.

// plainByte marks the bytes a plain line may hold besides spaces and '|'.
var plainByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_./:,+@%-=" {
		t[c] = true
	}
	return t
}()

// plainReserved are the words that would make a pipeline segment a
// compound command or change how it is read.
var plainReserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true,
	"done": true, "while": true, "until": true, "for": true, "select": true,
	"function": true, "case": true, "esac": true, "in": true, "coproc": true,
}

// splitPlain splits a plain pipeline, or reports ok=false when the line is
// not plain.
func splitPlain(line string) (cmds []Command, ok bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c != ' ' && c != '|' && !plainByte[c] {
			return nil, false
		}
	}
	// "||" is a list operator and "|" at either end or twice in a row is
	// a syntax error: leave both to the full splitter.
	if strings.Contains(line, "||") {
		return nil, false
	}
	// One backing array for every word; words are substrings of line.
	words := make([]string, 0, 8)
	cmds = make([]Command, 0, 2)
	start := 0
	for start <= len(line) {
		end := strings.IndexByte(line[start:], '|')
		if end < 0 {
			end = len(line)
		} else {
			end += start
		}
		first := len(words)
		for i := start; i < end; {
			for i < end && line[i] == ' ' {
				i++
			}
			j := i
			for j < end && line[j] != ' ' {
				j++
			}
			if j > i {
				words = append(words, line[i:j])
			}
			i = j
		}
		if len(words) == first {
			return nil, false
		}
		w := words[first:len(words):len(words)]
		if strings.IndexByte(w[0], '=') >= 0 || plainReserved[w[0]] {
			return nil, false // an assignment or a reserved word
		}
		c := Command{Program: w[0]}
		if len(w) > 1 {
			c.Args = w[1:]
		}
		cmds = append(cmds, c)
		start = end + 1
	}
	return cmds, true
}
