//go:build linux

package tests

// Attacks on the egress proxy that aim at the host itself through its
// non-loopback addresses, and at an origin through requests hidden in
// the body of an allowed one (issue 15, items 5 and 12).
//
// Network rule of these tests: every server they start listens on an
// address assigned to this host (its own interface addresses, or
// 127.0.0.1); traffic never leaves the machine. Addresses that are not
// the host's appear only in unit tests.

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostAddrs are this host's own addresses that are not loopback and not
// link-local (a link-local listener needs a zone): the targets of the
// attacks. IPv4 first.
func hostAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var v4, v6 []netip.Addr
	for _, ia := range ifaddrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		a, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		switch {
		case a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast():
		case a.Is4():
			v4 = append(v4, a)
		default:
			v6 = append(v6, a)
		}
	}
	return append(v4, v6...)
}

// hostServer listens on the same port on every one of addrs and counts the
// connections it accepts.
type hostServer struct {
	port     int
	mu       sync.Mutex
	accepted map[string]int // by listening address
}

func newHostServer(t *testing.T, addrs []netip.Addr) *hostServer {
	t.Helper()
	for range 10 {
		l0, err := net.Listen("tcp", netip.AddrPortFrom(addrs[0], 0).String())
		if err != nil {
			t.Fatal(err)
		}
		s := &hostServer{port: l0.Addr().(*net.TCPAddr).Port, accepted: map[string]int{}}
		lns := []net.Listener{l0}
		for _, a := range addrs[1:] {
			l, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(s.port)).String())
			if err != nil {
				break
			}
			lns = append(lns, l)
		}
		if len(lns) != len(addrs) {
			for _, l := range lns {
				l.Close()
			}
			continue // the port is taken on another address: try another
		}
		for _, l := range lns {
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					s.mu.Lock()
					s.accepted[l.Addr().String()]++
					s.mu.Unlock()
					c.SetDeadline(time.Now().Add(5 * time.Second))
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nHOST-OK\n")
					c.Close()
				}
			}()
		}
		return s
	}
	t.Fatal("found no port free on every host address")
	return nil
}

func (s *hostServer) connections() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.accepted {
		out[k] = v
	}
	return out
}

// v4Notations spells an IPv4 address the ways resolvers and browsers
// accept.
func v4Notations(a netip.Addr) []string {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	return []string{
		a.String(),
		fmt.Sprintf("%d", v),
		fmt.Sprintf("0x%08x", v),
		fmt.Sprintf("0%o.0%o.0%o.0%o", b[0], b[1], b[2], b[3]),
		fmt.Sprintf("0x%x.%d.%d", b[0], b[1], uint32(b[2])<<8|uint32(b[3])),
		fmt.Sprintf("%d.%d", b[0], v&0xffffff),
		"[::ffff:" + a.String() + "]",
		fmt.Sprintf("[::ffff:%x:%x]", v>>16, v&0xffff),
	}
}

// bracket writes an IPv6 address for a URL.
func bracket(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

// TestEgressHostAddrs: with "*:PORT" (and the presets of every other
// category), the proxy refuses the host's own non-loopback addresses, by
// IP literal in any notation, by CONNECT and plain HTTP, and by names
// pinned to them; the server listening there sees no connection, and
// `corral check` answers deny too.
func TestEgressHostAddrs(t *testing.T) {
	t.Parallel()
	addrs := hostAddrs(t)
	requireKernel(t, len(addrs) > 0, "this host has no non-loopback, non-link-local address to attack")
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "reach the host itself through its own interface addresses")
		srv := newHostServer(t, addrs)
		p := srv.port
		f := newNet(t, u, fmt.Sprintf("*:%d", p), fmt.Sprintf("preset:private_network:%d", p),
			fmt.Sprintf("preset:link_local:%d", p), fmt.Sprintf("preset:cloud_metadata:%d", p),
			fmt.Sprintf("pinned4.test:%d", p), fmt.Sprintf("pinned6.test:%d", p), fmt.Sprintf("mapped.test:%d", p))
		var hosts []string
		for _, a := range addrs {
			if a.Is4() {
				hosts = append(hosts, v4Notations(a)...)
			} else {
				hosts = append(hosts, bracket(a))
			}
		}
		var s strings.Builder
		n := 0
		for _, h := range hosts {
			hp := fmt.Sprintf("%s:%d", h, p)
			fmt.Fprintf(&s, "\"$probe\" http %[1]s GET 'http://%[2]s/'\n\"$probe\" http %[1]s CONNECT '%[2]s'\n\"$probe\" http %[1]s GET / '%[2]s'\n", proxyAddr, hp)
			n += 3
		}
		pins := []string{"--resolve", "pinned4.test=" + addrs[0].String()}
		names := []string{"pinned4.test"}
		if addrs[0].Is4() {
			pins = append(pins, "--resolve", "mapped.test=::ffff:"+addrs[0].String())
			names = append(names, "mapped.test")
		}
		if last := addrs[len(addrs)-1]; last.Is6() {
			pins = append(pins, "--resolve", "pinned6.test="+last.String())
			names = append(names, "pinned6.test")
		}
		for _, name := range names {
			fmt.Fprintf(&s, "curl -q -sS --max-time 20 -o /dev/null -w 'CASE get-%[1]s %%{http_code}\\n' http://%[1]s:%[2]d/\n", name, p)
			fmt.Fprintf(&s, "curl -q -sS --max-time 20 -p -o /dev/null -w 'CASE connect-%[1]s %%{http_connect}\\n' http://%[1]s:%[2]d/\n", name, p)
		}
		r := f.run(t, s.String(), pins...)
		lines := probeLines(r.stdout)
		for _, l := range lines {
			if !strings.HasPrefix(l, "ERR HTTP403 ") {
				t.Errorf("probe: %s", l)
			}
		}
		if len(lines) != n {
			t.Errorf("want %d probe lines, got %d:\n%s", n, len(lines), r)
		}
		for k, v := range cases(r.stdout) {
			if v != "403" {
				t.Errorf("curl %s: %s, want 403", k, v)
			}
		}
		if c := srv.connections(); len(c) != 0 {
			t.Errorf("the server on the host's own addresses accepted connections %v:\n%s", c, r)
		}
		evs := readAudit(t, f.audit)
		if got := onlyDenied(t, evs); got != n+2*len(names) {
			t.Errorf("audit: %d denials, want %d", got, n+2*len(names))
		}
		for _, e := range evs {
			if !strings.Contains(e.Reason, "an address of this host") || !strings.Contains(e.Reason, "preset:host") {
				t.Errorf("audit: %s: the reason does not say it is the host's and how to grant it", e)
			}
		}

		// check answers what the proxy enforced, for addresses and URLs,
		// one question a run and as a --stdin stream.
		var questions []string
		for i, h := range hosts {
			for _, q := range [][2]string{{"net", fmt.Sprintf("%s:%d", h, p)}, {"url", fmt.Sprintf("http://%s:%d/x", h, p)}} {
				questions = append(questions, fmt.Sprintf(`{"kind":%q,"arg":%q}`, q[0], q[1]))
				if i > 2 && h != hosts[len(hosts)-1] {
					continue // the stream below asks the rest
				}
				cr := u.run(t, runOpts{args: []string{"check", "--skill", f.skill, q[0], q[1]}})
				if cr.code != 1 || !strings.Contains(cr.stdout, "an address of this host") {
					t.Errorf("check %s %s: exit %d, want 1 (deny) naming the host:\n%s", q[0], q[1], cr.code, cr)
				}
			}
		}
		cr := u.run(t, runOpts{args: []string{"check", "--skill", f.skill, "--stdin"}, stdin: strings.Join(questions, "\n") + "\n"})
		answers := strings.Split(strings.TrimSpace(cr.stdout), "\n")
		if cr.code != 0 || len(answers) != len(questions) {
			t.Fatalf("check --stdin: exit %d, %d answers for %d questions:\n%s", cr.code, len(answers), len(questions), cr)
		}
		for i, a := range answers {
			if !strings.Contains(a, `"action":"deny"`) || !strings.Contains(a, "an address of this host") {
				t.Errorf("check --stdin %s: %s", questions[i], a)
			}
		}
	})
}

// TestEgressHostAddrsGranted: preset:host (or the literal address) is the
// one way to reach the host's own addresses, so the refusal above is the
// category at work and not a broken route.
func TestEgressHostAddrsGranted(t *testing.T) {
	t.Parallel()
	addrs := hostAddrs(t)
	requireKernel(t, len(addrs) > 0, "this host has no non-loopback, non-link-local address to attack")
	users(t, func(t *testing.T, u user) {
		srv := newHostServer(t, addrs)
		f := newNet(t, u, fmt.Sprintf("preset:host:%d", srv.port))
		url := fmt.Sprintf("http://%s:%d/", bracket(addrs[0]), srv.port)
		r := f.run(t, fmt.Sprintf("curl -q -sS --max-time 20 -w 'CASE get %%{http_code}\\n' %s\n", url))
		if c := cases(r.stdout); c["get"] != "200" || !strings.Contains(r.stdout, "HOST-OK") {
			t.Errorf("preset:host: %q, want 200 from the host server:\n%s", c["get"], r)
		}
		cr := u.run(t, runOpts{args: []string{"check", "--skill", f.skill, "url", url}})
		if cr.code != 0 {
			t.Errorf("check url %s with preset:host: exit %d, want 0:\n%s", url, cr.code, cr)
		}
	})
}

// rawOrigin records every byte each connection brings, on 127.0.0.1.
type rawOrigin struct {
	port int
	mu   sync.Mutex
	got  []string
}

func newRawOrigin(t *testing.T) *rawOrigin {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	o := &rawOrigin{port: l.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				data, _ := io.ReadAll(c)
				o.mu.Lock()
				o.got = append(o.got, string(data))
				o.mu.Unlock()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
			}()
		}
	}()
	return o
}

func (o *rawOrigin) received() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// TestEgressSmuggling: from inside the sandbox, bash writes raw requests
// to the proxy whose bodies hide a second request for a path and host
// the policy never saw. Ambiguous framing is refused before anything is
// dialled, a chunked body that breaks half-way cuts the upstream
// connection, and the origin never receives the hidden request.
func TestEgressSmuggling(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "smuggle a request to the origin inside the body of an allowed one")
		o := newRawOrigin(t)
		work := newDir(t, u, "work")
		logs := newDir(t, u, "logs")
		audit := filepath.Join(logs, "audit.jsonl")
		auth := fmt.Sprintf("api.test:%d", o.port)
		skill := writeSkill(t, newDir(t, asSelf, "skills"), "smuggle", fmt.Sprintf(
			"  fs:\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: [%q, \"preset:loopback:%d\"]\n  exec: [bash]\n", auth, o.port))
		hidden := `GET /secret HTTP/1.1\r\nHost: internal-admin\r\n\r\n`
		line := `POST http://` + auth + `/in HTTP/1.1\r\n`
		bodies := []struct{ name, req string }{
			{"two-lengths", line + `Content-Length: 5\r\nContent-Length: 60\r\n\r\nhello` + hidden},
			{"equal-lengths", line + `Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello` + hidden},
			{"empty-length", line + `Content-Length: \r\nTransfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n` + hidden},
			{"signed-length", line + `Content-Length: +5\r\n\r\nhello` + hidden},
			{"te-and-cl", line + `Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n` + hidden},
			{"te-gzip", line + `Transfer-Encoding: gzip\r\n\r\n` + hidden},
			{"connection-drops-cl", line + `Content-Length: 60\r\nConnection: content-length\r\n\r\n` + hidden},
			{"obs-fold", line + `X-A: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello` + hidden},
			{"bare-lf-head", line + `Transfer-Encoding: chunked\nContent-Length: 5\r\n\r\nhello` + hidden},
			{"bare-lf-chunk", line + `Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n` + hidden},
			{"signed-chunk", line + `Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n` + hidden},
			{"chunk-no-crlf", line + `Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX` + hidden + `0\r\n\r\n`},
			{"chunk-overflow", line + `Transfer-Encoding: chunked\r\n\r\nffffffffffffffff5\r\nhello\r\n0\r\n\r\n` + hidden},
		}
		var s strings.Builder
		s.WriteString("trap '' PIPE\n") // the proxy may answer and close before the body is written
		for _, b := range bodies {
			fmt.Fprintf(&s, "exec 3<>/dev/tcp/127.0.0.1/3128\nprintf '%s' >&3\nstatus=\nIFS= read -r -t 20 status <&3\nprintf 'CASE %s %%s\\n' \"${status:0:12}\"\nexec 3<&-\n", b.req, b.name)
		}
		writeFile(t, filepath.Join(work, "attack.sh"), s.String()+"echo "+attackDone+"\n", 0o644)
		own(t, u, filepath.Join(work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", skill, "--audit-log", audit,
			"--resolve", "api.test=127.0.0.1", "--", "bash", "attack.sh"}, dir: work})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the attack script did not run to its end:\n%s", r)
		}
		c := cases(r.stdout)
		for _, b := range bodies {
			if got := c[b.name]; got != "HTTP/1.1 400" && got != "HTTP/1.1 501" {
				t.Errorf("%s: the proxy answered %q, want 400 or 501", b.name, got)
			}
		}
		for _, got := range o.received() {
			if strings.Contains(got, "/secret") || strings.Contains(got, "internal-admin") {
				t.Errorf("the origin received the hidden request: %q", got)
			}
		}
	})
}
