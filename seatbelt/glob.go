package seatbelt

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"corral.dev/corral/internal/glob"
	"corral.dev/corral/policyengine"
)

// pathRule is how one glob becomes a Seatbelt path filter: the literal
// path (Literal), the tree under it (Subtree), or an anchored regular
// expression (Regex), with the path or expression in Value.
type pathRule struct {
	Kind  filterKind
	Value string
	// Base is the canonical folder every match lies in (Glob.Base).
	Base string
	// Widened is set when a character class had to be widened to any
	// character (see classRegex); the rule then matches more than the
	// glob.
	Widened bool
}

type filterKind int

const (
	filterLiteral filterKind = iota
	filterSubpath
	filterRegex
)

func (k filterKind) String() string {
	return [...]string{"literal", "subpath", "regex"}[k]
}

// globRule compiles a policyengine glob into the filter Seatbelt needs.
// The leading literal part (the glob's Base) is canonicalised as macOS
// names it (/tmp → /private/tmp); the rest of a pattern is translated
// segment by segment, with the same meaning as policyengine.Glob.Match:
// "*" any run within a segment, "?" one character, "[...]" a class, and
// "**" zero or more whole segments.
func globRule(pattern string) (pathRule, error) {
	g, err := policyengine.CompileGlob(pattern)
	if err != nil {
		return pathRule{}, err
	}
	return globRuleAt(g, g.Base()), nil
}

// globRuleAt is globRule for g with its Base replaced by base: the same
// pattern below another spelling of its folder (its real path).
func globRuleAt(g *policyengine.Glob, base string) pathRule {
	base = Canonical(base)
	switch {
	case g.Literal():
		return pathRule{Kind: filterLiteral, Value: base, Base: base}
	case g.Subtree():
		return pathRule{Kind: filterSubpath, Value: base, Base: base}
	}
	segs := g.Segments() // those after the Base: the first is not literal
	var b strings.Builder
	b.WriteByte('^')
	if base != "/" {
		b.WriteString(regexQuote(base))
	}
	widened := false
	for _, s := range segs {
		if s.DoubleStar {
			// Zero or more segments: nothing, or "/" and anything. The
			// next pattern segment starts with "/", so whatever ".*"
			// takes ends at a segment boundary.
			b.WriteString("(/.*)?")
			continue
		}
		b.WriteByte('/')
		if onlyStars(s) {
			// A name is never empty: "/*" must not match "/".
			b.WriteString("[^/]+")
			continue
		}
		for _, t := range s.Tokens {
			switch t.Kind {
			case glob.Literal:
				b.WriteString(regexQuote(t.Text))
			case glob.Star:
				b.WriteString("[^/]*")
			case glob.AnyChar:
				b.WriteString("[^/]")
			case glob.Class:
				re, wide := classRegex(t)
				widened = widened || wide
				b.WriteString(re)
			}
		}
	}
	b.WriteByte('$')
	return pathRule{Kind: filterRegex, Value: b.String(), Base: base, Widened: widened}
}

// onlyStars reports whether s is one or more "*" and nothing else.
func onlyStars(s policyengine.GlobSegment) bool {
	for _, t := range s.Tokens {
		if t.Kind != glob.Star {
			return false
		}
	}
	return len(s.Tokens) > 0
}

// classRegex renders a glob character class as a regular expression that
// POSIX extended expressions and Go's regexp read alike: "]" first in the
// brackets, "^" never first, "[" and then "-" last, and a backslash (which
// POSIX brackets take literally and Go's do not) as an alternative
// outside them. A negated class also excludes "/". A class with a
// character beyond ASCII, or a negated one excluding a backslash, cannot
// be written that way; it becomes "[^/]" (any one character) and wide is
// set, so the caller can warn that the rule is wider than the glob.
func classRegex(t glob.Token) (re string, wide bool) {
	var set [128]bool
	for _, r := range t.Ranges {
		if r.Hi >= utf8.RuneSelf {
			return "[^/]", true
		}
		for c := r.Lo; c <= r.Hi; c++ {
			set[c] = true
		}
	}
	set['/'] = t.Negated // never matches inside a segment; excluded when negated
	backslash := set['\\']
	if backslash && t.Negated {
		return "[^/]", true
	}
	set['\\'] = false
	var in strings.Builder
	if set[']'] {
		in.WriteByte(']')
	}
	special := func(c int) bool { return c == ']' || c == '^' || c == '-' || c == '[' }
	for c := 0; c < 128; c++ {
		if !set[c] || special(c) {
			continue
		}
		end := c
		for end+1 < 128 && set[end+1] && !special(end+1) {
			end++
		}
		switch {
		case end-c >= 2:
			in.WriteByte(byte(c))
			in.WriteByte('-')
			in.WriteByte(byte(end))
		default:
			for k := c; k <= end; k++ {
				in.WriteByte(byte(k))
			}
		}
		c = end
	}
	if set['^'] {
		if in.Len() == 0 && !t.Negated {
			// "[^]" would negate: a lone caret is written outside.
			in.Reset()
			alt := []string{`\^`}
			if set['['] {
				alt = append(alt, `\[`)
			}
			if set['-'] {
				alt = append(alt, "-")
			}
			if backslash {
				alt = append(alt, `\\`)
			}
			return "(" + strings.Join(alt, "|") + ")", false
		}
		in.WriteByte('^')
	}
	if set['['] {
		in.WriteByte('[')
	}
	if set['-'] {
		in.WriteByte('-')
	}
	bracket := ""
	switch {
	case t.Negated:
		bracket = "[^" + in.String() + "]"
	case in.Len() > 0:
		bracket = "[" + in.String() + "]"
	}
	switch {
	case !backslash:
		return bracket, false
	case bracket == "":
		return `\\`, false
	}
	return `(\\|` + bracket + ")", false
}

// String describes a rule for comments and errors.
func (r pathRule) String() string { return fmt.Sprintf("%s %s", r.Kind, r.Value) }
