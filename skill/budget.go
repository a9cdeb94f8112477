package skill

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"corral.dev/corral/policyengine"
)

// budget decodes network.budget:
//
//	budget:
//	  each:  {requests: 100, sent: 10m}   # every host on its own
//	  hosts:                              # one count per pattern, shared
//	    "api.example.com:443": {requests: 20, sent: 1m}
//	  total: {sent: 50m}                  # the whole run
func (d *decoder) budget(b *policyengine.Budget, n *yaml.Node, field string) error {
	return d.mapping(n, field, map[string]func(*yaml.Node, string) error{
		"each":  func(n *yaml.Node, f string) (err error) { b.Each, err = d.cap(n, f); return err },
		"total": func(n *yaml.Node, f string) (err error) { b.Total, err = d.cap(n, f); return err },
		"hosts": func(n *yaml.Node, f string) (err error) { b.Hosts, err = d.hostCaps(n, f); return err },
	})
}

// cap decodes {requests: N, sent: SIZE}; at least one must be given.
func (d *decoder) cap(n *yaml.Node, field string) (policyengine.Cap, error) {
	var c policyengine.Cap
	err := d.mapping(n, field, map[string]func(*yaml.Node, string) error{
		"requests": func(n *yaml.Node, f string) error {
			v, err := d.count(n, f)
			c.Requests = int64(v)
			return err
		},
		"sent": func(n *yaml.Node, f string) (err error) { c.Sent, err = d.bytes(n, f); return err },
	})
	if err == nil && c.IsZero() {
		err = d.errorf(n, field, "caps nothing: give requests (a count) or sent (a size such as 10m)")
	}
	return c, err
}

// hostCaps decodes a mapping of host patterns (as in network.allow) to
// caps, sorted by the pattern's canonical form.
func (d *decoder) hostCaps(n *yaml.Node, field string) ([]policyengine.HostCap, error) {
	n = deref(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errorf(n, field, "must be a mapping of host patterns (as in network.allow) to caps, not %s", kindName(n))
	}
	var out []policyengine.HostCap
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := join(field, k.Value)
		if k.Kind != yaml.ScalarNode {
			return nil, d.errorf(k, field, "keys must be host patterns such as \"api.example.com:443\"")
		}
		hp, err := policyengine.ParseHostPattern(k.Value)
		if err != nil {
			return nil, d.errorf(k, sub, "%v", err)
		}
		pattern := hp.String()
		if slices.ContainsFunc(out, func(h policyengine.HostCap) bool { return h.Pattern == pattern }) {
			return nil, d.errorf(k, sub, "defined twice (as %s)", pattern)
		}
		c, err := d.cap(v, sub)
		if err != nil {
			return nil, err
		}
		out = append(out, policyengine.HostCap{Pattern: pattern, Cap: c})
	}
	slices.SortFunc(out, func(a, b policyengine.HostCap) int { return strings.Compare(a.Pattern, b.Pattern) })
	return out, nil
}

// bytes decodes a size with no minimum (a budget of 64k is sensible).
func (d *decoder) bytes(n *yaml.Node, field string) (int64, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return 0, d.errorf(n, field, "must be a size such as 10m or 65536, not %s", kindName(n))
	}
	v, err := ParseBytes(n.Value)
	if err != nil {
		return 0, d.errorf(n, field, "%v", err)
	}
	return v, nil
}
