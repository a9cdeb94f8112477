package agentpolicy

import (
	"encoding/json"
	"slices"
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
	f.Add("url_policy: {allow: ['https://a.example/*']}\n")
	f.Add(`{"url_policy": {"default": "allow"}, "url": {}}`)
	f.Add("permissions:\n  allow: [{tool: skill_load, skill_name: web-fetch}, {command_glob: \"git commit -m 'a b'\"}]\n")
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

// FuzzRememberRules: what remember stores for a line is exact rules only
// (no wildcard), each the text of one of the line's commands, and they
// allow the line.
func FuzzRememberRules(f *testing.F) {
	for _, s := range []string{
		"npm run lint", "git --no-pager push origin main", `git commit -m "it's"`, "FOO='a b' make",
		"npm test 2>&1 | tail -20", "cd sub && npm ci", "sudo apt update", "make $TARGET", "cat x.py | python3",
		"npm test > out.txt", `g'i't push`, "make 'a\\b'", "a &>> /dev/null", "if true; then make; fi",
		"x=1 y='2 3' ./run --flag=\"a b\"; true || false\nls -la",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rules, err := RememberRules(line)
		if err != nil {
			return
		}
		segs, _ := segments(line)
		var texts []string
		for _, s := range segs {
			texts = append(texts, globLiteral(s.qtext))
		}
		for _, r := range rules {
			if r.Command != "" || r.Tool != "" || r.SkillName != "" || compileGlob(r.CommandGlob).wild() {
				t.Fatalf("%q: stored %s, not an exact rule", line, r)
			}
			if !slices.Contains(texts, r.CommandGlob) {
				t.Fatalf("%q: stored %s, which is none of its commands %q", line, r, texts)
			}
		}
		e, err := New(Stack{{Name: "project", Source: "fuzz", Policy: &Policy{Permissions: Rules{Allow: rules}}}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d := e.CheckExec(line); d.Action != policyengine.Allow {
			t.Fatalf("%q: stored %v, which do not allow it: %s", line, rules, d.Reason)
		}
	})
}

// FuzzRememberExact: a rule remember stores for one line matches a
// command of another line only when that command has the same
// assignments and words, none of them an expansion: quoting cannot
// stretch a stored rule.
func FuzzRememberExact(f *testing.F) {
	f.Add("npm run lint", "npm 'run lint'")
	f.Add("git commit -m 'fix bug'", "git commit -m fix bug")
	f.Add("FOO='a b' make", "'FOO=a b' make")
	f.Add(`git commit -m "it's"`, `git commit -m it\'s`)
	f.Add("make x", "make $X")
	f.Fuzz(func(t *testing.T, remembered, other string) {
		rules, err := RememberRules(remembered)
		if err != nil || len(rules) == 0 {
			return
		}
		want, _ := segments(remembered)
		segs, err := segments(other)
		if err != nil {
			return
		}
		for i := range segs {
			s := &segs[i]
			for _, r := range rules {
				cr := compiledRule{Rule: r, glob: compileGlob(r.CommandGlob)}
				if !cr.matches("bash", s, other, nil, false) {
					continue
				}
				same := len(s.expanding) == 0 && slices.ContainsFunc(want, func(w segment) bool { return slices.Equal(w.awords, s.awords) && w.assigns == s.assigns })
				if !same {
					t.Fatalf("%s, remembered for %q, matches %q of %q", r, remembered, s.awords, other)
				}
			}
		}
	})
}
