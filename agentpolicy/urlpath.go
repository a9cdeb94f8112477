package agentpolicy

import (
	"corral.dev/corral/internal/glob"
	"corral.dev/corral/policyengine"
)

// decide applies first-match-wins (deny_override, allow_override, deny,
// allow, default) to every reading of u's path an origin may take
// (policyengine.PathReadings), and allows only where each reading is
// allowed: a deny rule is not dodged by an encoding the origin decodes
// ("/public/..%2fadmin" is /admin to a lenient origin), and an allow rule
// about /public/* does not let through what an origin serves as /admin.
func (c compiledURL) decide(u policyengine.URL) policyengine.Decision {
	r := u.Readings()
	d := c.decideMode(atPath(u, r.Canonical), false)
	if !r.Ambiguous() || d.Action != policyengine.Allow {
		return d
	}
	other := c.decideMode(atPath(u, r.Decoded), false)
	if other.Action == policyengine.Allow {
		return d
	}
	other.Reason += "; an origin may read the path " + r.Canonical + " as " + r.Decoded +
		" (decoding every escape, cutting ';' parameters), and every reading must be allowed"
	return other
}

// atPath is u with its path read as p (a reading, which reads as itself).
func atPath(u policyengine.URL, p string) policyengine.URL {
	u.Path, u.RawPath = p, p
	return u
}

// normalizeEscapes writes the escapes in a rule's literal path as the
// canonical reading writes them ("%61" is "a", "%2f" is "%2F"), so a rule
// matches whatever case or over-encoding a URL uses. A '%' that starts no
// escape stays: it may stand before a wildcard.
func (p *pattern) normalizeEscapes() {
	for i, t := range p.toks {
		if t.Kind != glob.Literal {
			continue
		}
		b := []byte{}
		s := t.Text
		for j := 0; j < len(s); j++ {
			if s[j] == '%' && j+2 < len(s) && isHex(s[j+1]) && isHex(s[j+2]) {
				b = append(b, policyengine.NormalizeEscapes(s[j:j+3])...)
				j += 2
				continue
			}
			b = append(b, s[j])
		}
		p.toks[i].Text = string(b)
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
