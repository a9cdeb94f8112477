package policyengine

import (
	"fmt"
	"path"
	"strings"
	"testing"
)

// FuzzGlob checks the properties the sandbox relies on, for any pattern and
// path: no panic; a matched path always lies at or under Base (so a kernel
// rule on Base is never narrower than the glob); Subtree globs match exactly
// Base's tree; Literal globs match exactly one path; ".." in a path is
// resolved before matching; String is canonical; and on the syntax it shares
// with path.Match, it agrees with path.Match.
func FuzzGlob(f *testing.F) {
	seeds := []struct{ pattern, path string }{
		{"/ws/**", "/ws/a/b"},
		{"/ws/**", "/ws/../etc/passwd"},
		{"/ws/*", "/ws/a/b"},
		{"/ws/data/*.csv", "/ws/data/x.csv"},
		{"/a/**/b", "/a/b"},
		{"/a/**/b/*/c", "/a/b/x/c/b/y/c"},
		{"/**", "/"},
		{"/", "/"},
		{"/etc/passwd", "/ws/a/../../etc/passwd"},
		{"/ws/./a//b/", "/ws/a/b"},
		{"/ws/[a-c]?", "/ws/bé"},
		{"/ws/[!x]*", "/ws/y"},
		{"/ws/[^x]*", "/ws/x"},
		{`/ws/\*\?\[`, "/ws/*?["},
		{`/ws/[\]\-\\]`, "/ws/]"},
		{"/ws/*a*a*a*b", "/ws/aaaaaaaaaaaaaaaaaaaaaaaa"},
		{"/**/a/**/a/**/b", "/a/a/a/a/a/a/a/a/a/a/c"},
		{"/ws/a**b", "/ws/ab"},
		{"/ws/[abc", "/ws/a"},
		{"/ws/..", "/"},
		{"ws/**", "ws/a"},
		{"/ws/x\\", "/ws/x"},
		{"", ""},
		{"/ws/\xff*", "/ws/\xff\xfe"},
		{"/ws/?", "/ws/\xc3"},
		{"/*", "/"},
		{"/*s[!0]y", "/s/y"},
		{"/ws/a", "/ws/./a/."},
		{"/ws/a", "/ws/.a/..b"},
	}
	for _, s := range seeds {
		f.Add(s.pattern, s.path)
	}
	f.Fuzz(func(t *testing.T, pattern, p string) {
		// Match skips path.Clean when this says the path is clean already.
		if strings.HasPrefix(p, "/") && isCleanAbs(p) != (path.Clean(p) == p) {
			t.Fatalf("isCleanAbs(%q) = %v, but path.Clean gives %q", p, isCleanAbs(p), path.Clean(p))
		}

		g, err := CompileGlob(pattern)
		if err != nil {
			if g != nil {
				t.Fatalf("CompileGlob(%q) returned both a Glob and error %v", pattern, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", pattern)) {
				t.Fatalf("CompileGlob(%q) error %q does not name the pattern", pattern, err)
			}
			return
		}
		got := g.Match(p)
		clean := "" // the path Match judges; "" for a relative path, which never matches
		if strings.HasPrefix(p, "/") {
			clean = path.Clean(p)
		} else if got {
			t.Fatalf("%q matched relative path %q", g, p)
		}
		if clean != "" && g.Match(clean) != got {
			t.Fatalf("%q: Match(%q) = %v but Match(Clean) = Match(%q) = %v", g, p, got, clean, !got)
		}

		base := g.Base()
		inBase := clean != "" && (clean == base || base == "/" || strings.HasPrefix(clean, base+"/"))
		if got && !inBase {
			t.Fatalf("%q matched %q (cleaned %q) outside its Base %q", g, p, clean, base)
		}
		if g.Subtree() && got != inBase {
			t.Fatalf("%q is a Subtree of %q but Match(%q) = %v", g, base, p, got)
		}
		if g.Literal() {
			if got != (clean == base) {
				t.Fatalf("literal %q (Base %q): Match(%q) = %v", g, base, p, got)
			}
			// Without escapes, the pattern is the path itself, so
			// Match(p) == (Clean(p) == String()).
			if !strings.Contains(g.String(), `\`) && g.String() != base {
				t.Fatalf("literal %q has Base %q", g, base)
			}
		}

		// String is canonical: it compiles to an equal Glob.
		g2, err := CompileGlob(g.String())
		if err != nil {
			t.Fatalf("CompileGlob(%q).String() = %q does not compile: %v", pattern, g, err)
		}
		if g2.String() != g.String() || g2.Base() != base || g2.Literal() != g.Literal() ||
			g2.Subtree() != g.Subtree() || g2.Match(p) != got {
			t.Fatalf("%q and its recompiled String %q differ", pattern, g2)
		}

		// Differential check against path.Match on the syntax both share:
		// an already canonical pattern (so cleaning did not change it) with
		// no "**", and a clean absolute path other than "/" (path.Match
		// sees an empty name after its "/", so "/*" matches "/" there; here
		// "/" has no segment for "*" to match, as "/ws/*" must not match "/ws").
		if pattern == g.String() && !strings.Contains(pattern, "**") && clean == p && p != "/" {
			want, err := path.Match(toPathMatchSyntax(pattern), p)
			// path.Match lets a class such as "[!0]" or "[+-0]" match "/";
			// here classes stay within a segment. Such a match shows as
			// the path having more "/" than the pattern.
			want = want && strings.Count(p, "/") == strings.Count(pattern, "/")
			if err == nil && want != got {
				t.Fatalf("CompileGlob(%q).Match(%q) = %v, path.Match says %v", pattern, p, got, want)
			}
		}
	})
}

// toPathMatchSyntax rewrites a canonical pattern's negated classes "[!" as
// path.Match's "[^"; everything else is spelled the same.
func toPathMatchSyntax(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			b.WriteString(pattern[i : i+2])
			i++
		case pattern[i] == '[' && i+1 < len(pattern) && pattern[i+1] == '!':
			b.WriteString("[^")
			i++
		default:
			b.WriteByte(pattern[i])
		}
	}
	return b.String()
}
