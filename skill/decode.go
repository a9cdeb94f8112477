package skill

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"corral.dev/corral/policyengine"
)

// decoder walks the frontmatter's YAML nodes, so every error can name the
// file line and the field, and unknown keys are refused.
type decoder struct {
	file       string
	lineOffset int // file line of YAML line 1, minus one
}

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil && n.Line > 0 {
		line = n.Line + d.lineOffset
	}
	return &Error{File: d.file, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

func decodeFrontmatter(s *Skill, text []byte, file string, lineOffset int) error {
	d := &decoder{file: file, lineOffset: lineOffset}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return &Error{File: file, Err: fmt.Errorf("malformed YAML frontmatter: %s", yamlMessage(err, lineOffset))}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Error{File: file, Err: errors.New("empty frontmatter: at least name and description are needed")}
	}
	root := doc.Content[0]
	var nameNode *yaml.Node
	err := d.mapping(root, "", map[string]func(*yaml.Node, string) error{
		// The Agent Skills format's fields (spec.go).
		"name":          func(n *yaml.Node, f string) (err error) { nameNode = n; s.Name, err = d.name(n, f); return err },
		"description":   func(n *yaml.Node, f string) (err error) { s.Description, err = d.description(n, f); return err },
		"license":       func(n *yaml.Node, f string) (err error) { s.License, err = d.str(n, f); return err },
		"compatibility": func(n *yaml.Node, f string) (err error) { s.Compatibility, err = d.compatibility(n, f); return err },
		"metadata":      func(n *yaml.Node, f string) (err error) { s.Metadata, err = d.metadata(n, f); return err },
		"allowed-tools": func(n *yaml.Node, f string) (err error) { s.AllowedTools, err = d.tools(n, f); return err },
		// corral's own fields.
		"requires": func(n *yaml.Node, f string) error {
			return d.mapping(n, f, map[string]func(*yaml.Node, string) error{
				"bins": func(n *yaml.Node, f string) (err error) { s.Requires.Bins, err = d.names(n, f, "program"); return err },
			})
		},
		"permissions": func(n *yaml.Node, f string) error {
			s.Permissions = &Permissions{}
			return d.permissions(s.Permissions, n, f)
		},
	})
	if err != nil {
		return err
	}
	return d.required(s, root, nameNode)
}

// The validators below are plain loops rather than regular expressions:
// package-level regexps compile at every corral start, including the
// sandbox's init stage.

func validEnv(s string) bool {
	s = strings.TrimSuffix(s, "*")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	return allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' })
}

func validService(s string) bool {
	return s != "" && s[0] >= 'a' && s[0] <= 'z' &&
		allBytes(s, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' })
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func (d *decoder) permissions(p *Permissions, n *yaml.Node, field string) error {
	return d.mapping(n, field, map[string]func(*yaml.Node, string) error{
		"fs": func(n *yaml.Node, f string) error {
			return d.mapping(n, f, map[string]func(*yaml.Node, string) error{
				"read":  func(n *yaml.Node, f string) (err error) { p.Read, err = d.globs(n, f); return err },
				"write": func(n *yaml.Node, f string) (err error) { p.Write, err = d.globs(n, f); return err },
				"deny":  func(n *yaml.Node, f string) (err error) { p.Deny, err = d.list(n, f, checkDenyGlob); return err },
			})
		},
		"network": func(n *yaml.Node, f string) error {
			return d.mapping(n, f, map[string]func(*yaml.Node, string) error{
				"allow":  func(n *yaml.Node, f string) (err error) { p.Network, err = d.hosts(n, f); return err },
				"bind":   func(n *yaml.Node, f string) (err error) { p.Bind, err = d.ports(n, f); return err },
				"budget": func(n *yaml.Node, f string) error { return d.budget(&p.Budget, n, f) },
			})
		},
		"exec":     func(n *yaml.Node, f string) (err error) { p.Exec, err = d.names(n, f, "program"); return err },
		"env":      func(n *yaml.Node, f string) (err error) { p.Env, err = d.envNames(n, f); return err },
		"services": func(n *yaml.Node, f string) (err error) { p.Services, err = d.services(n, f); return err },
		"limits": func(n *yaml.Node, f string) error {
			return d.mapping(n, f, map[string]func(*yaml.Node, string) error{
				"memory":  func(n *yaml.Node, f string) (err error) { p.Limits.Memory, err = d.size(n, f); return err },
				"pids":    func(n *yaml.Node, f string) (err error) { p.Limits.Pids, err = d.count(n, f); return err },
				"timeout": func(n *yaml.Node, f string) (err error) { p.Limits.Timeout, err = d.duration(n, f); return err },
			})
		},
	})
}

// mapping decodes a mapping node key by key. A null node is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, field string, fields map[string]func(*yaml.Node, string) error) error {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, orRoot(field), "must be a mapping of keys, not %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		sub := join(field, key)
		if k.Kind != yaml.ScalarNode {
			return d.errorf(k, orRoot(field), "keys must be plain words")
		}
		if seen[key] {
			return d.errorf(k, sub, "defined twice")
		}
		seen[key] = true
		decode, ok := fields[key]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			slices.Sort(known)
			return d.errorf(k, sub, "unknown field (known fields here: %s)", strings.Join(known, ", "))
		}
		if err := decode(v, sub); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) str(n *yaml.Node, field string) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return "", d.errorf(n, field, "must be a string, not %s", kindName(n))
	}
	return n.Value, nil
}

// list decodes a sequence of strings, checking each with check.
func (d *decoder) list(n *yaml.Node, field string, check func(v string) error) ([]string, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, d.errorf(n, field, "must be a list, not %s", kindName(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		sub := fmt.Sprintf("%s[%d]", field, i)
		v, err := d.str(item, sub)
		if err != nil {
			return nil, err
		}
		if err := check(v); err != nil {
			return nil, d.errorf(item, sub, "%v", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ports decodes network.bind: TCP port numbers (written as numbers or
// strings) and "*", each checked by policyengine.ParseBindPort.
func (d *decoder) ports(n *yaml.Node, field string) ([]string, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, d.errorf(n, field, "must be a list, not %s", kindName(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		sub := fmt.Sprintf("%s[%d]", field, i)
		item = deref(item)
		if item.Kind != yaml.ScalarNode || item.Tag != "!!str" && item.Tag != "!!int" {
			return nil, d.errorf(item, sub, "must be a port number or \"*\", not %s", kindName(item))
		}
		v, err := policyengine.ParseBindPort(item.Value)
		if err != nil {
			return nil, d.errorf(item, sub, "%v", err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *decoder) globs(n *yaml.Node, field string) ([]string, error) {
	return d.list(n, field, checkPathGlob)
}

func (d *decoder) hosts(n *yaml.Node, field string) ([]string, error) {
	return d.list(n, field, func(v string) error {
		_, err := policyengine.ParseHostPattern(v)
		return err
	})
}

func (d *decoder) envNames(n *yaml.Node, field string) ([]string, error) {
	return d.list(n, field, func(v string) error {
		if !validEnv(v) {
			return fmt.Errorf("%q is not an environment variable name (a trailing * matches a prefix, as in LC_*)", v)
		}
		return nil
	})
}

func (d *decoder) names(n *yaml.Node, field, what string) ([]string, error) {
	return d.list(n, field, func(v string) error { return checkProgram(v, what) })
}

// serviceAccess lists the access levels a service may be granted.
var serviceAccess = []string{"read", "write", "send", "full"}

func (d *decoder) services(n *yaml.Node, field string) (map[string]string, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errorf(n, field, "must be a mapping of service names, not %s", kindName(n))
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := join(field, k.Value)
		if !validService(k.Value) {
			return nil, d.errorf(k, sub, "%q is not a service name (lower-case letters, digits and '-')", k.Value)
		}
		if _, dup := out[k.Value]; dup {
			return nil, d.errorf(k, sub, "defined twice")
		}
		var access string
		err := d.mapping(v, sub, map[string]func(*yaml.Node, string) error{
			"access": func(n *yaml.Node, f string) (err error) { access, err = d.str(n, f); return err },
		})
		if err != nil {
			return nil, err
		}
		if !slices.Contains(serviceAccess, access) {
			return nil, d.errorf(v, sub+".access", "must be one of %s", strings.Join(serviceAccess, ", "))
		}
		out[k.Value] = access
	}
	return out, nil
}

func (d *decoder) size(n *yaml.Node, field string) (int64, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return 0, d.errorf(n, field, "must be a size such as 256Mi, not %s", kindName(n))
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return 0, d.errorf(n, field, "%v", err)
	}
	return v, nil
}

func (d *decoder) count(n *yaml.Node, field string) (int, error) {
	n = deref(n)
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		return 0, d.errorf(n, field, "must be a whole number, not %q", n.Value)
	}
	if v < 1 || v > 1<<22 {
		return 0, d.errorf(n, field, "%d is out of range 1-%d", v, 1<<22)
	}
	return v, nil
}

func (d *decoder) duration(n *yaml.Node, field string) (time.Duration, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return 0, d.errorf(n, field, "must be a duration such as 60s, not %s", kindName(n))
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return 0, d.errorf(n, field, "%v", err)
	}
	return v, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case isNull(n):
		return "null"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), n.Value)
	}
	return "an unexpected node"
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func orRoot(field string) string {
	if field == "" {
		return "frontmatter"
	}
	return field
}

// yamlMessage shifts the line numbers ("line N") of a yaml.v3 error to
// file lines.
func yamlMessage(err error, offset int) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var b strings.Builder
	for {
		i := strings.Index(msg, "line ")
		if i < 0 {
			break
		}
		j := i + len("line ")
		k := j
		for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
			k++
		}
		b.WriteString(msg[:j])
		if n, err := strconv.Atoi(msg[j:k]); err == nil {
			b.WriteString(strconv.Itoa(n + offset))
		}
		msg = msg[k:]
	}
	b.WriteString(msg)
	return b.String()
}
