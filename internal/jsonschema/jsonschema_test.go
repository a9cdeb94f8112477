package jsonschema

import (
	"strings"
	"testing"
)

const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["v", "list"],
  "properties": {
    "v": {"const": 1},
    "stage": {"enum": ["a", "b"]},
    "n": {"type": "integer", "minimum": 0, "maximum": 9},
    "x": {"type": "number"},
    "list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
    "maybe": {"type": ["object", "null"], "required": ["k"], "properties": {"k": {"type": "string"}}},
    "closed": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "boolean"}}},
    "t": {"type": "string", "format": "date-time"}
  },
  "$defs": {"item": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}
}`

func TestValidate(t *testing.T) {
	s, err := Parse([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	good := `{"v":1,"stage":"a","n":3,"x":1.5,"list":[{"name":"p"}],"maybe":null,"closed":{"a":true},"t":"2024-05-01T10:00:00.5Z","extra":1}`
	if p := s.Validate([]byte(good)); p != nil {
		t.Fatalf("a conforming document: %v", p)
	}
	for _, c := range []struct{ doc, want string }{
		{`{"list":[]}`, `missing required key "v"`},
		{`{"v":2,"list":[]}`, "is not 1"},
		{`{"v":1,"list":null}`, "not of type array"},
		{`{"v":1,"list":[],"stage":"c"}`, "not one of"},
		{`{"v":1,"list":[],"n":1.5}`, "not of type integer"},
		{`{"v":1,"list":[],"n":-1}`, "below the minimum"},
		{`{"v":1,"list":[],"n":10}`, "above the maximum"},
		{`{"v":1,"list":[{}]}`, `$.list[0]: missing required key "name"`},
		{`{"v":1,"list":[{"name":3}]}`, "$.list[0].name: number is not of type string"},
		{`{"v":1,"list":[],"maybe":{}}`, `$.maybe: missing required key "k"`},
		{`{"v":1,"list":[],"closed":{"b":1}}`, `key "b" is not in the schema`},
		{`{"v":1,"list":[],"t":"yesterday"}`, "not a date-time"},
		{`{"v":1,"list":[]} {}`, "not JSON"},
	} {
		p := s.Validate([]byte(c.doc))
		if !strings.Contains(strings.Join(p, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.doc, p, c.want)
		}
	}
	s.Strict = true
	if p := s.Validate([]byte(good)); len(p) != 1 || !strings.Contains(p[0], `key "extra"`) {
		t.Errorf("strict: problems %q, want the key the schema does not list", p)
	}
}

func TestUnknownKeyword(t *testing.T) {
	s, err := Parse([]byte(`{"type": "string", "pattern": "^a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Validate([]byte(`"b"`)); len(p) != 1 || !strings.Contains(p[0], `"pattern" is not implemented`) {
		t.Errorf("a keyword the validator does not implement must be an error, got %q", p)
	}
}
