package policyengine

import (
	"fmt"
	pathpkg "path"
	"strings"
	"unicode/utf8"

	"corral.dev/corral/internal/glob"
)

// Glob is a compiled absolute path pattern.
//
// Syntax, applied per path segment:
//
//	"*"      any run of characters within one segment (never "/"); it
//	         also matches names starting with "."
//	"**"     as a whole segment: zero or more segments
//	"?"      exactly one character (not "/")
//	"[abc]"  one character from the set; ranges as in "[a-z]"
//	"[!x]"   one character not in the set ("[^x]" is the same)
//	"\x"     the character x itself, even if it is a metacharacter
//
// Inside a class, "]", "-" and "\" must be escaped to be literal, and a
// class cannot contain "/" (it could never match inside a segment).
//
// The pattern is cleaned when compiled: "//" and "/./" collapse, a trailing
// "/" is dropped, and "**/**" becomes "**". A ".." segment is rejected
// rather than resolved, because a rule whose reach depends on reading
// through ".." is easy to misjudge when reviewing a skill's permissions.
//
// The zero Glob matches nothing; use CompileGlob.
type Glob struct {
	pattern string        // canonical pattern, see String
	segs    []globSegment // one per "/"-separated segment of the cleaned pattern
	base    string        // decoded path of the leading literal segments ("/" if none)
	nLit    int           // how many leading segments are literal
}

type segmentKind uint8

const (
	segLiteral    segmentKind = iota // matches one segment equal to text
	segPattern                       // matches one segment against toks
	segDoubleStar                    // "**": matches zero or more segments
)

type globSegment struct {
	kind segmentKind
	text string       // segLiteral: the decoded (unescaped) name
	toks []glob.Token // segPattern: the operators, in order (the glob core)
}

// CompileGlob parses and cleans pattern. The errors name the pattern and
// say what to write instead, because they end up in front of whoever wrote
// a skill's permission list.
func CompileGlob(pattern string) (*Glob, error) {
	bad := func(problem string) error {
		return fmt.Errorf("glob %q: %s", pattern, problem)
	}
	if pattern == "" {
		return nil, bad("pattern is empty")
	}
	if pattern[0] != '/' {
		return nil, bad(`pattern must be an absolute path (start with "/")`)
	}

	var segs []globSegment
	for i := 0; i < len(pattern); {
		if pattern[i] == '/' {
			i++ // "//" and the trailing "/" produce no segment
			continue
		}
		seg, n, problem := parseSegment(pattern[i:])
		if problem != "" {
			return nil, bad(problem)
		}
		i += n
		switch {
		case seg.kind == segLiteral && seg.text == ".":
			continue // "/./" is "/"
		case seg.kind == segLiteral && seg.text == "..":
			return nil, bad(`".." segments are not allowed: they make the rule's reach unclear; write the intended path without them`)
		case seg.kind == segDoubleStar && len(segs) > 0 && segs[len(segs)-1].kind == segDoubleStar:
			continue // "**/**" matches exactly what "**" does
		}
		segs = append(segs, seg)
	}

	g := &Glob{segs: segs}
	for g.nLit < len(segs) && segs[g.nLit].kind == segLiteral {
		g.nLit++
	}
	var b strings.Builder
	for _, s := range segs[:g.nLit] {
		b.WriteByte('/')
		b.WriteString(s.text)
	}
	if g.base = b.String(); g.base == "" {
		g.base = "/"
	}
	g.pattern = renderPattern(segs)
	return g, nil
}

// parseSegment parses one segment at the start of s (which does not start
// with "/") and returns it with the number of bytes consumed, which stops at
// the next "/" or the end of s. A non-empty problem means s is malformed.
func parseSegment(s string) (seg globSegment, n int, problem string) {
	if strings.HasPrefix(s, "**") && (len(s) == 2 || s[2] == '/') {
		return globSegment{kind: segDoubleStar}, 2, ""
	}
	var toks []glob.Token
	var lit []byte // pending literal bytes, flushed before each operator
	flush := func() {
		if len(lit) > 0 {
			toks = append(toks, glob.Token{Kind: glob.Literal, Text: string(lit)})
			lit = lit[:0]
		}
	}
	i := 0
scan:
	for i < len(s) {
		switch c := s[i]; c {
		case '/':
			break scan
		case '\\':
			if i+1 == len(s) {
				return seg, 0, "trailing backslash escapes nothing"
			}
			if s[i+1] == '/' {
				return seg, 0, `backslash before "/": a path separator cannot be escaped`
			}
			lit = append(lit, s[i+1])
			i += 2
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				return seg, 0, `"**" must be a whole path segment: use "*" to match within one segment, or "/**/" to match any number of directories`
			}
			flush()
			toks = append(toks, glob.Token{Kind: glob.Star})
			i++
		case '?':
			flush()
			toks = append(toks, glob.Token{Kind: glob.AnyChar})
			i++
		case '[':
			flush()
			tok, n, problem := parseClass(s[i:])
			if problem != "" {
				return seg, 0, problem
			}
			toks = append(toks, tok)
			i += n
		default:
			lit = append(lit, c)
			i++
		}
	}
	if len(toks) == 0 {
		// Only literal text (possibly escaped): the segment names one entry.
		return globSegment{kind: segLiteral, text: string(lit)}, i, ""
	}
	flush()
	return globSegment{kind: segPattern, toks: toks}, i, ""
}

// parseClass parses the class starting at s[0] == '[' and returns it with the
// number of bytes consumed.
func parseClass(s string) (tok glob.Token, n int, problem string) {
	tok.Kind = glob.Class
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		tok.Negated = true
		i++
	}
	for {
		if i == len(s) || s[i] == '/' {
			return tok, 0, `unclosed "[" (a class ends with "]" within one segment; escape a literal bracket as "\[")`
		}
		if s[i] == ']' {
			if len(tok.Ranges) == 0 {
				return tok, 0, `empty character class (escape a literal "]" inside a class as "\]")`
			}
			return tok, i + 1, ""
		}
		lo, next, problem := parseClassChar(s, i)
		if problem != "" {
			return tok, 0, problem
		}
		i = next
		hi := lo
		if i < len(s) && s[i] == '-' {
			if i+1 < len(s) && s[i+1] == ']' {
				return tok, 0, `range in class has no upper end (escape a literal "-" as "\-")`
			}
			if hi, i, problem = parseClassChar(s, i+1); problem != "" {
				return tok, 0, problem
			}
			if hi < lo {
				return tok, 0, fmt.Sprintf("class range %q-%q is reversed", lo, hi)
			}
		}
		tok.Ranges = append(tok.Ranges, glob.Range{Lo: lo, Hi: hi})
	}
}

// parseClassChar reads one possibly escaped character of a class at s[i].
func parseClassChar(s string, i int) (r rune, next int, problem string) {
	if i == len(s) || s[i] == '/' {
		return 0, 0, `unclosed "[" (a class ends with "]" within one segment; escape a literal bracket as "\[")`
	}
	switch s[i] {
	case '-':
		return 0, 0, `a literal "-" in a class must be escaped as "\-"`
	case '\\':
		i++
		if i == len(s) {
			return 0, 0, "trailing backslash escapes nothing"
		}
		if s[i] == '/' {
			return 0, 0, `backslash before "/": a path separator cannot be escaped`
		}
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return 0, 0, "invalid UTF-8 in character class"
	}
	return r, i + w, ""
}

// renderPattern writes segs back as a pattern with only the escapes that are
// needed, so that equivalent spellings ("/a//b/", "/a/\b") have one String
// and compiling String gives the same Glob again.
func renderPattern(segs []globSegment) string {
	if len(segs) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		switch s.kind {
		case segDoubleStar:
			b.WriteString("**")
		case segLiteral:
			writeEscaped(&b, s.text, `*?[\`)
		case segPattern:
			for _, t := range s.toks {
				switch t.Kind {
				case glob.Literal:
					writeEscaped(&b, t.Text, `*?[\`)
				case glob.AnyChar:
					b.WriteByte('?')
				case glob.Star:
					b.WriteByte('*')
				case glob.Class:
					b.WriteByte('[')
					if t.Negated {
						b.WriteByte('!')
					}
					for _, r := range t.Ranges {
						writeEscaped(&b, string(r.Lo), `\]-!^`)
						if r.Hi != r.Lo {
							b.WriteByte('-')
							writeEscaped(&b, string(r.Hi), `\]-!^`)
						}
					}
					b.WriteByte(']')
				}
			}
		}
	}
	return b.String()
}

func writeEscaped(b *strings.Builder, text, special string) {
	for i := 0; i < len(text); i++ {
		if strings.IndexByte(special, text[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(text[i])
	}
}

// String returns the cleaned pattern in canonical form: needless escapes
// dropped and "[^" written as "[!", so equal globs have equal strings.
// For a Literal glob it is the path itself unless the path contains a
// metacharacter, which stays escaped; Base is always the plain path.
func (g *Glob) String() string {
	if g == nil {
		return ""
	}
	return g.pattern
}

// Base returns the path named by the leading literal segments: the directory
// (or file) a kernel rule can be attached to. Every path the glob matches is
// Base or below it. Escapes are removed, so Base is a real path.
func (g *Glob) Base() string {
	if g == nil {
		return ""
	}
	return g.base
}

// Literal reports whether the pattern has no metacharacters, so it names
// exactly one path: Base.
func (g *Glob) Literal() bool {
	return g != nil && g.pattern != "" && g.nLit == len(g.segs)
}

// Subtree reports whether the pattern is exactly Base + "/**", so a kernel
// rule on the Base tree is exactly as wide as the glob.
func (g *Glob) Subtree() bool {
	return g != nil && g.nLit == len(g.segs)-1 && g.segs[g.nLit].kind == segDoubleStar
}

// Match reports whether path matches the glob. The path is cleaned first
// (path.Clean), so "/ws/../etc/passwd" is matched as "/etc/passwd" and ".."
// can never reach outside a rule. A relative path never matches.
func (g *Glob) Match(path string) bool {
	if g == nil || g.pattern == "" || path == "" || path[0] != '/' {
		return false
	}
	if !isCleanAbs(path) {
		path = pathpkg.Clean(path) // allocates, so only when needed
	}
	return g.matchClean(path)
}

// matchClean is Match for a path already absolute and clean: the engine
// cleans a path once and tries it against every rule.
func (g *Glob) matchClean(path string) bool {
	// rest holds the segments still to match, each preceded by "/"; "" when
	// there are none. The literal prefix is checked with one comparison.
	rest := path
	if g.nLit > 0 {
		if !strings.HasPrefix(path, g.base) {
			return false
		}
		rest = path[len(g.base):]
		if rest != "" && rest[0] != '/' {
			return false // "/ws" must not match "/wsx"
		}
	} else if path == "/" {
		rest = ""
	}
	return matchSegments(g.segs[g.nLit:], rest)
}

// isCleanAbs reports whether the absolute path p is already what path.Clean
// would return: no empty, "." or ".." segments and no trailing "/". It
// searches for "//" and "/." with the vectorised strings.Index rather than
// walking bytes, since it runs on every Match.
func isCleanAbs(p string) bool {
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return false
	}
	for i := 0; ; {
		j := strings.Index(p[i:], "/.")
		if j < 0 {
			return true
		}
		i += j + 2 // just past "/."
		if i == len(p) || p[i] == '/' {
			return false // "." segment
		}
		if p[i] == '.' && (i+1 == len(p) || p[i+1] == '/') {
			return false // ".." segment
		}
	}
}

// matchSegments matches the pattern segments segs against rest ("" or
// "/seg/seg..."). It is the classic iterative wildcard algorithm with "**"
// as the star and whole segments as characters: on a mismatch it only
// retries from the most recent "**", letting it swallow one more segment.
// Retrying earlier "**"s is never needed (the later one can absorb whatever
// they would), so the work is bounded by len(segs) × segments in rest rather
// than growing exponentially with the number of "**".
func matchSegments(segs []globSegment, rest string) bool {
	pi, pos := 0, 0 // next pattern segment; offset of the "/" before the next path segment
	starPi, starPos := -1, 0
	for {
		if pi < len(segs) {
			s := &segs[pi]
			if s.kind == segDoubleStar {
				if pi == len(segs)-1 {
					return true // a trailing "**" takes whatever is left
				}
				starPi, starPos = pi, pos
				pi++
				continue
			}
			if pos < len(rest) {
				name, next := nextSegment(rest, pos)
				if s.match(name) {
					pi, pos = pi+1, next
					continue
				}
			}
		} else if pos == len(rest) {
			return true
		}
		if starPi < 0 || starPos == len(rest) {
			return false
		}
		_, starPos = nextSegment(rest, starPos)
		pi, pos = starPi+1, starPos
	}
}

// nextSegment returns the segment after the "/" at rest[pos] and the offset
// of the "/" that follows it (or len(rest)).
func nextSegment(rest string, pos int) (name string, next int) {
	name = rest[pos+1:]
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i], pos + 1 + i
	}
	return name, len(rest)
}

func (s *globSegment) match(name string) bool {
	if s.kind == segLiteral {
		return name == s.text
	}
	return glob.Match(s.toks, name, false)
}

// GlobSegment is one "/"-separated segment of a compiled Glob, in the
// glob core's tokens: "**" (DoubleStar), or Tokens (a literal segment is
// one Literal token). Renderers into other syntaxes read these (seatbelt).
type GlobSegment struct {
	DoubleStar bool
	Tokens     []glob.Token
}

// Segments returns g's segments after its Base's (Literal: none).
func (g *Glob) Segments() []GlobSegment {
	var out []GlobSegment
	for _, s := range g.segs[g.nLit:] {
		switch s.kind {
		case segDoubleStar:
			out = append(out, GlobSegment{DoubleStar: true})
		case segLiteral:
			out = append(out, GlobSegment{Tokens: []glob.Token{{Kind: glob.Literal, Text: s.text}}})
		default:
			out = append(out, GlobSegment{Tokens: s.toks})
		}
	}
	return out
}

// NameMayMatch reports whether a path whose last segment is name can
// match g: false only when g's last segment is not "**" and does not
// match name. It is a cheap filter before Match for callers that walk
// folders (the sandbox's search for fs.deny matches).
func (g *Glob) NameMayMatch(name string) bool {
	if len(g.segs) == 0 {
		return true
	}
	last := &g.segs[len(g.segs)-1]
	return last.kind == segDoubleStar || last.match(name)
}
