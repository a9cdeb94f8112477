package policy

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"corral/policyengine"
)

// urlRule is one compiled URL rule: a preset (an address category) or a
// glob over the canonical URL.
type urlRule struct {
	text   string
	preset policyengine.Category
	glob   []rune // pattern; '*' and '?' are wildcards unless escaped
	escape []bool // escape[i]: glob[i] is literal
}

// compileURLRule parses "preset:<category>" or a URL glob.
func compileURLRule(s string) (urlRule, error) {
	r := urlRule{text: s}
	if name, ok := strings.CutPrefix(s, "preset:"); ok {
		for _, c := range policyengine.Categories() {
			if string(c) == name {
				r.preset = c
				return r, nil
			}
		}
		names := make([]string, 0, 5)
		for _, c := range policyengine.Categories() {
			names = append(names, string(c))
		}
		return r, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(names, ", "))
	}
	if s == "" {
		return r, fmt.Errorf("empty URL rule")
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		if rs[i] == '\\' && i+1 < len(rs) && (rs[i+1] == '*' || rs[i+1] == '?' || rs[i+1] == '\\') {
			r.glob, r.escape = append(r.glob, rs[i+1]), append(r.escape, true)
			i++
			continue
		}
		r.glob, r.escape = append(r.glob, rs[i]), append(r.escape, false)
	}
	return r, nil
}

// match reports whether the rule matches the URL: a preset by the
// category of the URL's host, a glob against its canonical text.
func (r urlRule) match(u policyengine.URL, canonical string) bool {
	if r.preset != policyengine.CatNone {
		return u.Category == r.preset
	}
	return globMatch(r.glob, r.escape, []rune(canonical))
}

// globMatch matches * (any run, also across '/') and ? (one rune).
func globMatch(pat []rune, lit []bool, s []rune) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && !lit[p] && pat[p] == '*':
			star, mark = p, i
			p++
		case p < len(pat) && ((!lit[p] && pat[p] == '?') || pat[p] == s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pat) && !lit[p] && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// CanonicalURL is the text URL rules match: lower-cased scheme and host,
// dot segments resolved, the host percent-decoded and shown as unicode
// (not punycode), the port only when it is not the scheme's default.
func CanonicalURL(u policyengine.URL) string {
	host := u.Host
	if !u.IsIP {
		if uni, err := idna.ToUnicode(host); err == nil {
			host = uni
		}
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://" + host)
	if def := map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}[u.Scheme]; u.Port != def {
		b.WriteString(":" + strconv.Itoa(u.Port))
	}
	b.WriteString(u.Path)
	if u.RawQuery != "" {
		b.WriteString("?" + u.RawQuery)
	}
	return b.String()
}

// compiledURL is a URL policy ready to decide.
type compiledURL struct {
	layer                                    string
	allowByDefault                           bool
	denyOverride, allowOverride, deny, allow []urlRule
}

func compileURL(p *URLPolicy, layer string) compiledURL {
	c := compiledURL{layer: layer, allowByDefault: p.Default == "allow"}
	for _, l := range []struct {
		dst *[]urlRule
		src []string
	}{{&c.denyOverride, p.DenyOverride}, {&c.allowOverride, p.AllowOverride}, {&c.deny, p.Deny}, {&c.allow, p.Allow}} {
		for _, s := range l.src {
			r, _ := compileURLRule(s) // validated when parsed
			*l.dst = append(*l.dst, r)
		}
	}
	return c
}

// decide applies first-match-wins: deny_override, allow_override, deny,
// allow, default.
func (c compiledURL) decide(u policyengine.URL) policyengine.Decision {
	canonical := CanonicalURL(u)
	for _, l := range []struct {
		name   string
		rules  []urlRule
		action policyengine.Action
	}{{"deny_override", c.denyOverride, policyengine.Deny}, {"allow_override", c.allowOverride, policyengine.Allow},
		{"deny", c.deny, policyengine.Deny}, {"allow", c.allow, policyengine.Allow}} {
		for _, r := range l.rules {
			if r.match(u, canonical) {
				verb := "allows"
				if l.action == policyengine.Deny {
					verb = "denies"
				}
				return policyengine.Decision{Action: l.action, Rule: "url." + l.name + ": " + r.text, Layer: c.layer,
					Reason: fmt.Sprintf("%s: the %s policy's url.%s rule %q %s it", canonical, c.layer, l.name, r.text, verb)}
			}
		}
	}
	if c.allowByDefault {
		return policyengine.Decision{Action: policyengine.Allow, Rule: "url.default: allow", Layer: c.layer,
			Reason: fmt.Sprintf("%s: no URL rule of the %s policy matches; its default allows", canonical, c.layer)}
	}
	return policyengine.Decision{Action: policyengine.Deny, Rule: "url.default: deny", Layer: c.layer,
		Reason: fmt.Sprintf("%s: no URL rule of the %s policy matches and its default denies; to allow it, add a url.allow rule such as %q", canonical, c.layer, canonical)}
}
