package seatbelt

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// globEscape writes a literal path as a glob that matches only it.
func globEscape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(`*?[\`, p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// hostilePerms grants dir's data/ (read), out/ and logs/*.txt (write) and
// runs dir/bin/tool, with dir written as a literal (escaped) glob.
func hostilePerms(dir string) policyengine.Permissions {
	d := globEscape(dir)
	return policyengine.Permissions{
		Read:         policyengine.NewEntries("s", []string{d + "/data/**"}),
		Write:        policyengine.NewEntries("s", []string{d + "/out/**", d + "/logs/*.txt"}),
		Exec:         policyengine.NewEntries("s", []string{dir + "/bin/tool", "sh"}),
		Network:      policyengine.NewEntries("s", []string{"*:443"}),
		Declared:     []string{"s"},
		ExecDeclared: []string{"s"},
	}
}

// hostileNames are folder names built to break a profile that pastes
// paths into its text: quotes, parentheses, backslashes before quotes and
// digits (TinyScheme's character codes), newlines and carriage returns,
// comments, reader macros, regular-expression metacharacters, param
// look-alikes, and non-ASCII.
var hostileNames = []string{
	`plain`,
	`a"b`,
	`q") (allow default) ("`,
	`paren)(`,
	`back\slash`,
	`trailing\`,
	`\"`,
	`\\"`,
	`\x41\101\n`,
	"new\nline",
	"new\nline) (allow file-write* (subpath \"/\")) ;",
	"cr\rreturn",
	"tab\there",
	`semi;colon`,
	`#"regex"`,
	`(param "READ_0")`,
	`dot.star*plus+q?`,
	`br[ack]et{s}`,
	`pipe|caret^dollar$`,
	`.*`,
	`^/$`,
	`ünïcödé`,
	"日本語",
	"emoji-😀",
	"zero\u200bwidth",
	"line\u2028sep",
	strings.Repeat("long", 50),
}

// TestHostilePaths renders paths holding every hostile character and
// checks that the profile keeps the benign profile's structure, that each
// path arrives intact (as a parameter value, or as a decoded string
// literal with Inline), and that regular expressions built from it match
// it and nothing near it.
func TestHostilePaths(t *testing.T) {
	benign := map[bool]string{}
	var benignText string
	for _, inline := range []bool{false, true} {
		prof, err := Render(hostilePerms("/Users/u/plain"), Options{ProxyPort: 3128, Inline: inline})
		if err != nil {
			t.Fatal(err)
		}
		forms, err := checkProfile(prof.Text)
		if err != nil {
			t.Fatal(err)
		}
		benign[inline] = shapes(forms)
		benignText += prof.Text
	}
	for _, name := range hostileNames {
		dir := "/Users/u/" + name
		for _, inline := range []bool{false, true} {
			prof, err := Render(hostilePerms(dir), Options{ProxyPort: 3128, Inline: inline})
			if err != nil {
				t.Fatalf("%q inline=%v: %v", name, inline, err)
			}
			forms, err := checkProfile(prof.Text)
			if err != nil {
				t.Fatalf("%q inline=%v: not well-formed: %v\n%s", name, inline, err, prof.Text)
			}
			if got := shapes(forms); got != benign[inline] {
				t.Fatalf("%q inline=%v: the structure changed:\n%s", name, inline, prof.Text)
			}
			values := allStrings(forms)
			if !inline {
				for _, p := range prof.Params {
					values = append(values, p.Value)
				}
				if strings.Contains(stripComments(prof.Text), name) && !strings.Contains(benignText, name) {
					t.Errorf("%q: the path appears in the profile outside comments and parameters", name)
				}
			}
			if !slices.Contains(values, dir+"/data") {
				t.Errorf("%q inline=%v: %q is not granted intact (strings: %q)", name, inline, dir+"/data", values)
			}
			if !slices.Contains(values, dir+"/bin/tool") {
				t.Errorf("%q inline=%v: the exec path is not intact", name, inline)
			}
			// The write glob logs/*.txt is a regular expression: it
			// matches the files in logs, and neither the folder, nor
			// deeper files, nor a look-alike.
			re := findRegex(t, values, "logs")
			for p, want := range map[string]bool{
				dir + "/logs/a.txt": true, dir + "/logs/.txt": true, dir + "/logs/x\ny.txt": true,
				dir + "/logs": false, dir + "/logs/a/b.txt": false, dir + "/logs/a.txtx": false,
				dir + "X/logs/a.txt": false, "/Users/u/" + name + "/../x/logs/a.txt": false,
			} {
				if utf8Valid(p) && re.MatchString(p) != want {
					t.Errorf("%q: regex %q on %q = %v, want %v", name, re, p, !want, want)
				}
			}
		}
	}
}

// stripComments drops ";" comments outside strings.
func stripComments(text string) string {
	var b strings.Builder
	inStr, comment := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
				b.WriteByte(c)
			}
			continue
		case inStr && c == '\\':
			b.WriteByte(c)
			i++
			if i < len(text) {
				b.WriteByte(text[i])
			}
			continue
		case c == '"':
			inStr = !inStr
		case !inStr && c == ';':
			comment = true
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func shapes(forms []node) string {
	var out []string
	for _, f := range forms {
		out = append(out, shape(f))
	}
	return strings.Join(out, "\n")
}

// findRegex compiles the one value that is a regex over a logs/ folder,
// with "." matching newlines as in POSIX expressions.
func findRegex(t *testing.T, values []string, folder string) *regexp.Regexp {
	t.Helper()
	for _, v := range values {
		if strings.HasPrefix(v, "^") && strings.Contains(v, "/"+folder+"/") {
			if !utf8Valid(v) {
				t.Skipf("Go's regexp needs valid UTF-8: %q", v)
			}
			return regexp.MustCompile("(?s)" + v)
		}
	}
	t.Fatalf("no regex for %s in %q", folder, values)
	return nil
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestQuote reads back what quote writes.
func TestQuote(t *testing.T) {
	for _, s := range append(hostileNames, "", `"`, `\`, "\x00x"[1:], "a\\\"b") {
		forms, err := readSBPL("(x " + quote(s) + ")")
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if len(forms) != 1 || len(forms[0].list) != 2 || forms[0].list[1].str != s {
			t.Errorf("%q read back as %+v", s, forms)
		}
	}
}

// TestBadStrings refuses what no Seatbelt string can hold.
func TestBadStrings(t *testing.T) {
	for _, dir := range []string{"/ws/nul\x00byte", "/ws/" + strings.Repeat("x", maxString)} {
		for _, inline := range []bool{false, true} {
			_, err := Render(hostilePerms(dir), Options{ProxyPort: 3128, Inline: inline})
			if !errors.Is(err, ErrBadPath) {
				t.Errorf("%.20q inline=%v: err = %v, want ErrBadPath", dir, inline, err)
			}
		}
	}
	for _, opts := range []Options{{TmpDir: "tmp"}, {Programs: []string{"/a/../b"}}, {RealPaths: map[string]string{"/a": "rel"}}} {
		if _, err := Render(policyengine.Permissions{}, opts); !errors.Is(err, ErrBadPath) {
			t.Errorf("%+v: err = %v, want ErrBadPath", opts, err)
		}
	}
}

// TestNoNetwork: without a network rule the profile allows no outbound
// connection of any kind, whatever else it grants.
func TestNoNetwork(t *testing.T) {
	for _, c := range goldenCases() {
		p := samplePerms(t, c.skills...)
		p.Network = nil
		prof, err := Render(p, Options{ProxyPort: 3128, TmpDir: "/private/tmp/x", Programs: []string{"/usr/bin/curl"}})
		if err != nil {
			t.Fatal(err)
		}
		forms, err := checkProfile(prof.Text)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"network-outbound", "network-bind", "network-inbound", "system-socket"} {
			if r := rules(forms, "allow", op); len(r) > 0 {
				t.Errorf("%s: no network rule, yet %s", c.name, shape(r[0]))
			}
		}
		if strings.Contains(stripComments(prof.Text), "network") {
			t.Errorf("%s: a network operation outside comments:\n%s", c.name, prof.Text)
		}
	}
	// With a rule: the proxy's port on localhost, and nothing else.
	prof, err := Render(samplePerms(t, "web-fetch"), Options{ProxyPort: 41000})
	if err != nil {
		t.Fatal(err)
	}
	forms, _ := checkProfile(prof.Text)
	r := rules(forms, "allow", "network-outbound")
	if len(r) != 1 || shape(r[0]) != "(allow network-outbound (remote ip S))" || !slices.Contains(allStrings(r), "localhost:41000") {
		t.Errorf("network rules = %v", r)
	}
	if _, err := Render(samplePerms(t, "web-fetch"), Options{}); err == nil {
		t.Error("network rules without a proxy port rendered")
	}
}

// TestExecAllowlist: with an exec list only the listed programs run; a
// bare name runs from the PATH folders only, and sh brings the shells
// /bin/sh starts.
func TestExecAllowlist(t *testing.T) {
	prof, err := Render(samplePerms(t, "repo-review"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	forms, _ := checkProfile(prof.Text)
	execRules := rules(forms, "allow", "process-exec")
	if len(execRules) != 1 {
		t.Fatalf("process-exec rules: %v", execRules)
	}
	var git *regexp.Regexp
	for _, p := range prof.Params {
		if strings.HasSuffix(p.Value, "/git$") {
			git = regexp.MustCompile(p.Value)
		}
	}
	if git == nil {
		t.Fatal("no rule for git")
	}
	for p, want := range map[string]bool{
		"/usr/bin/git": true, "/usr/local/bin/git": true, "/Library/Developer/CommandLineTools/usr/bin/git": true,
		"/Users/u/ws/git": false, "/usr/bin/gitx": false, "/usr/bin/xgit": false, "/opt/usr/bin/git": false,
	} {
		if git.MatchString(p) != want {
			t.Errorf("git allowed at %s = %v, want %v", p, !want, want)
		}
	}
	if !slices.Contains(allStrings(execRules), "/bin/bash") {
		t.Error("sh allowed but not the bash /bin/sh starts")
	}
	// Without an exec list, what is readable runs.
	prof, _ = Render(samplePerms(t, "plain"), Options{})
	forms, _ = checkProfile(prof.Text)
	for _, r := range rules(forms, "allow", "process-exec") {
		if !slices.ContainsFunc(r.list[1:], func(n node) bool { return n.str == "file-read*" }) {
			t.Errorf("process-exec without file-read*: %s", shape(r))
		}
	}
}

// TestProtected: the protected names inside a writable root are denied
// after the grant, and only where the glob reaches.
func TestProtected(t *testing.T) {
	p := samplePerms(t, "web-fetch")
	prof, err := Render(p, Options{ProxyPort: 3128, Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	forms, _ := checkProfile(prof.Text)
	deny := rules(forms, "deny", "file-write*")
	if len(deny) == 0 {
		t.Fatal("no protected paths")
	}
	lastAllow := -1
	for i, f := range forms {
		if f.list[0].str == "allow" && slices.ContainsFunc(f.list, func(n node) bool { return n.isAtm && n.str == "file-write*" }) {
			lastAllow = i
		}
	}
	if firstDeny := slices.IndexFunc(forms, func(f node) bool { return shape(f) == shape(deny[0]) }); firstDeny < lastAllow {
		t.Error("a write grant comes after the protected paths' deny (the last match wins)")
	}
	re := regexp.MustCompile(allStrings(deny)[0])
	for path, want := range map[string]bool{
		"/Users/u/ws/.git/hooks": true, "/Users/u/ws/.git/hooks/pre-commit": true, "/Users/u/ws/.git/config": true,
		"/Users/u/ws/.bashrc": true, "/Users/u/ws/.zshenv": true, "/Users/u/ws/.gitconfig": true,
		"/Users/u/ws/.git/modules/lib/hooks/post-checkout": true, "/Users/u/ws/.git/modules/a/b/config": true,
		"/Users/u/ws/.git/objects/ab": false, "/Users/u/ws/src/.bashrc": false, "/Users/u/ws/.bashrcx": false,
		"/Users/u/ws/README": false, "/Users/u/wsx/.bashrc": false,
	} {
		if re.MatchString(path) != want {
			t.Errorf("%s protected = %v, want %v", path, !want, want)
		}
	}
	var pins []node
	for _, r := range rules(forms, "deny", "file-write-unlink") {
		if r.list[1].str == "file-write-unlink" {
			pins = append(pins, r)
		}
	}
	if len(pins) != 1 {
		t.Fatalf("pins: %v", pins)
	}
	pin := regexp.MustCompile(allStrings(pins)[0])
	for path, want := range map[string]bool{
		"/Users/u/ws/.git": true, "/Users/u/ws/.git/modules": true, "/Users/u/ws/.git/modules/lib": true,
		"/Users/u/ws/.git/objects": false, "/Users/u/ws/.gitx": false,
	} {
		if pin.MatchString(path) != want {
			t.Errorf("%s pinned = %v, want %v", path, !want, want)
		}
	}
	// A glob that reaches no protected name protects nothing.
	q := policyengine.Permissions{Write: policyengine.NewEntries("s", []string{"/ws/out/*.csv", "/ws/file"}), Declared: []string{"s"}}
	prof, _ = Render(q, Options{})
	if strings.Contains(prof.Text, "(deny file-write*") {
		t.Errorf("protected paths for a glob that reaches none:\n%s", prof.Text)
	}
}

// TestHiddenRoots: grants of the shared temporary folders, the devices,
// or a folder holding them are dropped with a warning; a folder inside
// one is fine.
func TestHiddenRoots(t *testing.T) {
	for glob, dropped := range map[string]bool{
		"/tmp/**": true, "/private/tmp/**": true, "/var/**": true, "/**": true, "/dev/**": true,
		"/System/**": true, "/System/Volumes/Data/Users/u/**": false, "/tmp/ws/**": false,
		"/var/folders/zz/T/x/**": false, "/Users/u/**": false,
	} {
		p := policyengine.Permissions{Write: policyengine.NewEntries("s", []string{glob}), Declared: []string{"s"}}
		prof, err := Render(p, Options{Inline: true})
		if err != nil {
			t.Fatal(err)
		}
		forms, _ := checkProfile(prof.Text)
		g, _ := policyengine.CompileGlob(glob)
		granted := slices.Contains(allStrings(rules(forms, "allow", "file-write*")), Canonical(g.Base()))
		if granted == dropped || (len(prof.Warnings) > 0) != dropped {
			t.Errorf("%s: granted %v, warnings %q", glob, granted, prof.Warnings)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp": "/private/tmp", "/tmp/x": "/private/tmp/x", "/var/folders/a": "/private/var/folders/a",
		"/etc/hosts": "/private/etc/hosts", "/tmpx": "/tmpx", "/private/tmp": "/private/tmp",
		"/Users/u/tmp": "/Users/u/tmp", "/": "/",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	prof, _ := Render(policyengine.Permissions{Read: policyengine.NewEntries("s", []string{"/tmp/ws/*.txt", "/etc/x/**"}), Declared: []string{"s"}}, Options{Inline: true})
	forms, _ := checkProfile(prof.Text)
	strs := allStrings(forms)
	if !slices.Contains(strs, `^/private/tmp/ws/[^/]*\.txt$`) || !slices.Contains(strs, "/private/etc/x") {
		t.Errorf("not canonical: %q", strs)
	}
}

func TestServices(t *testing.T) {
	for _, c := range []struct {
		entry string
		want  []string // strings the profile must hold
		err   string
	}{
		{"pasteboard:read", []string{"com.apple.pasteboard.1"}, ""},
		{"notifications:send", []string{"com.apple.usernoted.client"}, ""},
		{"trust:full", []string{"com.apple.trustd.agent"}, ""},
		{"preferences:write", []string{"com.apple.cfprefsd.daemon", "/Library/Preferences"}, ""},
		{"camera:read", nil, `"camera" is not a service`},
		{"notifications:read", nil, "takes access send, full"},
	} {
		p := policyengine.Permissions{Services: policyengine.NewEntries("s", []string{c.entry}), Declared: []string{"s"}}
		prof, err := Render(p, Options{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.entry, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.entry, err)
		}
		forms, err := checkProfile(prof.Text)
		if err != nil {
			t.Fatalf("%s: %v", c.entry, err)
		}
		for _, w := range c.want {
			if !slices.Contains(allStrings(forms), w) {
				t.Errorf("%s: no %q in\n%s", c.entry, w, prof.Text)
			}
		}
	}
	if p := (policyengine.Permissions{Services: policyengine.NewEntries("s", []string{"preferences:full"})}); true {
		prof, err := Render(p, Options{})
		if err != nil || !strings.Contains(prof.Text, "(allow user-preference-write)") {
			t.Errorf("full is not every level: %v", err)
		}
	}
}

// TestReaderRefuses: the test's reader itself catches broken structure.
func TestReaderRefuses(t *testing.T) {
	for _, bad := range []string{
		"(version 1)(deny default)(allow file-read* (literal \"a\")",
		"(version 1)(deny default))",
		"(version 1)(deny default)(allow file-read* (literal \"a\\n\"))",
		"(version 1)(deny default)(allow file-read* (regex #\"a\"))",
		"(version 1)(deny default)(allow network*)",
		"(version 1)(deny default)(allow file-read* (literal (param \"a b\")))",
		"(version 1)(deny default)(allow default)",
		"(version 1)(allow file-read*)",
	} {
		if _, err := checkProfile(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
