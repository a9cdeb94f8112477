// Package jsonschema checks JSON documents against the small part of JSON
// Schema (draft 2020-12) that corral's published schemas use, so tests can
// hold the documents corral writes (the exec report) to the schema users
// read. It guards against drift between the two, nothing else: it is not
// a general validator, fetches nothing, and refuses a schema keyword it
// does not implement rather than ignore it, so a schema cannot seem to
// promise a check no test makes.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Schema is a parsed schema document.
type Schema struct {
	root map[string]any
	// Strict treats every object schema that lists properties as closed
	// (additionalProperties false), whatever it says: the schema may
	// leave room for keys a later version adds while the tests insist
	// that every key written today is documented.
	Strict bool
}

// Parse reads a schema document.
func Parse(data []byte) (*Schema, error) {
	var root map[string]any
	if err := decode(data, &root); err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	return &Schema{root: root}, nil
}

// Validate checks the JSON document data and returns every violation,
// each as "path: problem" (nil when it conforms).
func (s *Schema) Validate(data []byte) []string {
	var doc any
	if err := decode(data, &doc); err != nil {
		return []string{"$: not JSON: " + err.Error()}
	}
	v := &validation{s: s}
	v.check(s.root, doc, "$")
	return v.problems
}

// Properties lists the keys the schema's top-level object declares,
// sorted.
func (s *Schema) Properties() []string {
	props, _ := s.root["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Enum returns the enum of the top-level property name.
func (s *Schema) Enum(name string) []any {
	props, _ := s.root["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	e, _ := p["enum"].([]any)
	return e
}

func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

type validation struct {
	s        *Schema
	problems []string
}

func (v *validation) fail(at, format string, args ...any) {
	v.problems = append(v.problems, at+": "+fmt.Sprintf(format, args...))
}

// annotations are keywords that check nothing.
var annotations = map[string]bool{"$schema": true, "$id": true, "$defs": true, "title": true, "description": true, "default": true}

func (v *validation) check(node map[string]any, doc any, at string) {
	if ref, ok := node["$ref"].(string); ok {
		target, err := v.resolve(ref)
		if err != nil {
			v.fail(at, "%v", err)
			return
		}
		node = target
	}
	for kw := range node {
		switch kw {
		case "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum", "maximum", "format":
		default:
			if !annotations[kw] {
				v.fail(at, "schema keyword %q is not implemented by internal/jsonschema", kw)
			}
		}
	}
	if t, ok := node["type"]; ok && !v.typeOK(t, doc) {
		v.fail(at, "%s is not of type %v", kind(doc), t)
		return
	}
	if c, ok := node["const"]; ok && !equal(c, doc) {
		v.fail(at, "%v is not %v", doc, c)
	}
	if e, ok := node["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || equal(x, doc)
		}
		if !found {
			v.fail(at, "%v is not one of %v", doc, e)
		}
	}
	if n, ok := doc.(json.Number); ok {
		f, _ := n.Float64()
		if m, ok := node["minimum"].(json.Number); ok {
			if lo, _ := m.Float64(); f < lo {
				v.fail(at, "%v is below the minimum %v", n, m)
			}
		}
		if m, ok := node["maximum"].(json.Number); ok {
			if hi, _ := m.Float64(); f > hi {
				v.fail(at, "%v is above the maximum %v", n, m)
			}
		}
	}
	if node["format"] == "date-time" {
		if s, ok := doc.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				v.fail(at, "%q is not a date-time", s)
			}
		}
	}
	switch d := doc.(type) {
	case map[string]any:
		v.object(node, d, at)
	case []any:
		if items, ok := node["items"].(map[string]any); ok {
			for i, x := range d {
				v.check(items, x, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
}

func (v *validation) object(node map[string]any, d map[string]any, at string) {
	req, _ := node["required"].([]any)
	for _, r := range req {
		if name, _ := r.(string); name != "" {
			if _, ok := d[name]; !ok {
				v.fail(at, "missing required key %q", name)
			}
		}
	}
	props, hasProps := node["properties"].(map[string]any)
	closed := node["additionalProperties"] == false || (v.s.Strict && hasProps)
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := props[k].(map[string]any)
		if !ok {
			if closed {
				v.fail(at, "key %q is not in the schema", k)
			}
			continue
		}
		v.check(p, d[k], at+"."+k)
	}
}

// resolve follows a local reference, "#/$defs/name".
func (v *validation) resolve(ref string) (map[string]any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only local references are implemented", ref)
	}
	var cur any = v.s.root
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q does not resolve to a schema", ref)
	}
	return m, nil
}

func (v *validation) typeOK(t any, doc any) bool {
	switch t := t.(type) {
	case string:
		return typeIs(t, doc)
	case []any:
		for _, x := range t {
			if s, _ := x.(string); typeIs(s, doc) {
				return true
			}
		}
	}
	return false
}

func typeIs(t string, doc any) bool {
	switch t {
	case "integer":
		n, ok := doc.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "number":
		_, ok := doc.(json.Number)
		return ok
	}
	return kind(doc) == t
}

// kind is the JSON type name of a decoded value.
func kind(doc any) string {
	switch doc.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", doc)
}

// equal compares decoded JSON values; numbers by value.
func equal(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, _ := x.Float64()
		fy, _ := y.Float64()
		return fx == fy
	}
	return reflect.DeepEqual(a, b)
}
