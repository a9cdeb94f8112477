package seatbelt

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"corral.dev/corral/policyengine"
)

// matchRule applies a rendered path rule to a canonical path the way
// Seatbelt does: literal equality, subpath containment, or the regular
// expression (POSIX: "." matches a newline too).
func matchRule(t testing.TB, r pathRule, p string) bool {
	switch r.Kind {
	case filterLiteral:
		return p == r.Value
	case filterSubpath:
		return isUnder(p, r.Value)
	}
	re, err := regexp.Compile("(?s)" + r.Value)
	if err != nil {
		t.Fatalf("rule %q does not compile: %v", r.Value, err)
	}
	return re.MatchString(p)
}

// TestGlobRules: the rendered rule matches exactly the paths the glob
// does.
func TestGlobRules(t *testing.T) {
	for _, c := range []struct {
		glob     string
		kind     filterKind
		match    []string
		mismatch []string
	}{
		{"/ws/**", filterSubpath, []string{"/ws", "/ws/a", "/ws/a/b"}, []string{"/wsx", "/w", "/"}},
		{"/ws/f.txt", filterLiteral, []string{"/ws/f.txt"}, []string{"/ws/f.txtx", "/ws/f.txt/a"}},
		{"/ws/*.csv", filterRegex, []string{"/ws/a.csv", "/ws/.csv", "/ws/.x.csv"}, []string{"/ws/a/b.csv", "/ws/a.csvx", "/ws/acsv", "/wsx/a.csv"}},
		{"/ws/**/*.go", filterRegex, []string{"/ws/a.go", "/ws/x/y/a.go"}, []string{"/ws/a.gox", "/wsx/a.go", "/ws"}},
		{"/ws/a?c", filterRegex, []string{"/ws/abc", "/ws/aéc"}, []string{"/ws/ac", "/ws/a/c", "/ws/abbc"}},
		{"/ws/[a-c]x", filterRegex, []string{"/ws/ax", "/ws/cx"}, []string{"/ws/dx", "/ws/-x"}},
		{"/ws/[!a-c]x", filterRegex, []string{"/ws/dx", "/ws/.x"}, []string{"/ws/ax", "/ws//x"}},
		{`/ws/[\]\-\\^]x`, filterRegex, []string{"/ws/]x", "/ws/-x", `/ws/\x`, "/ws/^x"}, []string{"/ws/ax"}},
		{"/ws/[^]x", filterRegex, nil, nil},
		{"/**/.env", filterRegex, []string{"/.env", "/a/.env", "/a/b/.env"}, []string{"/a/.envx", "/a/x.env"}},
		{"/*", filterRegex, []string{"/a"}, []string{"/a/b", "/"}},
		{`/ws/a\*b/**`, filterSubpath, []string{"/ws/a*b/c"}, []string{"/ws/axb/c"}},
		{"/tmp/ws/*.txt", filterRegex, []string{"/private/tmp/ws/a.txt"}, []string{"/tmp/ws/a.txt"}},
	} {
		g, err := policyengine.CompileGlob(c.glob)
		if err != nil {
			if c.match == nil {
				continue // a malformed glob in the table is expected to fail
			}
			t.Fatalf("%s: %v", c.glob, err)
		}
		r := globRuleAt(g, g.Base())
		if r.Kind != c.kind {
			t.Errorf("%s: kind %v, want %v", c.glob, r.Kind, c.kind)
		}
		for _, p := range c.match {
			if !matchRule(t, r, p) {
				t.Errorf("%s (%s) does not match %q", c.glob, r.Value, p)
			}
		}
		for _, p := range c.mismatch {
			if matchRule(t, r, p) {
				t.Errorf("%s (%s) matches %q", c.glob, r.Value, p)
			}
		}
	}
}

// TestGlobRulesAgree compares rendered rules with policyengine's matcher
// on random globs and paths.
func TestGlobRulesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 4000; i++ {
		checkAgreement(t, randomGlob(rng), randomPath(rng))
	}
}

// checkAgreement checks one glob and path: where policyengine matches,
// the rule must (and where it does not, the rule must not, unless the
// rule says it was widened).
func checkAgreement(t testing.TB, glob, p string) {
	g, err := policyengine.CompileGlob(glob)
	if err != nil || !utf8.ValidString(glob) || !utf8.ValidString(p) {
		return
	}
	p = "/" + strings.Trim(p, "/")
	for _, root := range symlinkedRoots {
		if isUnder(p, root) || isUnder(g.Base(), root) {
			return // canonicalised: compared in TestCanonical
		}
	}
	if strings.Contains(p, "//") || strings.Contains(p+"/", "/./") || strings.Contains(p+"/", "/../") {
		return // the kernel's paths are clean
	}
	r := globRuleAt(g, g.Base())
	want, got := g.Match(p), matchRule(t, r, p)
	if want && !got || got && !want && !r.Widened {
		t.Errorf("glob %q, rule %s, path %q: rule matches %v, policyengine %v", glob, r, p, got, want)
	}
}

const globAlphabet = "ab.-_]^\\[!*?/é"

func randomGlob(rng *rand.Rand) string {
	var b strings.Builder
	for n := 1 + rng.IntN(4); n > 0; n-- {
		b.WriteByte('/')
		switch rng.IntN(8) {
		case 0:
			b.WriteString("**")
		case 1:
			b.WriteString("[" + randomRun(rng, 3) + "]")
		case 2:
			b.WriteString("[!" + randomRun(rng, 3) + "]" + randomRun(rng, 2))
		default:
			b.WriteString(randomRun(rng, 4))
		}
	}
	return b.String()
}

func randomPath(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(5); n >= 0; n-- {
		b.WriteByte('/')
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b.WriteString(string([]rune("ab.-_]^\\[!*?é\n")[rng.IntN(14)]))
		}
	}
	return b.String()
}

func randomRun(rng *rand.Rand, max int) string {
	r := []rune(globAlphabet)
	var b strings.Builder
	for n := 1 + rng.IntN(max); n > 0; n-- {
		c := r[rng.IntN(len(r))]
		if c == '/' {
			c = 'a'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FuzzGlobRule: for any glob and path, the rendered rule agrees with
// policyengine (see checkAgreement).
func FuzzGlobRule(f *testing.F) {
	f.Add("/ws/*.csv", "/ws/a.csv")
	f.Add("/ws/**/[!x]y", "/ws/a/b/zy")
	f.Add(`/ws/[\]\-\\^]x`, `/ws/\x`)
	f.Add("/a/**/b/**", "/a/b")
	f.Fuzz(func(t *testing.T, glob, p string) {
		checkAgreement(t, glob, p)
	})
}

// FuzzRender: any path as a read, write and exec grant gives a profile
// that is well-formed, keeps its structure, and carries the path intact;
// or a clear ErrBadPath.
func FuzzRender(f *testing.F) {
	for _, n := range hostileNames {
		f.Add(n, false)
	}
	f.Fuzz(func(t *testing.T, name string, inline bool) {
		if strings.Contains(name, "/") {
			return
		}
		dir := "/Users/u/" + name
		if _, err := policyengine.CompileGlob(globEscape(dir) + "/data/**"); err != nil {
			return // a name the glob syntax cannot spell ("..", "")
		}
		prof, err := Render(hostilePerms(dir), Options{ProxyPort: 3128, Inline: inline, TmpDir: "/private/tmp/t", Programs: []string{dir + "/real"}})
		if err != nil {
			if !strings.Contains(err.Error(), ErrBadPath.Error()) {
				t.Fatalf("%q: %v", name, err)
			}
			return
		}
		forms, err := checkProfile(prof.Text)
		if err != nil {
			t.Fatalf("%q: %v\n%s", name, err, prof.Text)
		}
		values := allStrings(forms)
		for _, p := range prof.Params {
			values = append(values, p.Value)
		}
		found := false
		for _, v := range values {
			found = found || v == dir+"/data"
		}
		if !found {
			t.Fatalf("%q: the grant is not intact in %q", name, values)
		}
	})
}
