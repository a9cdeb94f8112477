package policyengine

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// CheckNetwork decides whether a connection to host:port is allowed. host
// may be a name or an IP literal in any notation; address categories
// (loopback, private, link-local, cloud metadata) are granted only by a
// preset:<category> rule or a rule naming that IP.
func (e *Engine) CheckNetwork(host string, port int) Decision {
	canonical, cat, addr, isIP := Classify(host)
	if cat == CatUnparseable {
		return Decision{Action: Deny, Reason: fmt.Sprintf("host %q is neither an IP address nor a valid DNS name", host)}
	}
	if isIP {
		cat = e.addrCategory(addr, cat)
	}
	return e.checkClassified(canonical, addr, isIP, cat, port)
}

// addrCategory is cat, the address's own category, or CatHost when the
// engine's HostAddrs says addr (or the IPv4 address it carries) is this
// machine's. Loopback stays loopback.
func (e *Engine) addrCategory(addr netip.Addr, cat Category) Category {
	return HostCategory(e.host, addr, cat)
}

// HostCategory is cat, the category of addr, or CatHost when h says addr
// (or the IPv4 address it carries to) is this machine's. Loopback stays
// loopback; a nil h knows no host addresses.
func HostCategory(h HostAddrs, addr netip.Addr, cat Category) Category {
	if h == nil || cat == CatLoopback || cat == CatUnparseable {
		return cat
	}
	if h.IsHost(addr) {
		return CatHost
	}
	if v4, ok := EmbeddedIPv4(addr); ok && h.IsHost(v4) {
		return CatHost
	}
	return cat
}

// checkClassified decides for a host already canonicalised and
// classified: canonical is the name or the address's string form.
func (e *Engine) checkClassified(canonical string, addr netip.Addr, isIP bool, cat Category, port int) Decision {
	if port < 1 || port > 65535 {
		return Decision{Action: Deny, Reason: fmt.Sprintf("port %d is out of range 1-65535", port)}
	}
	for _, rules := range [2][]hostRule{e.exact[canonical], e.hosts} {
		for _, r := range rules {
			if r.pattern.matchClassified(canonical, addr, isIP, cat, port) {
				return Decision{Action: Allow, Reason: joinHostPort(canonical, port) + " may be reached" + r.why, Rule: r.entry.Value}
			}
		}
	}
	target := joinHostPort(canonical, port)
	if cat != CatNone {
		return Decision{Action: Deny, Reason: target + " is " + categoryWords[cat] + ", which host patterns never grant; to allow it, add " +
			`"preset:` + string(cat) + `" or "` + target + `" to permissions.network.allow`}
	}
	if len(e.perms.Network) == 0 {
		return Decision{Action: Deny, Unlisted: true, Reason: fmt.Sprintf("%s is not reachable: no skill grants network access; to allow it, add %q to permissions.network.allow", target, target)}
	}
	return Decision{Action: Deny, Unlisted: true, Reason: target + " is not in the network allow list of skills " + e.netFrom + `; to allow it, add "` + target + `" to permissions.network.allow`}
}

var categoryWords = map[Category]string{
	CatLoopback: "a loopback address", CatHost: "an address of this host", CatPrivate: "a private network address",
	CatLinkLocal: "a link-local address", CatMetadata: "a cloud metadata address", CatUnparseable: "an unparseable address",
}

// exactHost returns the host of an exact-name pattern ("api.a.com:443").
func exactHost(p HostPattern) (string, bool) {
	if p.Preset() != CatNone || p.IsIP() {
		return "", false
	}
	s := p.String()
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || strings.HasPrefix(s, "*") {
		return "", false
	}
	return s[:i], true
}

// Canonical hosts hold only letters, digits, '.', '-', '_', ':', so
// reasons quote them without escaping.

// CheckHostPort decides for a "host:port" or "[v6]:port" destination.
func (e *Engine) CheckHostPort(hostport string) (Decision, error) {
	host, port, err := SplitHostPort(hostport)
	if err != nil {
		return Decision{}, err
	}
	return e.CheckNetwork(host, port), nil
}

// CheckURL decides whether the URL may be fetched.
func (e *Engine) CheckURL(raw string) Decision {
	u, err := ParseURL(raw)
	if err != nil {
		return Decision{Action: Deny, Reason: fmt.Sprintf("cannot check URL: %v", err)}
	}
	if u.Scheme == "http" {
		// A plain-HTTP request goes through corral's proxy, which
		// refuses a path origins would read in ways it cannot check.
		if _, err := RequestPath(u.RawPath); err != nil {
			return Decision{Action: Deny, Reason: u.String() + ": the egress proxy refuses this plain-HTTP request (400): " + err.Error()}
		}
	}
	d := e.CheckNetwork(u.Host, u.Port)
	d.Reason = u.String() + ": " + d.Reason
	return d
}

// SplitHostPort splits "host:port" and "[v6]:port". It does not use the
// net package to keep its package init off the sandbox launch path.
func SplitHostPort(s string) (host string, port int, err error) {
	var p string
	if strings.HasPrefix(s, "[") {
		end := strings.LastIndex(s, "]")
		if end < 0 || !strings.HasPrefix(s[end+1:], ":") {
			return "", 0, fmt.Errorf("%q is not host:port ([v6]:port for IPv6)", s)
		}
		host, p = s[1:end], s[end+2:]
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return "", 0, fmt.Errorf("%q has no port: write host:port", s)
		}
		host, p = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("%q: write IPv6 addresses in brackets, as [::1]:443", s)
		}
	}
	if host == "" {
		return "", 0, errors.New("empty host")
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in range 1-65535", p)
	}
	return host, n, nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// CheckAddr decides whether addr, one of the addresses host resolved to,
// may be dialled on port once CheckNetwork allowed host by name. A public
// address is allowed with its name. An address in a category (loopback,
// private network, link-local, cloud metadata) needs a rule that grants
// that category or that very address: a name pattern such as
// "api.example.com:443" never lets a name that resolves to 127.0.0.1 or
// 169.254.169.254 through.
func (e *Engine) CheckAddr(host string, addr netip.Addr, port int) Decision {
	addr = normalizeAddr(addr)
	cat := e.addrCategory(addr, CategoryOf(addr))
	if cat == CatNone {
		return Decision{Action: Allow, Reason: joinHostPort(addr.String(), port) + " is a public address"}
	}
	d := e.checkClassified(addr.String(), addr, true, cat, port)
	if d.Action != Allow {
		target := joinHostPort(addr.String(), port)
		d.Reason = host + " resolves to " + target + ", " + categoryWords[cat] + "; to allow it, add " +
			`"preset:` + string(cat) + ":" + strconv.Itoa(port) + `" or "` + target + `" to permissions.network.allow`
	}
	return d
}

// ParseBindPort checks one network.bind entry: a TCP port from 1 to
// 65535 in decimal, or "*" for every port. It returns the entry in its
// canonical form ("08080" is "8080").
func ParseBindPort(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return s, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strings.HasPrefix(s, "+") {
		return "", fmt.Errorf("%q is not a TCP port (1-65535) or \"*\"", s)
	}
	return strconv.Itoa(n), nil
}

// LoopbackPorts are the ports network.allow grants on the host's
// loopback by name ("preset:loopback:8080"), none of them a network.bind
// port (a connect to such a port inside the sandbox is its own server's),
// with no port given twice. A preset with no port names none.
func (p Permissions) LoopbackPorts() []int {
	bind, anyBind := p.BindPorts()
	if anyBind {
		return nil
	}
	var ports []int
	for _, e := range p.Network {
		v := strings.ToLower(e.Value)
		rest, ok := strings.CutPrefix(v, "preset:loopback:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > 65535 || slices.Contains(bind, n) || slices.Contains(ports, n) {
			continue
		}
		ports = append(ports, n)
	}
	slices.Sort(ports)
	return ports
}

// BindPorts are the ports p lets the command listen on, and whether it
// may listen on any.
func (p Permissions) BindPorts() (ports []int, any bool) {
	for _, e := range p.Bind {
		if e.Value == "*" {
			return nil, true
		}
		if n, err := strconv.Atoi(e.Value); err == nil {
			ports = append(ports, n)
		}
	}
	return ports, false
}
