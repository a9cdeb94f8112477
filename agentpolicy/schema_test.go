package agentpolicy

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// schemaNode is a decoded JSON Schema object.
type schemaNode = map[string]any

func loadSchema(t *testing.T) schemaNode {
	t.Helper()
	if !json.Valid(Schema) {
		t.Fatal("schema.json is not valid JSON")
	}
	var s schemaNode
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// resolve follows a local "$ref".
func resolve(root, n schemaNode) (schemaNode, bool) {
	ref, ok := n["$ref"].(string)
	if !ok {
		return n, true
	}
	var cur any = root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(schemaNode)
		if !ok {
			return nil, false
		}
		cur = m[part]
	}
	m, ok := cur.(schemaNode)
	return m, ok
}

// schemaDrift lists where the schema node does not describe typ: for a
// struct, an object whose properties are exactly its yaml tags (json tags
// must agree) with additionalProperties false; for a slice, an array of
// its element; otherwise the matching JSON type.
func schemaDrift(root, n schemaNode, typ reflect.Type, at string) []string {
	var bad []string
	n, ok := resolve(root, n)
	if !ok {
		return []string{at + ": $ref does not resolve"}
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Struct:
		if n["type"] != "object" {
			bad = append(bad, fmt.Sprintf("%s: type %v, want object", at, n["type"]))
		}
		if n["additionalProperties"] != false {
			bad = append(bad, at+": additionalProperties is not false, but unknown keys are errors")
		}
		props, _ := n["properties"].(schemaNode)
		var fields []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			jname, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				bad = append(bad, fmt.Sprintf("%s.%s: no yaml tag", at, f.Name))
				continue
			}
			if jname != name {
				bad = append(bad, fmt.Sprintf("%s.%s: yaml tag %q, json tag %q", at, f.Name, name, jname))
			}
			fields = append(fields, name)
			p, ok := props[name].(schemaNode)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s: schema lacks property %q (field %s)", at, name, f.Name))
				continue
			}
			bad = append(bad, schemaDrift(root, p, f.Type, at+"."+name)...)
		}
		for name := range props {
			if !slices.Contains(fields, name) {
				bad = append(bad, fmt.Sprintf("%s: schema property %q has no field in %s", at, name, typ))
			}
		}
	case reflect.Slice:
		if n["type"] != "array" {
			bad = append(bad, fmt.Sprintf("%s: type %v, want array", at, n["type"]))
		}
		items, ok := n["items"].(schemaNode)
		if !ok {
			return append(bad, at+": array without items")
		}
		bad = append(bad, schemaDrift(root, items, typ.Elem(), at+"[]")...)
	case reflect.String:
		if n["type"] != "string" && n["enum"] == nil {
			bad = append(bad, fmt.Sprintf("%s: type %v, want string", at, n["type"]))
		}
	case reflect.Int:
		if n["type"] != "integer" && n["const"] == nil {
			bad = append(bad, fmt.Sprintf("%s: type %v, want integer", at, n["type"]))
		}
	default:
		bad = append(bad, fmt.Sprintf("%s: unexpected Go type %s", at, typ))
	}
	return bad
}

// TestSchemaMatchesTypes: the schema cannot drift from the Go types.
func TestSchemaMatchesTypes(t *testing.T) {
	s := loadSchema(t)
	for _, b := range schemaDrift(s, s, reflect.TypeFor[Policy](), "policy") {
		t.Error(b)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema %v", s["$schema"])
	}
}

// TestSchemaDriftDetected: the walk notices a field the schema lacks, a
// property without a field, a renamed tag and a changed type.
func TestSchemaDriftDetected(t *testing.T) {
	s := loadSchema(t)
	type limits struct {
		Memory string `yaml:"memory" json:"memory"`
		Pids   string `yaml:"pids" json:"pids"`
		CPUs   int    `yaml:"cpus" json:"cpus"`
	}
	type caps struct {
		FS      *FSCaps  `yaml:"fs" json:"fs"`
		Network []string `yaml:"network" json:"network"`
		Exec    []string `yaml:"exec" json:"exec"`
		Env     string   `yaml:"environment" json:"env"`
		Limits  *limits  `yaml:"limits" json:"limits"`
	}
	type policy struct {
		Version     int        `yaml:"version" json:"version"`
		URL         *URLPolicy `yaml:"url" json:"url"`
		Permissions Rules      `yaml:"permissions" json:"permissions"`
		Caps        *caps      `yaml:"caps" json:"caps"`
	}
	got := strings.Join(schemaDrift(s, s, reflect.TypeFor[policy](), "policy"), "\n")
	for _, want := range []string{
		`policy.caps.limits: schema lacks property "cpus"`,
		`policy.caps.limits.pids: type integer, want string`,
		`policy.caps: schema lacks property "environment"`,
		`policy.caps.Env: yaml tag "environment", json tag "env"`,
		`policy.caps: schema property "env" has no field`,
		`policy.caps.limits: schema property "timeout" has no field`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("drift not reported: %s\ngot:\n%s", want, got)
		}
	}
}

// TestSchemaEmbedded: Schema is schema.json.
func TestSchemaEmbedded(t *testing.T) {
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(Schema) {
		t.Error("Schema differs from schema.json")
	}
}

// TestSchemaValues: the enumerations in the schema are the ones Parse
// accepts.
func TestSchemaValues(t *testing.T) {
	s := loadSchema(t)
	url := s["properties"].(schemaNode)["url"].(schemaNode)["properties"].(schemaNode)
	var enum []string
	for _, v := range url["default"].(schemaNode)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, []string{"allow", "deny"}) {
		t.Errorf("url.default enum %q", enum)
	}
	for _, d := range enum {
		mustParse(t, "url: {default: "+d+"}\n")
	}
	pattern := s["$defs"].(schemaNode)["urlRules"].(schemaNode)["items"].(schemaNode)["pattern"].(string)
	for _, c := range policyengine.Categories() {
		if !strings.Contains(pattern, string(c)) {
			t.Errorf("urlRules pattern %q lacks preset %s", pattern, c)
		}
	}
	if v := s["properties"].(schemaNode)["version"].(schemaNode)["const"]; v != float64(1) {
		t.Errorf("version const %v", v)
	}
	rule := s["$defs"].(schemaNode)["rule"].(schemaNode)
	if rule["minProperties"] != float64(1) {
		t.Errorf("rule minProperties %v: Parse refuses an empty rule", rule["minProperties"])
	}
}
