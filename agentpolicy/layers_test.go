package agentpolicy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// stack loads the three layers (an empty string skips one) and compiles
// them with testVars.
func stack(t *testing.T, global, project, invocation string) (*Evaluator, string, string) {
	t.Helper()
	dir := t.TempDir()
	g, p := filepath.Join(dir, "absent-global.yaml"), ""
	if global != "" {
		g = writeFile(t, dir, "global.yaml", global)
	}
	if project != "" {
		p = writeFile(t, dir, "project.yaml", project)
	}
	s, err := LoadStack(g, p, invocation)
	if err != nil {
		t.Fatalf("LoadStack: %v", err)
	}
	e, err := New(s, Options{Vars: testVars})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e, "global (" + g + ")", "project (" + p + ")"
}

const invocationLabel = "invocation (--policy-json)"

// TestLayersURLReplaced: the highest layer that sets url replaces the
// lower ones whole; a layer without url leaves the lower one in force.
func TestLayersURLReplaced(t *testing.T) {
	const global = "url:\n  default: allow\n  deny: ['https://evil.example/*']\n  deny_override: [preset:cloud_metadata]\n"
	const projectAllows = "url:\n  default: allow\n"
	const projectNoURL = "permissions:\n  allow: [{command: make}]\n"
	const invocation = `{"url": {"default": "deny", "allow": ["https://evil.example/ok"]}}`

	// Global alone: its deny rule applies.
	e, gl, _ := stack(t, global, "", "")
	wantDecision(t, "global only", e.CheckURL("https://evil.example/x"), policyengine.Deny, "url.deny: https://evil.example/*", gl)

	// A project url replaces it whole: neither the deny rule nor the
	// deny_override of the global layer applies any more.
	e, _, pl := stack(t, global, projectAllows, "")
	wantDecision(t, "project url", e.CheckURL("https://evil.example/x"), policyengine.Allow, "url.default: allow", pl)
	wantDecision(t, "project url", e.CheckURL("http://169.254.169.254/"), policyengine.Allow, "url.default: allow", pl)

	// A project without url leaves the global one in force.
	e, gl, _ = stack(t, global, projectNoURL, "")
	wantDecision(t, "project without url", e.CheckURL("https://evil.example/x"), policyengine.Deny, "url.deny: https://evil.example/*", gl)
	wantDecision(t, "project without url", e.CheckURL("https://fine.example/"), policyengine.Allow, "url.default: allow", gl)

	// The invocation replaces both.
	e, _, _ = stack(t, global, projectAllows, invocation)
	wantDecision(t, "invocation", e.CheckURL("https://evil.example/ok"), policyengine.Allow, "url.allow: https://evil.example/ok", invocationLabel)
	wantDecision(t, "invocation", e.CheckURL("https://fine.example/"), policyengine.Deny, "url.default: deny", invocationLabel)

	// An empty url object still replaces: absent default is deny.
	e, _, pl = stack(t, global, "url: {}\n", "")
	wantDecision(t, "empty url", e.CheckURL("https://fine.example/"), policyengine.Deny, "url.default: deny", pl)
}

// TestLayersRulesConcatenate: permissions rules of every layer apply;
// a deny in any layer beats an allow in any other.
func TestLayersRulesConcatenate(t *testing.T) {
	const global = "permissions:\n  allow: [{command: make}]\n  deny: [{command: git push}, {tool: web_fetch}]\n"
	const project = "permissions:\n  allow: [{command: git push}, {command: npm test}, {tool: web_fetch}]\n"
	const invocation = `{"permissions": {"allow": [{"command": "go test"}], "deny": [{"command": "make"}]}}`

	e, gl, _ := stack(t, global, project, "")
	wantDecision(t, "global deny, project allow", e.CheckExec("git push origin"), policyengine.Deny, "permissions.deny {command: git push}", gl)
	wantDecision(t, "global tool deny", e.CheckTool("web_fetch", ""), policyengine.Deny, "permissions.deny {tool: web_fetch}", gl)
	wantDecision(t, "global allow", e.CheckExec("make all"), policyengine.Allow, "-", "-")
	wantDecision(t, "project allow", e.CheckExec("npm test"), policyengine.Allow, "-", "-")
	wantDecision(t, "both layers' allows", e.CheckExec("make && npm test"), policyengine.Allow, "-", "-")
	wantDecision(t, "no layer", e.CheckExec("go test ./..."), policyengine.Confirm, "", "")

	e, _, _ = stack(t, global, project, invocation)
	wantDecision(t, "invocation allow", e.CheckExec("go test ./..."), policyengine.Allow, "-", "-")
	wantDecision(t, "invocation deny beats global allow", e.CheckExec("make all"), policyengine.Deny, "permissions.deny {command: make}", invocationLabel)
	wantDecision(t, "global deny still", e.CheckExec("git push"), policyengine.Deny, "permissions.deny {command: git push}", "-")
}

// TestLayersCapsAll: every layer's caps apply; the narrowest decides.
func TestLayersCapsAll(t *testing.T) {
	const global = "caps:\n  network: ['*.example.com:443']\n  fs:\n    write: ['$WORK_DIR/**']\n"
	const project = "caps:\n  network: ['api.example.com:443', 'other.net:443']\n"
	const invocation = `{"caps": {"fs": {"write": ["$WORK_DIR/out/**"]}}}`
	e, gl, pl := stack(t, global, project, invocation)
	for _, tt := range []struct {
		host   string
		action policyengine.Action
		layer  string
	}{
		{"api.example.com", policyengine.Allow, ""},
		{"www.example.com", policyengine.Deny, pl},
		{"other.net", policyengine.Deny, gl},
		{"evil.net", policyengine.Deny, gl},
	} {
		d := e.CheckNetwork(tt.host, 443)
		wantDecision(t, tt.host, d, tt.action, "-", tt.layer)
		if tt.action == policyengine.Deny {
			wantContains(t, "reason", d.Reason, "the "+tt.layer+" policy's caps")
		}
	}
	wantDecision(t, "write in both", e.CheckWrite("/work/out/a"), policyengine.Allow, "-", "")
	wantDecision(t, "write in global only", e.CheckWrite("/work/a"), policyengine.Deny, "", invocationLabel)
	wantDecision(t, "write in none", e.CheckWrite("/etc/a"), policyengine.Deny, "", gl)
}

// TestLoadStackFiles: which files are required, skipped or wrong.
func TestLoadStackFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "version: 1\n")
	bad := writeFile(t, dir, "bad.yaml", "version: 1\nbogus: 2\n")
	missing := filepath.Join(dir, "missing.yaml")

	s, err := LoadStack(missing, good, "")
	if err != nil || len(s) != 1 || s[0].Name != "project" || s[0].Source != good {
		t.Errorf("missing global: %v, %v; want only the project layer", s, err)
	}
	s, err = LoadStack("", "", "")
	if err != nil || len(s) != 0 {
		t.Errorf("nothing: %v, %v", s, err)
	}
	s, err = LoadStack(good, good, `{"version": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range s {
		names = append(names, l.Name+"="+l.Source)
	}
	if got, want := strings.Join(names, " "), "global="+good+" project="+good+" invocation=--policy-json"; got != want {
		t.Errorf("layers %q, want %q", got, want)
	}

	if _, err := LoadStack("", missing, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing project: %v, want an error wrapping fs.ErrNotExist", err)
	}
	if _, err := LoadStack(bad, "", ""); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad global: %v, want an error naming it", err)
	}
	if _, err := LoadStack("", bad, ""); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad project: %v, want an error naming the key", err)
	}
}

// TestLoadStackInvocation: the invocation layer must be a JSON object.
func TestLoadStackInvocation(t *testing.T) {
	for _, tt := range []struct {
		in     string
		layers int
		err    string
	}{
		{"", 0, ""},
		{"  \n", 0, ""},
		{"{}", 1, ""},
		{` {"url": {"default": "allow"}} `, 1, ""},
		{"[]", 0, "want a JSON object"},
		{"null", 0, "want a JSON object"},
		{"1", 0, "want a JSON object"},
		{`"x"`, 0, "want a JSON object"},
		{"version: 1", 0, "want a JSON object"},
		{"{", 0, "--policy-json"},
		{`{"bogus": 1}`, 0, "bogus"},
		{`{"url": {"deny": ["preset:nope"]}}`, 0, "unknown preset"},
		{`{"version": 1} {"version": 1}`, 0, "--policy-json"},
	} {
		s, err := LoadStack("", "", tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one containing %q", tt.in, err, tt.err)
		case err == nil && len(s) != tt.layers:
			t.Errorf("%q: %d layers, want %d", tt.in, len(s), tt.layers)
		}
	}
}

// TestLoadStackGlobalUnreadable guards a fixed bug: the global file is skipped
// whenever os.Stat fails, not only when it does not exist, so a global
// policy that exists but cannot be read (a symlink loop here; a directory
// without search permission for a non-root user) is silently ignored:
// the operator's policy fails open.
func TestLoadStackGlobalUnreadable(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "policy.yaml")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadStack(loop, "", ""); err == nil {
		t.Errorf("global policy in a symlink loop: %d layers and no error", len(s))
	}
}

// TestGlobalFile: $XDG_CONFIG_HOME when absolute, else ~/.config.
func TestGlobalFile(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if got := GlobalFile(); got != "/cfg/corral/policy.yaml" {
		t.Errorf("with XDG_CONFIG_HOME: %q", got)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative")
	if got := GlobalFile(); got != "/home/u/.config/corral/policy.yaml" {
		t.Errorf("with a relative XDG_CONFIG_HOME: %q", got)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	if got := GlobalFile(); got != "" {
		t.Errorf("without HOME: %q", got)
	}
}

// TestLayersSummary: Layers describes each layer lowest first, and
// URLLayer names the one whose URL policy is in force.
func TestLayersSummary(t *testing.T) {
	e, gl, pl := stack(t, "url: {deny: [preset:loopback]}\n", "permissions:\n  allow: [{command: make}]\n  deny: [{tool: x}]\ncaps: {}\n", "{}")
	got := e.Layers()
	want := []LayerInfo{
		{Name: "global", Source: strings.TrimSuffix(strings.TrimPrefix(gl, "global ("), ")"), Summary: "URL policy (default deny, 0 allow, 1 deny, 0 allow_override, 0 deny_override)"},
		{Name: "project", Source: strings.TrimSuffix(strings.TrimPrefix(pl, "project ("), ")"), Summary: "1 allow and 1 deny tool/command rules; caps"},
		{Name: "invocation", Source: "--policy-json", Summary: "empty"},
	}
	if len(got) != len(want) {
		t.Fatalf("Layers() = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("layer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if u := e.URLLayer(); u != gl {
		t.Errorf("URLLayer() = %q, want %q", u, gl)
	}
	e, _, _ = stack(t, "", "version: 1\n", "")
	if u := e.URLLayer(); u != "" {
		t.Errorf("no url: URLLayer() = %q", u)
	}
}
