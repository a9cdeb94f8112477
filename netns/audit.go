package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

// Audit collects a run's proxy events: every event goes to the optional
// JSON-lines writer, and denials are kept for the report and the summary.
type Audit struct {
	mu      sync.Mutex
	w       io.Writer
	err     error
	denials []Event
	dropped int
}

// maxKept bounds the denials held in memory; the log file has them all.
const maxKept = 1000

// NewAudit returns an Audit writing JSON lines to w (nil: none).
func NewAudit(w io.Writer) *Audit { return &Audit{w: w} }

// maxLogged bounds each string of a recorded event: the URL, host and
// method are the sandbox's choice, and must not fill the log, the report
// or the summary.
const maxLogged = 2048

// Record is a Config.Audit function.
func (a *Audit) Record(ev Event) {
	for _, s := range []*string{&ev.Method, &ev.Host, &ev.URL, &ev.Addr, &ev.Rule, &ev.Reason} {
		*s = printable.Clip(*s, maxLogged)
	}
	line, _ := json.Marshal(ev)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.w != nil && a.err == nil {
		_, a.err = a.w.Write(append(line, '\n'))
	}
	if ev.Decision != "allow" {
		if len(a.denials) < maxKept {
			a.denials = append(a.denials, ev)
		} else {
			a.dropped++
		}
	}
}

// Denials returns the refused requests so far, and how many more there
// were beyond those kept.
func (a *Audit) Denials() ([]Event, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Event(nil), a.denials...), a.dropped
}

// Err is the first error writing the log.
func (a *Audit) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Pinned answers names from a fixed table (corral's --resolve flag, like
// curl's) and asks Next for the rest. Pinned addresses are still checked
// like any other: pinning a name to 127.0.0.1 does not grant loopback.
type Pinned struct {
	Names map[string][]netip.Addr
	Next  Resolver
}

// LookupNetIP implements Resolver.
func (p *Pinned) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if addrs, ok := p.Names[canonicalHost(host)]; ok {
		return append([]netip.Addr(nil), addrs...), nil
	}
	if p.Next == nil {
		return nil, fmt.Errorf("%s is not pinned", host)
	}
	return p.Next.LookupNetIP(ctx, network, host)
}

// ParsePin parses one --resolve value, NAME=ADDR[,ADDR...].
func ParsePin(s string) (string, []netip.Addr, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || list == "" {
		return "", nil, fmt.Errorf("--resolve %q: write NAME=ADDR[,ADDR...]", s)
	}
	host, err := policyengine.CanonicalHost(name)
	if err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %v", s, err)
	}
	var addrs []netip.Addr
	for _, a := range strings.Split(list, ",") {
		ip, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(a), "[]"))
		if err != nil {
			return "", nil, fmt.Errorf("--resolve %q: %q is not an IP address", s, a)
		}
		addrs = append(addrs, ip)
	}
	return host, addrs, nil
}

// SystemResolver is the default resolver: Go's own, reading
// /etc/resolv.conf and /etc/hosts, with no cgo or NSS modules.
func SystemResolver() Resolver { return &net.Resolver{PreferGo: true} }

// Listen listens on addr over plain TCP. (Go's listeners default to
// MPTCP, which the proxy has no use for.)
func Listen(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return ln, nil
}
