package agentpolicy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"corral.dev/corral/policyengine"
)

const fullYAML = `# every field
version: 1
url:
  default: deny
  allow: ["https://*.example.com/*", "https://bücher.example/*"]
  deny: ["https://example.com/admin*"]
  allow_override: ["preset:loopback"]
  deny_override: ["preset:cloud_metadata", 'https://x.example/a\*b']
permissions:
  allow:
    - tool: web_fetch
    - command: git status
    - command_glob: "make *"
      skill_name: builder
  deny:
    - command: git push
      tool: bash
caps:
  fs:
    read: ["~/docs/**"]
    write: ["$WORK_DIR/**", "$TMPDIR/**"]
  network: ["*.example.com:443", "preset:loopback:8080"]
  exec: [git, make]
  env: ["AWS_*"]
  limits:
    memory: 512Mi
    pids: 64
    timeout: 10m
`

const fullJSON = `{
  "version": 1,
  "url": {
    "default": "deny",
    "allow": ["https://*.example.com/*", "https://b\u00fccher.example/*"],
    "deny": ["https://example.com/admin*"],
    "allow_override": ["preset:loopback"],
    "deny_override": ["preset:cloud_metadata", "https://x.example/a\\*b"]
  },
  "permissions": {
    "allow": [
      {"tool": "web_fetch"},
      {"command": "git status"},
      {"command_glob": "make *", "skill_name": "builder"}
    ],
    "deny": [{"command": "git push", "tool": "bash"}]
  },
  "caps": {
    "fs": {"read": ["~/docs/**"], "write": ["$WORK_DIR/**", "$TMPDIR/**"]},
    "network": ["*.example.com:443", "preset:loopback:8080"],
    "exec": ["git", "make"],
    "env": ["AWS_*"],
    "limits": {"memory": "512Mi", "pids": 64, "timeout": "10m"}
  }
}`

// TestParseYAMLAndJSON: the two forms decode equal, and survive a round
// trip through encoding/json and through yaml.
func TestParseYAMLAndJSON(t *testing.T) {
	y, j := mustParse(t, fullYAML), mustParse(t, fullJSON)
	if !reflect.DeepEqual(y, j) {
		t.Fatalf("YAML and JSON differ:\n%+v\n%+v", y, j)
	}
	if y.URL.DenyOverride[1] != `https://x.example/a\*b` || y.Caps.Limits.Pids != 64 || y.Permissions.Allow[2].SkillName != "builder" {
		t.Errorf("decoded wrong: %+v", y)
	}
	data, err := json.Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	if back := mustParse(t, string(data)); !reflect.DeepEqual(back, y) {
		t.Errorf("JSON round trip:\n%s\n%+v", data, back)
	}
	data, err = yaml.Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	if back := mustParse(t, string(data)); !reflect.DeepEqual(back, y) {
		t.Errorf("YAML round trip:\n%s\n%+v", data, back)
	}
	// An empty policy round-trips too.
	data, _ = json.Marshal(&Policy{})
	if p := mustParse(t, string(data)); !reflect.DeepEqual(p, &Policy{}) {
		t.Errorf("%s parses to %+v", data, p)
	}
	if p := mustParse(t, "{}"); !reflect.DeepEqual(p, &Policy{}) {
		t.Errorf("{} parses to %+v", p)
	}
	// The decoded policy compiles.
	evaluator(t, []string{"builder"}, Layer{Name: "project", Source: "p", Policy: y})
}

// TestParseErrors: invalid input is an error that says where and what.
func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"unknown top-level key", "version: 1\nurls: {}\n", []string{"test.yaml", "line 2", "urls"}},
		{"unknown url key", "url:\n  default: deny\n  defualt: allow\n", []string{"line 3", "defualt"}},
		{"unknown rule key", "permissions:\n  allow:\n    - tool: x\n      commands: y\n", []string{"line 4", "commands"}},
		{"unknown caps key", "caps:\n  fs:\n    exec: [x]\n", []string{"line 3", "exec"}},
		{"unknown JSON key", "{\n  \"version\": 1,\n  \"bogus\": true\n}", []string{"line 3", "bogus"}},
		{"wrong type version", "version: one\n", []string{"line 1", "one"}},
		{"wrong type list", "url:\n  allow: https://x/\n", []string{"line 2"}},
		{"wrong type rule", "permissions:\n  allow: [ls]\n", []string{"line 2", "ls"}},
		{"wrong type pids", "caps:\n  limits:\n    pids: many\n", []string{"line 3", "many"}},
		{"wrong type JSON", "{\"caps\": {\"network\": \"*:443\"}}", []string{"line 1"}},
		{"top-level list", "- version: 1\n", []string{"line 1"}},
		{"duplicate key", "version: 1\nversion: 1\n", []string{"line 2", "already defined"}},
		{"bad YAML", "url: [\n", []string{"test.yaml"}},
		{"version", "version: 2\n", []string{"version 2", "only version 1"}},
		{"default", "url: {default: maybe}\n", []string{`url.default "maybe"`, "allow or deny"}},
		{"invalid preset", "url: {deny: ['preset:loopbak']}\n", []string{"url.deny", `unknown preset "loopbak"`, "loopback, private_network, link_local, cloud_metadata, unparseable"}},
		{"invalid preset override", "url: {allow_override: ['preset:']}\n", []string{"url.allow_override", "unknown preset"}},
		{"empty URL rule", "url: {allow: ['']}\n", []string{"url.allow", "empty URL rule"}},
		{"empty rule", "permissions:\n  deny:\n    - {}\n", []string{"permissions.deny[0]", "needs tool, command, command_glob or skill_name"}},
		{"three-word command", "permissions:\n  allow:\n    - command: git push origin\n", []string{"permissions.allow[0]", "command_glob"}},
		{"bad host pattern", "caps:\n  network: ['example.com']\n", []string{"caps: network", "missing port"}},
		{"bad host wildcard", "caps:\n  network: ['*.*.com:443']\n", []string{"caps: network"}},
		{"bad preset pattern", "caps:\n  network: ['preset:lan']\n", []string{"caps: network", "unknown preset"}},
		{"localhost by name", "caps:\n  network: ['localhost:8080']\n", []string{"caps: network", "preset:loopback:8080"}},
		{"bad size", "caps:\n  limits: {memory: lots}\n", []string{"caps: limits.memory", "lots"}},
		{"tiny size", "caps:\n  limits: {memory: 1K}\n", []string{"caps: limits.memory", "minimum"}},
		{"bad duration", "caps:\n  limits: {timeout: soon}\n", []string{"caps: limits.timeout", "soon"}},
		{"negative duration", "caps:\n  limits: {timeout: -1m}\n", []string{"caps: limits.timeout"}},
		{"negative pids", "caps:\n  limits: {pids: -1}\n", []string{"caps: limits.pids"}},
		{"unknown variable", "caps:\n  fs:\n    read: ['$NOPE/x']\n", []string{"caps: fs", "unknown variable $NOPE"}},
		{"SKILL_DIR in caps", "caps:\n  fs:\n    write: ['$SKILL_DIR/x']\n", []string{"caps: fs", "$SKILL_DIR"}},
		{"relative path", "caps:\n  fs:\n    read: ['docs/**']\n", []string{"caps: fs", "not an absolute path"}},
		{"unclosed variable", "caps:\n  fs:\n    read: ['${WORK_DIR/x']\n", []string{"caps: fs", "unclosed"}},
		{"empty", "", []string{"test.yaml", "empty"}},
		{"blank", " \n\n  \n", []string{"empty"}},
		{"tab indent", "url:\n\tdefault: deny\n", []string{"line 2"}},
		{"comments only", "# nothing here\n", []string{"empty"}},
		{"two documents", "version: 1\n---\nversion: 1\n", []string{"more than one document"}},
		{"two JSON documents", "{}\n{}\n", []string{"test.yaml"}},
		{"url and url_policy", "url: {default: allow}\nurl_policy: {default: deny}\n", []string{"url and url_policy", "write one"}},
		{"bad url_policy", "url_policy: {default: maybe}\n", []string{`url.default "maybe"`}},
	} {
		_, err := Parse("test.yaml", []byte(tt.src))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		wantContains(t, tt.name, err.Error(), tt.want...)
	}
}

// TestLoad: files, their size bound and their errors.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	p, err := Load(writeFile(t, dir, "p.json", fullJSON))
	if err != nil || !reflect.DeepEqual(p, mustParse(t, fullYAML)) {
		t.Errorf("JSON file: %+v, %v", p, err)
	}
	bad := writeFile(t, dir, "bad.yaml", "version: 1\n\nbogus: 1\n")
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad file: %v, want its name and line", err)
	}
	if _, err := Load(writeFile(t, dir, "empty.yaml", "")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}

	// Exactly 1 MiB is read; one byte more is refused.
	body := "version: 1\n#"
	exact := body + strings.Repeat("x", maxPolicy-len(body))
	if _, err := Load(writeFile(t, dir, "exact.yaml", exact)); err != nil {
		t.Errorf("1 MiB file: %v", err)
	}
	big := writeFile(t, dir, "big.yaml", exact+"x")
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("1 MiB + 1 file: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "d")); err == nil {
		t.Error("a directory loads")
	}
}

// TestParseCapsGlobs guards a fixed bug: validate expands the caps' fs paths but
// does not compile them, so Parse (and `corral policy validate`) accepts
// a glob that New then refuses: ".." segments, an unclosed class.
func TestParseCapsGlobs(t *testing.T) {
	for _, g := range []string{"$WORK_DIR/../etc/**", "/work/[a", "~/x/../../**"} {
		src := "caps:\n  fs:\n    read: ['" + g + "']\n"
		p, err := Parse("test.yaml", []byte(src))
		if err == nil {
			_, newErr := New(Stack{{Name: "project", Source: "p", Policy: p}}, Options{Vars: testVars})
			t.Errorf("%s: Parse accepts it; New says %v", g, newErr)
		}
	}
}

// TestParseURLPolicyAlias guards a fixed bug: the policy seeds write the URL
// policy as url_policy, which Parse refused as an unknown key (exit 125).
// It is url's other name: the same policy, in YAML and JSON, in every
// layer, and in a Policy built by hand.
func TestParseURLPolicyAlias(t *testing.T) {
	const body = "{default: deny, allow: ['https://a.example/*'], deny_override: ['preset:cloud_metadata']}"
	want := mustParse(t, "url: "+body+"\n")
	for _, src := range []string{
		"url_policy: " + body + "\n",
		`{"url_policy": {"default": "deny", "allow": ["https://a.example/*"], "deny_override": ["preset:cloud_metadata"]}}`,
	} {
		p := mustParse(t, src)
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%s: parses to %+v, want %+v", src, p, want)
		}
		e := project(t, src)
		wantDecision(t, src, e.CheckURL("https://a.example/x"), policyengine.Allow, "url.allow: https://a.example/*", projectLabel)
		wantDecision(t, src, e.CheckURL("https://b.example/"), policyengine.Deny, "url.default: deny", projectLabel)
	}
	// A Policy built in Go with URLAlias is decided the same.
	p := &Policy{URLAlias: &URLPolicy{Allow: []string{"https://a.example/*"}}}
	e := evaluator(t, nil, Layer{Name: "project", Source: "p.yaml", Policy: p})
	wantDecision(t, "URLAlias", e.CheckURL("https://b.example/"), policyengine.Deny, "url.default: deny", projectLabel)
	if e.URLLayer() != projectLabel {
		t.Errorf("URLLayer %q", e.URLLayer())
	}
}
