package skill

import (
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The Agent Skills format (agentskills.io/specification) defines name,
// description, license, compatibility, metadata and allowed-tools; the
// checks below are its rules, each error naming the field and the rule.
// corral's own fields (requires, permissions) sit beside them.

// Limits the format sets, in characters.
const (
	maxName          = 64
	maxDescription   = 1024
	maxCompatibility = 500
)

// nameRule is one of the format's rules for a skill's name.
type nameRule struct {
	rule string // as an error states it
	ok   func(string) bool
}

// nameRules are checked in order and the first broken one is reported.
// The format writes the letters as a-z; its reference validator
// (skills-ref) also takes other Unicode lower-case letters after NFKC
// normalisation, which corral does not: the name becomes a folder
// ($DATA_DIR) and must match one, and look-alike letters from other
// scripts would let two skills seem to share a name.
var nameRules = []nameRule{
	{"only lower-case letters a-z, digits and '-'", func(s string) bool {
		return allBytes(s, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' })
	}},
	{"1-64 characters", func(s string) bool { return len(s) >= 1 && len(s) <= maxName }},
	{"no '-' at the start or the end", func(s string) bool { return !strings.HasPrefix(s, "-") && !strings.HasSuffix(s, "-") }},
	{"no '--'", func(s string) bool { return !strings.Contains(s, "--") }},
}

func (d *decoder) name(n *yaml.Node, field string) (string, error) {
	v, err := d.str(n, field)
	if err != nil {
		return "", err
	}
	for _, r := range nameRules {
		if !r.ok(v) {
			return "", d.errorf(n, field, "%q breaks the Agent Skills name rule: %s", v, r.rule)
		}
	}
	return v, nil
}

func (d *decoder) description(n *yaml.Node, field string) (string, error) {
	v, err := d.str(n, field)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(v) == "" {
		return "", d.errorf(n, field, "is empty: the Agent Skills format requires 1-%d characters saying what the skill does", maxDescription)
	}
	if c := utf8.RuneCountInString(v); c > maxDescription {
		return "", d.errorf(n, field, "has %d characters, more than the Agent Skills format's %d", c, maxDescription)
	}
	return v, nil
}

// required checks what only the whole frontmatter shows: the required
// fields are there, and the folder holding SKILL.md is named after the
// skill. The folder is the one named on the command line: a symlink's
// own name, not its target's.
func (d *decoder) required(s *Skill, root, nameNode *yaml.Node) error {
	if s.Name == "" {
		return d.errorf(root, "name", "missing: the Agent Skills format requires a name")
	}
	if s.Description == "" {
		return d.errorf(root, "description", "missing: the Agent Skills format requires a description of 1-%d characters", maxDescription)
	}
	if folder := filepath.Base(s.Dir); folder != s.Name {
		return d.errorf(nameNode, "name", "%q breaks the Agent Skills name rule: it must match the name of the folder holding SKILL.md, %q", s.Name, folder)
	}
	return nil
}

func (d *decoder) compatibility(n *yaml.Node, field string) (string, error) {
	v, err := d.str(n, field)
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", d.errorf(n, field, "is empty: the Agent Skills format wants 1-%d characters when the field is given", maxCompatibility)
	}
	if c := utf8.RuneCountInString(v); c > maxCompatibility {
		return "", d.errorf(n, field, "has %d characters, more than the Agent Skills format's %d", c, maxCompatibility)
	}
	return v, nil
}

// metadata decodes a mapping of string keys to string values, as the
// format defines it. A number or a boolean is refused, not turned into
// text: YAML reads version: 1.10 as the number 1.1.
func (d *decoder) metadata(n *yaml.Node, field string) (map[string]string, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errorf(n, field, "must be a mapping of string keys to string values, not %s", kindName(n))
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return nil, d.errorf(k, field, "keys must be strings, not %s", kindName(k))
		}
		sub := join(field, k.Value)
		if _, dup := out[k.Value]; dup {
			return nil, d.errorf(k, sub, "defined twice")
		}
		if v.Kind == yaml.ScalarNode && v.Tag != "!!str" && !isNull(v) {
			return nil, d.errorf(v, sub, "must be a string, not %s: quote it, as in %s: %q", kindName(v), k.Value, v.Value)
		}
		s, err := d.str(v, sub)
		if err != nil {
			return nil, err
		}
		out[k.Value] = s
	}
	return out, nil
}
