package agentpolicy

import (
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// RememberCommands are the command rules a "remember" answer adds for a
// shell line: the first one or two words of each segment ("git push",
// "npm test", "tee"), without duplicates. Two words are kept for programs
// that take a subcommand, when the second word looks like one.
func RememberCommands(line string) ([]string, error) {
	segs, err := segments(line)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range segs {
		if wrapperPrograms[s.base[0]] {
			continue // what they run is its own segment; the wrapper alone grants nothing
		}
		cmd := s.words[0]
		if len(s.words) > 1 && subcommandPrograms[s.words[0]] && subcommand(s.words[1]) {
			cmd += " " + s.words[1]
		}
		if s.assigns && len(s.awords) > len(s.words) {
			// Allow rules match the assignments too: VAR=value can
			// make the program run another.
			cmd = strings.Join(s.awords[:len(s.awords)-len(s.words)], " ") + " " + cmd
		}
		if !contains(out, cmd) {
			out = append(out, cmd)
		}
	}
	return out, nil
}

// subcommandPrograms take a subcommand as their first argument.
var subcommandPrograms = map[string]bool{"git": true, "npm": true, "npx": true, "yarn": true, "pnpm": true, "bun": true,
	"cargo": true, "go": true, "docker": true, "podman": true, "kubectl": true, "helm": true, "pip": true, "pip3": true,
	"uv": true, "poetry": true, "gh": true, "terraform": true, "make": true, "deno": true, "dotnet": true, "mvn": true,
	"gradle": true, "systemctl": true, "brew": true, "apt": true, "apt-get": true, "rustup": true, "conda": true}

// wrapperPrograms run another program; remembering them would allow
// anything, so a remembered line keeps only what they run.
var wrapperPrograms = map[string]bool{"sudo": true, "doas": true, "env": true, "sh": true, "bash": true, "dash": true,
	"zsh": true, "eval": true, "exec": true, "xargs": true, "timeout": true, "nice": true, "nohup": true, "setsid": true,
	"time": true, "command": true, "builtin": true, "stdbuf": true, "ionice": true, "taskset": true, "chroot": true,
	"flock": true, "unbuffer": true, "watch": true, "busybox": true, "ksh": true, "mksh": true, "ash": true,
	"toybox": true, "fish": true, "csh": true, "tcsh": true, "rbash": true, "yash": true, "posh": true,
	"script": true, "su": true, "runuser": true, "chrt": true}

func subcommand(w string) bool {
	if w == "" || w[0] == '-' || w[len(w)-1] == '-' {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Remember appends {command: ...} allow rules for line's segments to the
// policy file (created if missing), keeping the rest of the file: a YAML
// file keeps its comments, a JSON file stays JSON (see policyfile.go). It
// returns the rules added.
func Remember(file, line string) ([]string, error) {
	cmds, err := RememberCommands(line)
	if err != nil {
		return nil, err
	}
	pf, err := readPolicyFile(file)
	if err != nil {
		return nil, err
	}
	data := pf.data
	if pf.info == nil {
		data = []byte("version: 1\n")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	var keep []byte // a blank or comment-only file's text, kept above the rules
	if doc.Kind == 0 || len(doc.Content) == 0 {
		if pf.format == formatYAML {
			keep = data
			if len(keep) > 0 && keep[len(keep)-1] != '\n' {
				keep = append(keep, '\n')
			}
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	} else if _, err := Parse(file, data); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("policy %s: not a mapping", file)
	}
	perms := child(root, "permissions", yaml.MappingNode)
	allow := child(perms, "allow", yaml.SequenceNode)
	allow.Style = 0
	var added []string
	for _, c := range cmds {
		if hasCommandRule(allow, c) {
			continue
		}
		allow.Content = append(allow.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			strNode("command"), strNode(c)}})
		added = append(added, c)
	}
	if len(added) == 0 {
		return nil, nil
	}
	out, err := pf.encode(&doc, keep)
	if err != nil {
		return nil, err
	}
	if _, err := Parse(file, out); err != nil {
		return nil, fmt.Errorf("remembering would break the policy: %w", err)
	}
	if pf.format == formatJSON && !json.Valid(out) {
		return nil, fmt.Errorf("policy %s: remembering would not write JSON", file)
	}
	if err := pf.replace(out); err != nil {
		return nil, err
	}
	return added, nil
}

// strNode is a string scalar, quoted on output where YAML would read it
// as something else ("true", "1").
func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// child returns the value node of key in m, adding it when missing.
func child(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				v.Kind, v.Tag, v.Value = kind, "", ""
			}
			return v
		}
	}
	v := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

func hasCommandRule(seq *yaml.Node, cmd string) bool {
	for _, r := range seq.Content {
		if r.Kind != yaml.MappingNode || len(r.Content) != 2 {
			continue
		}
		if r.Content[0].Value == "command" && r.Content[1].Value == cmd {
			return true
		}
	}
	return false
}
