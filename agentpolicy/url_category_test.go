package agentpolicy

import (
	"testing"

	"corral.dev/corral/policyengine"
)

// categoryURLs are URLs whose host is in an address category, however it
// is written: the tricks SSRF payloads use.
var categoryURLs = []struct {
	url string
	cat policyengine.Category
}{
	{"http://127.0.0.1/", policyengine.CatLoopback},
	{"http://127.1/", policyengine.CatLoopback},
	{"http://2130706433/", policyengine.CatLoopback},
	{"http://0x7f000001/", policyengine.CatLoopback},
	{"http://0x7f.1/", policyengine.CatLoopback},
	{"http://0177.0.0.1/", policyengine.CatLoopback},
	{"http://0/", policyengine.CatLoopback},
	{"http://[::1]/", policyengine.CatLoopback},
	{"http://[::ffff:127.0.0.1]/", policyengine.CatLoopback},
	{"http://[0:0:0:0:0:ffff:7f00:1]:8080/", policyengine.CatLoopback},
	{"http://localhost/", policyengine.CatLoopback},
	{"http://LOCALHOST./", policyengine.CatLoopback},
	{"http://app.localhost:3000/", policyengine.CatLoopback},
	{"http://%31%32%37.0.0.1/", policyengine.CatLoopback},
	{"http://%6c%6f%63%61%6c%68%6f%73%74/", policyengine.CatLoopback},
	{"http://evil.com@127.0.0.1/", policyengine.CatLoopback},
	{"http://www.example.com@127.0.0.1:8080/x", policyengine.CatLoopback},
	{"http://user:pass@[::1]/", policyengine.CatLoopback},
	{"http://169.254.169.254/latest/meta-data/", policyengine.CatMetadata},
	{"http://0xa9fea9fe/", policyengine.CatMetadata},
	{"http://2852039166/", policyengine.CatMetadata},
	{"http://[::ffff:169.254.169.254]/", policyengine.CatMetadata},
	{"http://metadata.google.internal/computeMetadata/v1/", policyengine.CatMetadata},
	{"http://METADATA.GOOGLE.INTERNAL./", policyengine.CatMetadata},
	{"http://[fd00:ec2::254]/", policyengine.CatMetadata},
	{"http://a.example.com@169.254.169.254/", policyengine.CatMetadata},
	{"http://10.0.0.1/", policyengine.CatPrivate},
	{"http://012.0.0.1/", policyengine.CatPrivate},
	{"http://192.168.1.1/", policyengine.CatPrivate},
	{"http://192.168.257/", policyengine.CatPrivate},
	{"http://172.16.0.1/", policyengine.CatPrivate},
	{"http://100.64.0.1/", policyengine.CatPrivate},
	{"http://[fd12:3456::1]/", policyengine.CatPrivate},
	{"https://[::ffff:10.0.0.1]:8443/", policyengine.CatPrivate},
	{"http://169.254.1.1/", policyengine.CatLinkLocal},
	{"http://[fe80::1]/", policyengine.CatLinkLocal},
	{"http://[fe80::1%25eth0]/", policyengine.CatLinkLocal},
}

// TestURLPresetCategories: a preset:<category> rule matches a host of that
// category in every spelling, and no preset of another category does.
func TestURLPresetCategories(t *testing.T) {
	for _, tt := range categoryURLs {
		t.Run(tt.url, func(t *testing.T) {
			for _, c := range policyengine.Categories() {
				rule := "preset:" + string(c)
				d := urlPolicy(t, URLPolicy{Default: "allow", Deny: []string{rule}}).CheckURL(tt.url)
				want := policyengine.Allow
				wantRule := "url.default: allow"
				if c == tt.cat {
					want, wantRule = policyengine.Deny, "url.deny: "+rule
				}
				wantDecision(t, rule, d, want, wantRule, projectLabel)
			}
			// And a preset in allow_override lets it through a default deny.
			rule := "preset:" + string(tt.cat)
			d := urlPolicy(t, URLPolicy{AllowOverride: []string{rule}}).CheckURL(tt.url)
			wantDecision(t, "allow_override "+rule, d, policyengine.Allow, "url.allow_override: "+rule, projectLabel)
		})
	}
}

// TestURLPresetPublic: public hosts match no preset.
func TestURLPresetPublic(t *testing.T) {
	var presets []string
	for _, c := range policyengine.Categories() {
		presets = append(presets, "preset:"+string(c))
	}
	e := urlPolicy(t, URLPolicy{Default: "allow", DenyOverride: presets})
	for _, u := range []string{"https://example.com/", "http://93.184.216.34/", "http://[2606:4700::1111]/", "http://8.8.8.8/", "https://xn--bcher-kva.example/", "http://127.0.0.1.nip.io/"} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Allow, "url.default: allow", projectLabel)
	}
}

// TestURLGlobNeverMatchesCategoryTricks: a host glob for a domain does not
// match a category host written to look like it.
func TestURLGlobNeverMatchesCategoryTricks(t *testing.T) {
	e := urlPolicy(t, URLPolicy{Default: "deny", Allow: []string{"https://*.example.com/*", "http://*.example.com/*"}})
	for _, tt := range categoryURLs {
		wantDecision(t, tt.url, e.CheckURL(tt.url), policyengine.Deny, "url.default: deny", projectLabel)
	}
	for _, u := range []string{
		"http://127.0.0.1.example.com.evil.net/",
		"https://example.com/",           // the apex is not a subdomain
		"https://badexample.com/",        // nor a name ending in it
		"https://www.example.com.evil/",  // nor a longer name
		"https://www.example.com:8443/x", // a port the rule does not write
	} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Deny, "url.default: deny", projectLabel)
	}
	// The fragment is dropped, so this is www.example.com, not 127.0.0.1.
	wantDecision(t, "fragment", e.CheckURL("http://www.example.com#@127.0.0.1/"), policyengine.Allow, "url.allow: http://*.example.com/*", projectLabel)
	for _, u := range []string{"https://api.example.com/", "http://a.b.example.com/x?y=1", "https://WWW.Example.COM/"} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Allow, "-", projectLabel)
	}
}

// TestURLGlobStarCrossesIntoHost guards a fixed bug: '*' matches across '/', so
// the host wildcard of "https://*.example.com/*" is satisfied by text in the
// path or query, and the rule allows loopback, metadata and any host.
func TestURLGlobStarCrossesIntoHost(t *testing.T) {
	e := urlPolicy(t, URLPolicy{Default: "deny", Allow: []string{"https://*.example.com/*"}})
	for _, u := range []string{
		"https://127.0.0.1/a.example.com/",
		"https://169.254.169.254/latest/x.example.com/",
		"https://evil.com/?q=.example.com/",
		"https://evil.com/.example.com/",
	} {
		wantDecision(t, u, e.CheckURL(u), policyengine.Deny, "url.default: deny", projectLabel)
	}
}

// TestURLUnparseableHost: hosts that are neither an IP address nor a DNS
// name are refused by the URL parser, before any rule: they are denied
// even where preset:unparseable is allowed (fail closed), and the rule
// matches the category when it is given one.
func TestURLUnparseableHost(t *testing.T) {
	for _, u := range []string{"http://1.2.3.4.5/", "http://999.1.1.1/", "http://0x100000000/", "http://exa mple.com/", "http://a..b/", "http://%zz/", "http://%2531%2532%2537.0.0.1/"} {
		for _, pol := range []URLPolicy{
			{Default: "allow"},
			{Default: "deny", AllowOverride: []string{"preset:unparseable"}},
		} {
			d := urlPolicy(t, pol).CheckURL(u)
			wantDecision(t, u, d, policyengine.Deny, "", "")
		}
	}
	r, err := compileURLRule("preset:unparseable")
	if err != nil {
		t.Fatal(err)
	}
	u := policyengine.URL{Scheme: "http", Host: "x", Port: 80, Path: "/", Category: policyengine.CatUnparseable}
	if !r.match(u, CanonicalURL(u)) {
		t.Error("preset:unparseable does not match a URL of that category")
	}
	u.Category = policyengine.CatNone
	if r.match(u, CanonicalURL(u)) {
		t.Error("preset:unparseable matches a public URL")
	}
}
