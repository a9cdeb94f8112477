package policyengine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustGlob(t testing.TB, pattern string) *Glob {
	t.Helper()
	g, err := CompileGlob(pattern)
	if err != nil {
		t.Fatalf("CompileGlob(%q): %v", pattern, err)
	}
	return g
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		want    bool
	}{
		// Literal patterns name one path.
		{"/etc/passwd", "/etc/passwd", true},
		{"/etc/passwd", "/etc/passwd2", false},
		{"/etc/passwd", "/etc", false},
		{"/etc/passwd", "/etc/passwd/x", false},
		{"/etc", "/etcetera", false},
		{"/", "/", true},
		{"/", "/a", false},

		// "*" stays within one segment.
		{"/ws/*", "/ws/a", true},
		{"/ws/*", "/ws/.hidden", true},
		{"/ws/*", "/ws", false},
		{"/ws/*", "/ws/a/b", false},
		{"/ws/data/*.csv", "/ws/data/x.csv", true},
		{"/ws/data/*.csv", "/ws/data/.csv", true},
		{"/ws/data/*.csv", "/ws/data/x.csv.bak", false},
		{"/ws/data/*.csv", "/ws/data/sub/x.csv", false},
		{"/ws/*/cfg", "/ws/a/cfg", true},
		{"/ws/*/cfg", "/ws/a/b/cfg", false},
		{"/ws/a*b*c", "/ws/abc", true},
		{"/ws/a*b*c", "/ws/axxbyyc", true},
		{"/ws/a*b*c", "/ws/axxbyy", false},
		{"/ws/a*b*c", "/ws/acb", false},
		{"/*", "/", false},
		{"/*", "/x", true},

		// "**" spans zero or more segments.
		{"/ws/**", "/ws", true},
		{"/ws/**", "/ws/a", true},
		{"/ws/**", "/ws/a/b/c", true},
		{"/ws/**", "/wsx", false},
		{"/ws/**", "/wsx/a", false},
		{"/ws/**", "/", false},
		{"/**", "/", true},
		{"/**", "/any/thing", true},
		{"/a/**/b", "/a/b", true},
		{"/a/**/b", "/a/x/b", true},
		{"/a/**/b", "/a/x/y/b", true},
		{"/a/**/b", "/a/x/y/c", false},
		{"/a/**/b", "/a/b/c", false},
		{"/a/**/b/**", "/a/x/b", true},
		{"/a/**/b/**", "/a/x/b/y/z", true},
		{"/**/*.go", "/main.go", true},
		{"/**/*.go", "/src/x/y/main.go", true},
		{"/**/*.go", "/src/x/y/main.c", false},
		{"/a/**/b/*/c", "/a/b/b/x/c", true},
		{"/a/**/b/*/c", "/a/b/x/c/b/y/c", true},
		{"/a/**/b/*/c", "/a/b/x/c/b/y/d", false},
		{"/a/**/**/b", "/a/b", true},

		// "?" is one character, never "/", and a whole UTF-8 character.
		{"/ws/?", "/ws/a", true},
		{"/ws/?", "/ws/ab", false},
		{"/ws/?", "/ws", false},
		{"/ws/a?c", "/ws/abc", true},
		{"/ws/a?c", "/ws/a/c", false},
		{"/ws/?", "/ws/é", true},
		{"/ws/??", "/ws/é", false},

		// Classes and negated classes.
		{"/ws/[abc].txt", "/ws/a.txt", true},
		{"/ws/[abc].txt", "/ws/d.txt", false},
		{"/ws/[a-c]", "/ws/b", true},
		{"/ws/[a-c]", "/ws/d", false},
		{"/ws/[a-cx-z0-9]", "/ws/y", true},
		{"/ws/[a-cx-z0-9]", "/ws/5", true},
		{"/ws/[a-cx-z0-9]", "/ws/m", false},
		{"/ws/[!x]", "/ws/y", true},
		{"/ws/[!x]", "/ws/x", false},
		{"/ws/[^x]", "/ws/y", true},
		{"/ws/[^x]", "/ws/x", false},
		{"/ws/[!a-z]", "/ws/A", true},
		{"/ws/[!a-z]", "/ws/q", false},
		{"/ws/[!x]", "/ws", false},
		{"/ws/[!x]", "/ws/yy", false},
		{"/ws/[é]", "/ws/é", true},
		{"/ws/[a!]", "/ws/!", true},
		{"/ws/[\\]]", "/ws/]", true},
		{"/ws/[\\-]", "/ws/-", true},
		{"/ws/[\\!x]", "/ws/!", true},

		// Escapes make metacharacters literal.
		{`/ws/\*`, "/ws/*", true},
		{`/ws/\*`, "/ws/a", false},
		{`/ws/\?`, "/ws/?", true},
		{`/ws/\?`, "/ws/a", false},
		{`/ws/\[a]`, "/ws/[a]", true},
		{`/ws/\[a]`, "/ws/a", false},
		{`/ws/a\\b`, `/ws/a\b`, true},
		{`/ws/\a`, "/ws/a", true},
		{`/ws/\*\*`, "/ws/**", true},
		{`/ws/\*\*`, "/ws/x", false},
		{`/ws/\**`, "/ws/*x", true},
		{`/ws/\**`, "/ws/x*", false},

		// The path is cleaned before matching.
		{"/ws/a", "/ws/./a", true},
		{"/ws/a", "/ws//a", true},
		{"/ws/a", "/ws/a/", true},
		{"/etc", "/ws/a/../../etc", true},
		{"/ws/**", "/ws/a/../../etc", false},
		{"/ws/**", "/ws/../etc/passwd", false},
		{"/ws/**", "/ws/..", false},
		{"/ws/**", "/ws/a/..", true},
		{"/etc/passwd", "/ws/../etc/passwd", true},
		{"/etc/passwd", "/../../etc/passwd", true},
		{"/ws/*", "/ws/a/b/..", true},

		// The pattern is cleaned when compiled.
		{"/ws//a", "/ws/a", true},
		{"/ws/./a", "/ws/a", true},
		{"/ws/a/", "/ws/a", true},
		{"//ws", "/ws", true},

		// Relative and empty paths never match.
		{"/**", "", false},
		{"/**", "ws/a", false},
		{"/**", ".", false},
		{"/ws/**", "ws", false},
		{"/ws/**", "../ws", false},
	}
	for _, tt := range tests {
		g := mustGlob(t, tt.pattern)
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("CompileGlob(%q).Match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestGlobString(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"/", "/"},
		{"//", "/"},
		{"/.", "/"},
		{"/ws/./a", "/ws/a"},
		{"/ws//a", "/ws/a"},
		{"/ws/a/", "/ws/a"},
		{"/ws/**/", "/ws/**"},
		{"/ws/**/**/a", "/ws/**/a"},
		{`/ws/\a\.txt`, "/ws/a.txt"},
		{`/ws/\*`, `/ws/\*`},
		{`/ws/\.`, "/ws"},
		{"/ws/[^a-c]", "/ws/[!a-c]"},
		{`/ws/[\]\-\\x]`, `/ws/[\]\-\\x]`},
		{`/ws/[!\!]`, `/ws/[!\!]`},
		{"/ws/a]b", "/ws/a]b"},
	}
	for _, tt := range tests {
		g := mustGlob(t, tt.pattern)
		if got := g.String(); got != tt.want {
			t.Errorf("CompileGlob(%q).String() = %q, want %q", tt.pattern, got, tt.want)
		}
		// The canonical form compiles to itself.
		if again := mustGlob(t, g.String()).String(); again != g.String() {
			t.Errorf("CompileGlob(%q).String() = %q recompiles to %q", tt.pattern, g.String(), again)
		}
	}
}

func TestGlobBaseLiteralSubtree(t *testing.T) {
	tests := []struct {
		pattern string
		base    string
		literal bool
		subtree bool
	}{
		{"/ws/data/*.csv", "/ws/data", false, false},
		{"/ws/**", "/ws", false, true},
		{"/home/u/ws/**", "/home/u/ws", false, true},
		{"/etc/passwd", "/etc/passwd", true, false},
		{"/**", "/", false, true},
		{"/", "/", true, false},
		{"/*", "/", false, false},
		{"/ws/*/x", "/ws", false, false},
		{"/ws/**/x", "/ws", false, false},
		{"/ws/a?c/x", "/ws", false, false},
		{"/ws/[ab]/**", "/ws", false, false},
		{"/ws/**/**", "/ws", false, true},
		{"/ws/./a//b/", "/ws/a/b", true, false},
		{`/ws/\*`, "/ws/*", true, false},
		{`/ws/\[x]/**`, "/ws/[x]", false, true},
	}
	for _, tt := range tests {
		g := mustGlob(t, tt.pattern)
		if got := g.Base(); got != tt.base {
			t.Errorf("CompileGlob(%q).Base() = %q, want %q", tt.pattern, got, tt.base)
		}
		if got := g.Literal(); got != tt.literal {
			t.Errorf("CompileGlob(%q).Literal() = %v, want %v", tt.pattern, got, tt.literal)
		}
		if got := g.Subtree(); got != tt.subtree {
			t.Errorf("CompileGlob(%q).Subtree() = %v, want %v", tt.pattern, got, tt.subtree)
		}
	}
}

func TestCompileGlobErrors(t *testing.T) {
	tests := []struct {
		pattern string
		wantIn  string // a piece of the error text
	}{
		{"", "empty"},
		{"ws/**", "absolute"},
		{"./ws", "absolute"},
		{"*", "absolute"},
		{"/ws/[abc", `unclosed "["`},
		{"/ws/[abc/d]", `unclosed "["`},
		{"/ws/[", `unclosed "["`},
		{"/ws/[!", `unclosed "["`},
		{"/ws/[]", "empty character class"},
		{"/ws/[!]", "empty character class"},
		{"/ws/a**b", `use "*" to match within one segment, or "/**/"`},
		{"/ws/**b", `"**" must be a whole path segment`},
		{"/ws/a**", `"**" must be a whole path segment`},
		{"/ws/***", `"**" must be a whole path segment`},
		{"/ws/x\\", "trailing backslash"},
		{"/ws/[x\\", "trailing backslash"},
		{"/ws/a\\/b", "cannot be escaped"},
		{"/ws/../etc", `".."`},
		{"/ws/..", `".."`},
		{"/..", `".."`},
		{`/ws/\.\./etc`, `".."`},
		{"/ws/[z-a]", "reversed"},
		{"/ws/[a-]", `escape a literal "-"`},
		{"/ws/[-a]", `escape`},
		{"/ws/[\xff]", "UTF-8"},
	}
	for _, tt := range tests {
		g, err := CompileGlob(tt.pattern)
		if err == nil {
			t.Errorf("CompileGlob(%q) = %q, want error containing %q", tt.pattern, g, tt.wantIn)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.wantIn) {
			t.Errorf("CompileGlob(%q) error %q does not contain %q", tt.pattern, msg, tt.wantIn)
		}
		// Errors name the pattern so a user can find the offending rule.
		if !strings.Contains(msg, fmt.Sprintf("%q", tt.pattern)) {
			t.Errorf("CompileGlob(%q) error %q does not name the pattern", tt.pattern, msg)
		}
	}
}

func TestGlobNilAndZero(t *testing.T) {
	var nilGlob *Glob
	var zero Glob
	for _, g := range []*Glob{nilGlob, &zero} {
		if g.Match("/") || g.Match("/a") || g.Literal() || g.Subtree() || g.String() != "" {
			t.Errorf("%#v: a nil or zero Glob must match nothing and report nothing", g)
		}
	}
}

// TestGlobPathological checks that matching time does not explode with the
// number of wildcards: a backtracking matcher takes exponential time here.
func TestGlobPathological(t *testing.T) {
	longSegs := "/" + strings.Repeat("a/", 2000) + "c"
	longName := "/ws/" + strings.Repeat("a", 4000)
	cases := []struct{ pattern, path string }{
		{"/**/a/**/a/**/a/**/a/**/a/**/a/**/b", longSegs},
		{"/**/a/**/a/**/a/**/a/**/a/**/a/**/b", "/" + strings.Repeat("a/", 2000) + "b/c"},
		{"/ws/*a*a*a*a*a*a*a*a*b", longName},
		{"/ws/*a*a*a*a*a*a*a*a*b/**/*a*a*a*b", longName},
		{"/**/*a*a*a*a*b/**/x", "/" + strings.Repeat(strings.Repeat("a", 50)+"/", 200) + "y"},
	}
	for _, c := range cases {
		g := mustGlob(t, c.pattern)
		start := time.Now()
		if g.Match(c.path) {
			t.Errorf("%q unexpectedly matched", c.pattern)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("CompileGlob(%q).Match took %v on a %d-byte path", c.pattern, d, len(c.path))
		}
	}
}

func TestGlobMatchDoesNotAllocate(t *testing.T) {
	cases := []struct{ pattern, path string }{
		{"/home/u/ws/**", "/home/u/ws/project/src/main/server.go"},
		{"/ws/data/*.csv", "/ws/data/measurements-2024.csv"},
		{"/home/**/src/*/[n-z]*.go", "/home/u/ws/project/src/main/server.go"},
		{"/etc/ssl/certs/ca.pem", "/etc/ssl/certs/ca.pem"},
	}
	for _, c := range cases {
		g := mustGlob(t, c.pattern)
		if !g.Match(c.path) {
			t.Fatalf("CompileGlob(%q).Match(%q) = false", c.pattern, c.path)
		}
		if n := testing.AllocsPerRun(100, func() { g.Match(c.path) }); n != 0 {
			t.Errorf("CompileGlob(%q).Match(%q) allocates %v times", c.pattern, c.path, n)
		}
	}
}

func BenchmarkGlobMatch(b *testing.B) {
	const path = "/home/u/ws/project/src/main/server.go" // 37 bytes, clean
	cases := []struct{ name, pattern, path string }{
		{"subtree", "/home/u/ws/**", path},
		{"literal", "/home/u/ws/project/src/main/server.go", path},
		{"extension", "/home/u/ws/project/src/main/*.go", path},
		{"doublestar-middle", "/home/**/src/*/[n-z]*.go", path},
		{"miss", "/etc/ssl/**", path},
		{"unclean-path", "/home/u/ws/**", "/home/u/ws/./project/../project/src/main/server.go"},
	}
	for _, c := range cases {
		g := mustGlob(b, c.pattern)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Match(c.path)
			}
		})
	}
}
