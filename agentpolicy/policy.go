// Package agentpolicy is the agent operator's side of corral: what an agent may
// ever get, whatever its skills ask for. A policy holds a URL policy
// (allow, deny and override lists over canonical URLs and address
// categories), tool and command rules (allow, deny, otherwise confirm) and
// caps on skill permissions (fs, network, exec, env, limits).
//
// Policies come in layers: a global file, a project file and a
// per-invocation JSON object. The highest layer that sets a URL policy
// replaces the lower ones whole; tool and command rules are concatenated;
// every layer's caps apply. Below every layer, the commands the active
// skills' allowed-tools pre-approve allow what would otherwise need
// confirmation, and nothing more (preapproved.go).
//
// The file format (YAML or JSON, one schema) is published as a JSON Schema
// in schema.json.
//
// Remember is the "remember" answer to a confirm: it adds the approved
// command line to a policy file as allow rules that match exactly the
// approved commands, and refuses a line where no rule could, since a
// remembered rule wider than the approval (a bare program for a
// subcommand, cd, a wrapper, an expansion) would let an agent run what
// nobody approved. It rewrites the file in its own format, atomically,
// never through a symbolic link.
package agentpolicy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Policy is one policy file or object.
type Policy struct {
	// Version is 1.
	Version int `yaml:"version,omitempty" json:"version,omitempty"`
	// URL is the URL policy; nil means this layer does not set one.
	URL *URLPolicy `yaml:"url,omitempty" json:"url,omitempty"`
	// URLAlias is the URL policy under the name the policy seeds give it,
	// url_policy. Parse moves it to URL; setting both is an error.
	URLAlias *URLPolicy `yaml:"url_policy,omitempty" json:"url_policy,omitempty"`
	// Permissions are the tool and command rules.
	Permissions Rules `yaml:"permissions,omitempty" json:"permissions,omitempty"`
	// Caps narrow what skills may be granted; nil means no cap.
	Caps *Caps `yaml:"caps,omitempty" json:"caps,omitempty"`
}

// URLPolicy decides URLs: the first list that matches wins, in the order
// deny_override, allow_override, deny, allow, then Default.
type URLPolicy struct {
	Default       string   `yaml:"default,omitempty" json:"default,omitempty"` // allow or deny; empty is deny
	Allow         []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	Deny          []string `yaml:"deny,omitempty" json:"deny,omitempty"`
	AllowOverride []string `yaml:"allow_override,omitempty" json:"allow_override,omitempty"`
	DenyOverride  []string `yaml:"deny_override,omitempty" json:"deny_override,omitempty"`
}

// Rules are tool and command rules: deny beats allow; a tool use that no
// rule allows (nor the built-in read-only allowlist) needs confirmation.
type Rules struct {
	Allow []Rule `yaml:"allow,omitempty" json:"allow,omitempty"`
	Deny  []Rule `yaml:"deny,omitempty" json:"deny,omitempty"`
}

// Rule matches a tool use when every field it sets matches.
type Rule struct {
	// Tool is the tool's name ("bash", "read", "web_fetch"...).
	Tool string `yaml:"tool,omitempty" json:"tool,omitempty"`
	// Command matches the first one or two words of each segment of the
	// normalised shell line ("ls", "git status"). A segment that starts
	// with NAME=value assignments is allowed only by a rule that names
	// them too ("FOO=1 make build"): an assignment can make any program
	// run another.
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	// CommandGlob matches a whole segment with * and ? (\* is a literal
	// star); a deny rule also the whole line. Allow rules see the
	// segment's words with a word that holds a space or a quote in
	// single quotes (quotedText), so that "echo a b" is not "echo 'a b'".
	CommandGlob string `yaml:"command_glob,omitempty" json:"command_glob,omitempty"`
	// SkillName limits the rule to one skill: for a skill_load question
	// (SkillLoad), the skill being loaded; for any other tool use, runs
	// where that skill is active.
	SkillName string `yaml:"skill_name,omitempty" json:"skill_name,omitempty"`
}

// Caps narrow skill permissions: the effective permissions are the
// skills' union intersected with every layer's caps. A nil or empty list
// caps nothing.
type Caps struct {
	FS      *FSCaps  `yaml:"fs,omitempty" json:"fs,omitempty"`
	Network []string `yaml:"network,omitempty" json:"network,omitempty"`
	Exec    []string `yaml:"exec,omitempty" json:"exec,omitempty"`
	Env     []string `yaml:"env,omitempty" json:"env,omitempty"`
	Limits  *Limits  `yaml:"limits,omitempty" json:"limits,omitempty"`
}

// FSCaps are path globs ($WORK_DIR, $HOME, $TMPDIR, $DATA_DIR and ~
// expand); a write cap also allows reading.
type FSCaps struct {
	Read  []string `yaml:"read,omitempty" json:"read,omitempty"`
	Write []string `yaml:"write,omitempty" json:"write,omitempty"`
}

// Limits are ceilings on the skills' limits and the defaults.
type Limits struct {
	Memory  string `yaml:"memory,omitempty" json:"memory,omitempty"`   // "512Mi"
	Pids    int    `yaml:"pids,omitempty" json:"pids,omitempty"`       // processes
	Timeout string `yaml:"timeout,omitempty" json:"timeout,omitempty"` // "10m"
}

// maxPolicy bounds a policy file.
const maxPolicy = 1 << 20

// Load reads a policy file (YAML or JSON).
func Load(file string) (*Policy, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicy+1))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	if len(data) > maxPolicy {
		return nil, fmt.Errorf("policy %s: larger than %d bytes", file, maxPolicy)
	}
	return Parse(file, data)
}

// Parse decodes a policy (YAML or JSON: JSON is YAML) strictly: unknown
// keys, wrong types and invalid rules are errors naming file and line.
func Parse(name string, data []byte) (*Policy, error) {
	var p Policy
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("policy %s: empty", name)
		}
		return nil, fmt.Errorf("policy %s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("policy %s: more than one document", name)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	if p.URLAlias != nil {
		p.URL, p.URLAlias = p.URLAlias, nil
	}
	return &p, nil
}

// urlPolicy is the layer's URL policy, under either name.
func (p *Policy) urlPolicy() *URLPolicy {
	if p.URL != nil {
		return p.URL
	}
	return p.URLAlias
}

func (p *Policy) validate() error {
	if p.Version != 0 && p.Version != 1 {
		return fmt.Errorf("version %d: only version 1 exists", p.Version)
	}
	if p.URL != nil && p.URLAlias != nil {
		return errors.New("url and url_policy are one key (url_policy is the policy seeds' name for url): write one")
	}
	if u := p.urlPolicy(); u != nil {
		switch u.Default {
		case "", "allow", "deny":
		default:
			return fmt.Errorf("url.default %q: write allow or deny", u.Default)
		}
		for _, l := range []struct {
			name  string
			rules []string
		}{{"allow", u.Allow}, {"deny", u.Deny}, {"allow_override", u.AllowOverride}, {"deny_override", u.DenyOverride}} {
			for _, r := range l.rules {
				if _, err := compileURLRule(r); err != nil {
					return fmt.Errorf("url.%s: %w", l.name, err)
				}
			}
		}
	}
	for _, l := range []struct {
		name  string
		rules []Rule
	}{{"allow", p.Permissions.Allow}, {"deny", p.Permissions.Deny}} {
		for i, r := range l.rules {
			if r.Tool == "" && r.Command == "" && r.CommandGlob == "" && r.SkillName == "" {
				return fmt.Errorf("permissions.%s[%d]: a rule needs tool, command, command_glob or skill_name", l.name, i)
			}
			if r.Command != "" && len(commandWords(r.Command)) > 2 {
				return fmt.Errorf("permissions.%s[%d]: command %q matches the first one or two words; use command_glob for more", l.name, i, r.Command)
			}
		}
	}
	if c := p.Caps; c != nil {
		if err := c.validate(); err != nil {
			return fmt.Errorf("caps: %w", err)
		}
	}
	return nil
}

// Layer is one policy in a Stack.
type Layer struct {
	Name   string // "global", "project" or "invocation"
	Source string // the file, or "--policy-json"
	Policy *Policy
}

func (l Layer) label() string { return l.Name + " (" + l.Source + ")" }

// Stack is the layers in force, lowest first.
type Stack []Layer

// GlobalFile is the global policy's default place: $XDG_CONFIG_HOME (or
// ~/.config)/corral/policy.yaml.
func GlobalFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); strings.HasPrefix(x, "/") {
		return x + "/corral/policy.yaml"
	}
	if h := os.Getenv("HOME"); h != "" {
		return h + "/.config/corral/policy.yaml"
	}
	return ""
}

// LoadStack loads the layers: global (skipped when the file does not
// exist), project (required when named) and invocation (a JSON object,
// when not empty).
func LoadStack(global, project, invocation string) (Stack, error) {
	var s Stack
	if global != "" {
		// Only a missing global file is skipped: one that exists but
		// cannot be read must not silently lift its rules.
		if _, err := os.Stat(global); !errors.Is(err, fs.ErrNotExist) {
			p, err := Load(global)
			if err != nil {
				return nil, err
			}
			s = append(s, Layer{Name: "global", Source: global, Policy: p})
		}
	}
	if project != "" {
		p, err := Load(project)
		if err != nil {
			return nil, err
		}
		s = append(s, Layer{Name: "project", Source: project, Policy: p})
	}
	if strings.TrimSpace(invocation) != "" {
		if !strings.HasPrefix(strings.TrimSpace(invocation), "{") {
			return nil, errors.New("--policy-json: want a JSON object")
		}
		p, err := Parse("--policy-json", []byte(invocation))
		if err != nil {
			return nil, err
		}
		s = append(s, Layer{Name: "invocation", Source: "--policy-json", Policy: p})
	}
	return s, nil
}

// Schema is the policy format as a JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// commandWords are a command rule's words after its leading NAME=value
// assignments, which a rule may name so that it allows them.
func commandWords(command string) []string {
	words := strings.Fields(command)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") {
		words = words[1:]
	}
	return words
}
