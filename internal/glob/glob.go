// Package glob is corral's one glob core: a pattern is a sequence of
// tokens (literal text, one character, a star, a character class) matched
// against one string with a single backtrack point, so matching is never
// exponential. Each matcher parses its own syntax into these tokens: the
// path globs of skills (policyengine, one token list per path segment),
// the URL rules of agent policies (agentpolicy, one list for the whole
// URL, where a star also crosses "/"), and the macOS Seatbelt renderer
// (seatbelt, which writes policyengine's tokens as regular expressions).
package glob

import (
	"strings"
	"unicode/utf8"
)

// Kind is what a token matches.
type Kind uint8

const (
	Literal Kind = iota // Text, byte for byte
	AnyChar             // "?": one character
	Star                // "*": zero or more characters
	Class               // "[...]": one character in (or, Negated, not in) Ranges
)

// Token is one operator of a pattern.
type Token struct {
	Kind    Kind
	Text    string  // Literal
	Negated bool    // Class
	Ranges  []Range // Class
}

// Range is an inclusive range of characters in a class; a single
// character c is the range c-c.
type Range struct{ Lo, Hi rune }

// ClassMatches reports whether the class t matches r.
func (t *Token) ClassMatches(r rune) bool {
	for _, rr := range t.Ranges {
		if rr.Lo <= r && r <= rr.Hi {
			return !t.Negated
		}
	}
	return t.Negated
}

// Wild reports whether toks match anything but one literal text.
func Wild(toks []Token) bool {
	for _, t := range toks {
		if t.Kind != Literal {
			return true
		}
	}
	return false
}

// Match reports whether toks match all of s. A star takes the shortest
// run first and, when the rest fails, one more: one byte (byRune false,
// as path.Match does, so a literal still matches inside names that are
// not UTF-8) or one character (byRune true). "?" and a class take one
// character (one byte of an invalid sequence). Worst case len(toks) ×
// len(s).
func Match(toks []Token, s string, byRune bool) bool {
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for {
		if ti < len(toks) {
			t := &toks[ti]
			switch t.Kind {
			case Star:
				if ti == len(toks)-1 {
					return true // a trailing "*" takes the rest
				}
				if !byRune && ti == len(toks)-2 && toks[ti+1].Kind == Literal {
					// "*.csv": the star takes all but the literal suffix.
					return strings.HasSuffix(s[ni:], toks[ti+1].Text)
				}
				starTi, starNi = ti, ni
				ti++
				continue
			case Literal:
				if strings.HasPrefix(s[ni:], t.Text) {
					ti, ni = ti+1, ni+len(t.Text)
					continue
				}
			case AnyChar:
				if ni < len(s) {
					_, w := utf8.DecodeRuneInString(s[ni:])
					ti, ni = ti+1, ni+w
					continue
				}
			case Class:
				if ni < len(s) {
					r, w := utf8.DecodeRuneInString(s[ni:])
					if t.ClassMatches(r) {
						ti, ni = ti+1, ni+w
						continue
					}
				}
			}
		} else if ni == len(s) {
			return true
		}
		if starTi < 0 || starNi == len(s) {
			return false
		}
		if byRune {
			_, w := utf8.DecodeRuneInString(s[starNi:])
			starNi += w
		} else {
			starNi++
		}
		ti, ni = starTi+1, starNi
	}
}
