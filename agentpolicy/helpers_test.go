package agentpolicy

import (
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/skill"
)

// testVars are the path variables every test evaluator expands caps with.
var testVars = skill.Variables{WorkDir: "/work", Home: "/home/u", TmpDir: "/tmp/t", DataDir: "/data"}

// projectLabel is how decisions name the layer projectLayer builds.
const projectLabel = "project (p.yaml)"

// mustParse parses a policy written in YAML or JSON, failing the test on
// an error.
func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return p
}

// projectLayer is src as the project layer, read from p.yaml.
func projectLayer(t testing.TB, src string) Layer {
	t.Helper()
	return Layer{Name: "project", Source: "p.yaml", Policy: mustParse(t, src)}
}

// evaluator compiles the layers with testVars and the active skills.
func evaluator(t testing.TB, skills []string, layers ...Layer) *Evaluator {
	t.Helper()
	e, err := New(Stack(layers), Options{Vars: testVars, Skills: skills})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// project is an evaluator for one project policy and no active skill.
func project(t testing.TB, src string) *Evaluator {
	t.Helper()
	return evaluator(t, nil, projectLayer(t, src))
}

// urlPolicy is an evaluator for one project layer holding only u.
func urlPolicy(t testing.TB, u URLPolicy) *Evaluator {
	t.Helper()
	p := &Policy{URL: &u}
	if err := p.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	e, err := New(Stack{{Name: "project", Source: "p.yaml", Policy: p}}, Options{Vars: testVars})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// wantDecision checks the action, and the rule and layer when wanted is
// not "-" (any). An empty want means the field must be empty.
func wantDecision(t *testing.T, what string, d policyengine.Decision, action policyengine.Action, rule, layer string) {
	t.Helper()
	if d.Action != action {
		t.Errorf("%s: action %s, want %s (reason %q, rule %q)", what, d.Action, action, d.Reason, d.Rule)
	}
	if rule != "-" && d.Rule != rule {
		t.Errorf("%s: rule %q, want %q", what, d.Rule, rule)
	}
	if layer != "-" && d.Layer != layer {
		t.Errorf("%s: layer %q, want %q", what, d.Layer, layer)
	}
	if d.Reason == "" {
		t.Errorf("%s: empty reason", what)
	}
}

// wantContains checks that s holds every part.
func wantContains(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s: %q does not contain %q", what, s, p)
		}
	}
}
