package agentpolicy

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"corral.dev/corral/internal/glob"
	"corral.dev/corral/policyengine"
)

// urlRule is one compiled URL rule: a preset (an address category) or a
// glob over the canonical URL, in three parts matched separately so that
// a wildcard in the host cannot reach into the path, and one in the path
// cannot stand for a host.
type urlRule struct {
	text   string
	preset policyengine.Category
	scheme pattern
	host   pattern // host[:port], canonical (lower case, unicode, default port dropped)
	path   pattern // path and query; empty rule path matches every path
	any    bool    // the rule has no path part
}

// pattern is a glob of URL rules and command_glob: '*' (any run, also
// across "/") and '?' (one character) are wildcards unless escaped with a
// backslash ("\*", "\?", "\\"); matched by the glob core one
// character at a time.
type pattern struct {
	src  string // as written
	toks []glob.Token
}

func (p pattern) match(s string) bool { return glob.Match(p.toks, s, true) }

func (p pattern) wild() bool { return glob.Wild(p.toks) }

func compileGlob(s string) pattern {
	p := pattern{src: s}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			p.toks = append(p.toks, glob.Token{Kind: glob.Literal, Text: string(lit)})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && (s[i+1] == '*' || s[i+1] == '?' || s[i+1] == '\\'):
			lit = append(lit, s[i+1])
			i++
		case c == '*':
			flush()
			p.toks = append(p.toks, glob.Token{Kind: glob.Star})
		case c == '?':
			flush()
			p.toks = append(p.toks, glob.Token{Kind: glob.AnyChar})
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return p
}

// compileURLRule parses "preset:<category>" or a URL glob
// "SCHEME://HOST[:PORT][/PATH]", canonicalising its scheme and host the
// way URLs are (lower case, unicode for punycode, no default port).
func compileURLRule(s string) (urlRule, error) {
	r := urlRule{text: s}
	if len(s) >= 7 && strings.EqualFold(s[:7], "preset:") {
		name := strings.ToLower(s[7:])
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
		return r, fmt.Errorf("unknown preset %q (known: %s)", s[7:], strings.Join(names, ", "))
	}
	if s == "" {
		return r, fmt.Errorf("empty URL rule")
	}
	if s == "*" {
		r.scheme, r.host, r.any = compileGlob("*"), compileGlob("*"), true
		return r, nil
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return r, fmt.Errorf("URL rule %q: write SCHEME://HOST/PATH (such as https://api.example.com/*) or preset:CATEGORY", s)
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	} else {
		r.any = true
	}
	if host == "" {
		return r, fmt.Errorf("URL rule %q: no host (use * for any host)", s)
	}
	scheme = strings.ToLower(scheme)
	host = canonicalRuleHost(scheme, host)
	r.scheme, r.host, r.path = compileGlob(scheme), compileGlob(host), compileGlob(path)
	r.path.normalizeEscapes()
	return r, nil
}

// canonicalRuleHost writes a rule's host part as CanonicalURL writes hosts.
func canonicalRuleHost(scheme, host string) string {
	h, port := host, ""
	if strings.HasPrefix(h, "[") {
		if i := strings.Index(h, "]"); i >= 0 {
			h, port = h[:i+1], strings.TrimPrefix(h[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h, port = h[:i], h[i+1:]
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	h = unicodeHost(h)
	if port != "" && port != strconv.Itoa(defaultPorts[scheme]) {
		return h + ":" + port
	}
	return h
}

var defaultPorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

// unicodeHost shows punycode labels as unicode, keeping any label that does
// not convert back to itself (so no label can vanish, as "xn--" would).
func unicodeHost(h string) string {
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if !strings.HasPrefix(l, "xn--") {
			continue
		}
		u, err := idna.ToUnicode(l)
		if err != nil || u == "" {
			continue
		}
		if back, err := idna.ToASCII(u); err == nil && back == l {
			labels[i] = u
		}
	}
	// The whole name must map back as the URL parser maps it: a name
	// whose other labels the lookup profile refuses ("xn--00c.-") stays
	// in ASCII, the form it was accepted in.
	out := strings.Join(labels, ".")
	if out != h {
		if back, err := idna.Lookup.ToASCII(out); err != nil || back != h {
			return h
		}
	}
	return out
}

// match reports whether the rule matches the URL: a preset by the
// category of the URL's host, a glob part by part. A wildcard host never
// matches a host in a category (loopback, private, metadata...), as host
// patterns never grant those: only a preset or the literal address does.
func (r urlRule) match(u policyengine.URL, _ string) bool {
	if r.preset != policyengine.CatNone {
		return u.Category == r.preset
	}
	host, path := canonicalParts(u)
	if !r.scheme.match(u.Scheme) || !hostMatch(r.host, host) {
		return false
	}
	if r.host.wild() && u.Category != policyengine.CatNone {
		return false
	}
	return r.any || r.path.match(path)
}

// hostMatch matches a host glob where wildcards stay within the host:
// they never match '/', '?', '#' or '@'.
func hostMatch(g pattern, host string) bool {
	if strings.ContainsAny(host, "/?#@") {
		return false
	}
	return g.match(host)
}

// CanonicalURL is the text URL rules match: lower-cased scheme and host,
// the host percent-decoded and shown as unicode (not punycode), the port
// only when it is not the scheme's default, the path's canonical reading
// (policyengine.PathReadings: dot segments resolved, repeated slashes
// merged) and percent-encoded unreserved characters of the path and query
// decoded.
func CanonicalURL(u policyengine.URL) string {
	host, path := canonicalParts(u)
	return u.Scheme + "://" + host + path
}

// canonicalParts are the canonical host[:port] and path[?query].
func canonicalParts(u policyengine.URL) (host, path string) {
	host = u.Host
	if !u.IsIP {
		host = unicodeHost(host)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if u.Port != defaultPorts[u.Scheme] {
		host += ":" + strconv.Itoa(u.Port)
	}
	path = u.Readings().Canonical
	if u.RawQuery != "" {
		path += "?" + policyengine.NormalizeEscapes(u.RawQuery)
	}
	return host, path
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

// decideTunnel decides a CONNECT tunnel to u's host, whose paths the proxy
// cannot see: a rule applies by scheme and host; a deny rule with a path
// denies the whole tunnel, an allow rule with a path does not allow it.
func (c compiledURL) decideTunnel(u policyengine.URL) policyengine.Decision {
	return c.decideMode(u, true)
}

// allPaths reports whether the rule's path part matches every path.
func (r urlRule) allPaths() bool {
	if r.any {
		return true
	}
	p := r.path.src
	return p == "/*" || p == "*" || p == "/**"
}

func (c compiledURL) decideMode(u policyengine.URL, tunnel bool) policyengine.Decision {
	canonical := CanonicalURL(u)
	if tunnel {
		host, _ := canonicalParts(u)
		canonical = u.Scheme + "://" + host + " (a tunnel: paths unseen)"
	}
	var skipped []string
	for _, l := range []struct {
		name   string
		rules  []urlRule
		action policyengine.Action
	}{{"deny_override", c.denyOverride, policyengine.Deny}, {"allow_override", c.allowOverride, policyengine.Allow},
		{"deny", c.deny, policyengine.Deny}, {"allow", c.allow, policyengine.Allow}} {
		for _, r := range l.rules {
			matched := r.match(u, canonical)
			if !matched && !tunnel && l.action == policyengine.Deny && u.RawQuery != "" && !strings.ContainsRune(r.path.src, '?') {
				// A deny rule about a path denies it whatever query
				// follows: every server serves /admin?a=1 as /admin.
				bare := u
				bare.RawQuery = ""
				matched = r.match(bare, canonical)
			}
			if tunnel && r.preset == policyengine.CatNone {
				host, _ := canonicalParts(u)
				matched = r.scheme.match(u.Scheme) && hostMatch(r.host, host)
				if !matched && l.action == policyengine.Deny {
					// Any protocol can be spoken inside a tunnel, whatever
					// its port suggests: a deny rule applies to it under
					// any scheme (http://api:8080/admin/* denies the
					// tunnel to api:8080); an allow rule only under its
					// own.
					for s := range defaultPorts {
						v := u
						v.Scheme = s
						if h, _ := canonicalParts(v); r.scheme.match(s) && hostMatch(r.host, h) {
							matched = true
						}
					}
				}
				matched = matched && !(r.host.wild() && u.Category != policyengine.CatNone)
				if matched && !r.allPaths() && l.action == policyengine.Allow {
					skipped = append(skipped, r.text)
					matched = false
				}
			}
			if matched {
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
	if len(skipped) > 0 {
		return policyengine.Decision{Action: policyengine.Deny, Rule: "url.default: deny", Layer: c.layer,
			Reason: fmt.Sprintf("%s: the %s policy allows only some paths of this host (%s), and the proxy cannot see paths inside a CONNECT tunnel; to allow the tunnel, add a rule for the whole host such as %q",
				canonical, c.layer, strings.Join(skipped, ", "), u.Scheme+"://"+u.Host+"/*")}
	}
	return policyengine.Decision{Action: policyengine.Deny, Rule: "url.default: deny", Layer: c.layer, Unlisted: u.Category == policyengine.CatNone,
		Reason: fmt.Sprintf("%s: no URL rule of the %s policy matches and its default denies; to allow it, add a url.allow rule such as %q", canonical, c.layer, canonical)}
}
