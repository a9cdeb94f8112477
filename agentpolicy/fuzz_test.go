package agentpolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"corral.dev/corral/policyengine"
)

// FuzzCanonicalURL: the canonical text of a URL parses back to the same
// text, and to the same category, so a rule sees one spelling per URL.
func FuzzCanonicalURL(f *testing.F) {
	for _, tt := range categoryURLs {
		f.Add(tt.url)
	}
	for _, s := range []string{
		"https://xn--bcher-kva.example:8443/a/%2e%2e/b?x=1", "HTTP://[::FFFF:7F00:1]/a/./b",
		"wss://%65xample.com/feed", "https://ü.example/", "http://a.b/c?d#e", "ftp://x:21/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := policyengine.ParseURL(raw)
		if err != nil {
			return
		}
		if strings.Contains("."+u.Host+".", ".xn--.") {
		}
		c := CanonicalURL(u)
		v, err := policyengine.ParseURL(c)
		if err != nil {
			t.Fatalf("%q: canonical %q does not parse: %v", raw, c, err)
		}
		if c2 := CanonicalURL(v); c2 != c {
			t.Fatalf("%q: canonical %q, then %q", raw, c, c2)
		}
		if v.Category != u.Category {
			t.Fatalf("%q: category %q, canonical %q has %q", raw, u.Category, c, v.Category)
		}
	})
}

// FuzzParse: Parse never panics; what it accepts compiles and survives a
// JSON round trip.
func FuzzParse(f *testing.F) {
	f.Add(fullYAML)
	f.Add(fullJSON)
	f.Add(existingPolicy)
	f.Add(capsPolicy)
	f.Add("url: {deny: ['preset:loopback']}\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("fuzz.yaml", []byte(src))
		if err != nil {
			return
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("fuzz.json", data)
		if err != nil {
			t.Fatalf("%q parses, its JSON %s does not: %v", src, data, err)
		}
		// Compared as JSON: an empty list and an absent one are the same.
		if again, _ := json.Marshal(back); string(again) != string(data) {
			t.Fatalf("%q: JSON %s, round trip %s", src, data, again)
		}
		if _, err := New(Stack{{Name: "project", Source: "fuzz", Policy: p}}, Options{Vars: testVars}); err != nil &&
			!strings.Contains(err.Error(), "glob") { // TestParseCapsGlobs
			t.Fatalf("%q parses but does not compile: %v", src, err)
		}
	})
}

// FuzzURLGlob: a glob without wildcards matches exactly its own text, and
// "*" + s + "*" matches every text holding s. Globs match runes, so
// invalid UTF-8 (every bad byte reads as U+FFFD) is left out: canonical
// URLs are valid UTF-8.
func FuzzURLGlob(f *testing.F) {
	f.Add("https://example.com/a", "https://example.com/a")
	f.Add(`a\*b`, "xa*by")
	f.Fuzz(func(t *testing.T, lit, text string) {
		if strings.ContainsAny(lit, `*?\`) || lit == "" || strings.HasPrefix(lit, "preset:") || !utf8.ValidString(lit) || !utf8.ValidString(text) {
			return
		}
		g := compileGlob(lit)
		if got, want := g.match(text), lit == text; got != want {
			t.Fatalf("%q vs %q: %v, want %v", lit, text, got, want)
		}
		g = compileGlob("*" + lit + "*")
		if got, want := g.match(text), strings.Contains(text, lit); got != want {
			t.Fatalf("*%q* vs %q: %v, want %v", lit, text, got, want)
		}
	})
}
