package seatbelt

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"corral/policyengine"
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
	segs := parseSegments(g.String())
	var b strings.Builder
	b.WriteByte('^')
	if base != "/" {
		b.WriteString(regexQuote(base))
	}
	widened := false
	// The literal segments are Base; the first non-literal one starts
	// the pattern.
	i := 0
	for i < len(segs) && segs[i].literal() {
		i++
	}
	for _, s := range segs[i:] {
		if s.doubleStar {
			// Zero or more segments: nothing, or "/" and anything. The
			// next pattern segment starts with "/", so whatever ".*"
			// takes ends at a segment boundary.
			b.WriteString("(/.*)?")
			continue
		}
		b.WriteByte('/')
		if s.onlyStars() {
			// A name is never empty: "/*" must not match "/".
			b.WriteString("[^/]+")
			continue
		}
		for _, t := range s.toks {
			switch t.kind {
			case tokText:
				b.WriteString(regexQuote(t.text))
			case tokStar:
				b.WriteString("[^/]*")
			case tokAny:
				b.WriteString("[^/]")
			case tokClass:
				re, wide := classRegex(t)
				widened = widened || wide
				b.WriteString(re)
			}
		}
	}
	b.WriteByte('$')
	return pathRule{Kind: filterRegex, Value: b.String(), Base: base, Widened: widened}
}

// segment is one "/"-separated piece of a canonical glob pattern.
type segment struct {
	doubleStar bool
	toks       []token
}

func (s segment) onlyStars() bool {
	for _, t := range s.toks {
		if t.kind != tokStar {
			return false
		}
	}
	return len(s.toks) > 0
}

func (s segment) literal() bool {
	return !s.doubleStar && (len(s.toks) == 0 || len(s.toks) == 1 && s.toks[0].kind == tokText)
}

type tokenKind int

const (
	tokText tokenKind = iota
	tokStar
	tokAny
	tokClass
)

type token struct {
	kind    tokenKind
	text    string    // tokText, unescaped
	negated bool      // tokClass
	ranges  [][2]rune // tokClass, inclusive
}

// parseSegments splits a pattern that policyengine.CompileGlob accepted
// (its canonical String) into segments. The syntax is policyengine's:
// "\x" is x itself, "*", "?", "[...]" with "!" or "^" negating, "**" as a
// whole segment.
func parseSegments(pattern string) []segment {
	var segs []segment
	for _, part := range splitSegments(pattern) {
		if part == "**" {
			segs = append(segs, segment{doubleStar: true})
			continue
		}
		var s segment
		var text []byte
		flush := func() {
			if len(text) > 0 {
				s.toks = append(s.toks, token{kind: tokText, text: string(text)})
				text = nil
			}
		}
		for i := 0; i < len(part); {
			switch c := part[i]; c {
			case '\\':
				if i+1 < len(part) {
					text = append(text, part[i+1])
				}
				i += 2
			case '*':
				flush()
				s.toks = append(s.toks, token{kind: tokStar})
				i++
			case '?':
				flush()
				s.toks = append(s.toks, token{kind: tokAny})
				i++
			case '[':
				flush()
				t, n := parseClass(part[i:])
				s.toks = append(s.toks, t)
				i += n
			default:
				text = append(text, c)
				i++
			}
		}
		flush()
		segs = append(segs, s)
	}
	return segs
}

// splitSegments splits pattern on "/" outside classes (a class cannot hold
// "/", and "\/" is refused by CompileGlob, so a plain split is enough).
func splitSegments(pattern string) []string {
	var out []string
	for _, p := range strings.Split(pattern, "/") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseClass reads the class at s[0] == '[' and returns it with the bytes
// it took.
func parseClass(s string) (token, int) {
	t := token{kind: tokClass}
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		t.negated = true
		i++
	}
	char := func() rune {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		return r
	}
	for i < len(s) && s[i] != ']' {
		lo := char()
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			i++
			hi = char()
		}
		t.ranges = append(t.ranges, [2]rune{lo, hi})
	}
	return t, i + 1
}

// classRegex renders a glob character class as a regular expression that
// POSIX extended expressions and Go's regexp read alike: "]" first in the
// brackets, "^" never first, "[" and then "-" last, and a backslash (which
// POSIX brackets take literally and Go's do not) as an alternative
// outside them. A negated class also excludes "/". A class with a
// character beyond ASCII, or a negated one excluding a backslash, cannot
// be written that way; it becomes "[^/]" (any one character) and wide is
// set, so the caller can warn that the rule is wider than the glob.
func classRegex(t token) (re string, wide bool) {
	var set [128]bool
	for _, r := range t.ranges {
		if r[1] >= utf8.RuneSelf {
			return "[^/]", true
		}
		for c := r[0]; c <= r[1]; c++ {
			set[c] = true
		}
	}
	set['/'] = t.negated // never matches inside a segment; excluded when negated
	backslash := set['\\']
	if backslash && t.negated {
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
		if in.Len() == 0 && !t.negated {
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
	case t.negated:
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
