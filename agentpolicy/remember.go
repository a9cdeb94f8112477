package agentpolicy

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Remember appends RememberRules(line) to the allow rules of the policy
// file (created if missing), keeping the rest of the file: a YAML file
// keeps its comments, a JSON file stays JSON (see policyfile.go). It
// returns the rules added: none when the file has them all. A line
// RememberRules refuses leaves the file as it was.
func Remember(file, line string) ([]Rule, error) {
	rules, err := RememberRules(line)
	if err != nil {
		return nil, err
	}
	return rememberRules(file, rules)
}

// NetworkTool is the tool name of the rules that remember hosts approved
// over the ask channel: {tool: network, command_glob: "HOST:PORT"}, an
// exact host and port (no wildcard: a star is escaped).
const NetworkTool = "network"

// RememberHost appends the rule allowing exactly host:port to the allow
// rules of the policy file, as Remember does for a command line (the same
// code writes the file). host is a canonical host name or IP address, as
// the egress proxy asked about it.
func RememberHost(file, host string, port int) ([]Rule, error) {
	if host == "" || strings.ContainsAny(host, " \t\n\r/") || port < 1 || port > 65535 {
		return nil, fmt.Errorf("cannot remember host %q port %d", host, port)
	}
	return rememberRules(file, []Rule{{Tool: NetworkTool, CommandGlob: escapeGlob(hostPort(host, port))}})
}

// hostPort is host:port, [v6]:port for an IPv6 address.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// escapeGlob escapes the glob characters of s, so it matches only itself.
func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`).Replace(s)
}

// rememberRules adds rules to the allow rules of the policy file.
func rememberRules(file string, rules []Rule) ([]Rule, error) {
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
	var added []Rule
	for _, r := range rules {
		if hasGlobRule(allow, r.Tool, r.CommandGlob) {
			continue
		}
		node := &yaml.Node{Kind: yaml.MappingNode}
		if r.Tool != "" {
			node.Content = append(node.Content, strNode("tool"), strNode(r.Tool))
		}
		node.Content = append(node.Content, strNode("command_glob"), strNode(r.CommandGlob))
		allow.Content = append(allow.Content, node)
		added = append(added, r)
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

// hasGlobRule reports whether seq holds the rule {command_glob: glob}, or
// {tool: tool, command_glob: glob} when tool is set.
func hasGlobRule(seq *yaml.Node, tool, glob string) bool {
	for _, r := range seq.Content {
		if r.Kind != yaml.MappingNode {
			continue
		}
		fields := map[string]string{}
		for i := 0; i+1 < len(r.Content); i += 2 {
			fields[r.Content[i].Value] = r.Content[i+1].Value
		}
		want := map[string]string{"command_glob": glob}
		if tool != "" {
			want["tool"] = tool
		}
		if maps.Equal(fields, want) {
			return true
		}
	}
	return false
}
