//go:build linux

package tests

// Attacks on the egress proxy: the one way out of the sandbox when a skill
// has network.allow (`corral exec` serves it at 127.0.0.1:3128 and
// [::1]:3128 inside the sandbox), and `corral proxy` run alone.
//
// Network rule of these tests: they talk only to servers they start on the
// host's 127.0.0.1 and [::1]. The few other addresses below are either
// targets the sandbox has no route to (it has only lo) or resolver answers
// and IP literals the proxy must refuse before it dials anything; the
// tests check from the audit log that no dial happened.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ---- origin: the host server the sandbox tries to reach ----

// origin is an HTTP server on the host's 127.0.0.1 and, when the host has
// IPv6, on [::1] at the same port. It counts the connections it accepts,
// records each one's request line and answers "ORIGIN-OK <line>".
type origin struct {
	port  int
	addrs []string // 127.0.0.1:port first

	mu        sync.Mutex
	accepted  int
	sentinels int
	lines     []string
}

var hostHasIPv6 = sync.OnceValue(func() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
})

func newOrigin(t *testing.T) *origin {
	t.Helper()
	for range 10 {
		l4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o := &origin{port: l4.Addr().(*net.TCPAddr).Port}
		lns := []net.Listener{l4}
		if hostHasIPv6() {
			l6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", o.port))
			if err != nil {
				l4.Close()
				continue // the port is taken on [::1]: try another
			}
			lns = append(lns, l6)
		}
		for _, l := range lns {
			t.Cleanup(func() { l.Close() })
			o.addrs = append(o.addrs, l.Addr().String())
			go o.serve(l)
		}
		return o
	}
	t.Fatal("found no port free on both 127.0.0.1 and [::1]")
	return nil
}

func (o *origin) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		o.mu.Lock()
		o.accepted++
		o.mu.Unlock()
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(io.LimitReader(c, 64<<10))
			first, _ := br.ReadString('\n')
			first = strings.TrimSpace(first)
			o.mu.Lock()
			o.lines = append(o.lines, first)
			o.mu.Unlock()
			for {
				l, err := br.ReadString('\n')
				if err != nil || strings.TrimSpace(l) == "" {
					break
				}
			}
			body := "ORIGIN-OK " + first + "\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		}()
	}
}

// connections returns how many connections the origin accepted besides
// its own sentinels. It first connects to every listener itself and waits
// for the answer: the accept queue is FIFO, so every connection made
// before (by a command that has ended) has been counted by then.
func (o *origin) connections(t *testing.T) int {
	t.Helper()
	for _, a := range o.addrs {
		c, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			t.Fatalf("sentinel: %v", err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "SENTINEL / HTTP/1.1\r\n\r\n")
		answer, _ := io.ReadAll(c)
		c.Close()
		if !bytes.Contains(answer, []byte("ORIGIN-OK SENTINEL")) {
			t.Fatalf("sentinel: the origin at %s did not answer: %q", a, answer)
		}
		o.mu.Lock()
		o.sentinels++
		o.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.accepted - o.sentinels
}

// requests returns the request lines the origin saw, sentinels excepted.
func (o *origin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, l := range o.lines {
		if !strings.HasPrefix(l, "SENTINEL") {
			out = append(out, l)
		}
	}
	return out
}

// untouched fails the test when the origin accepted any connection.
func (o *origin) untouched(t *testing.T, r result) {
	t.Helper()
	if n := o.connections(t); n != 0 {
		t.Errorf("the origin on the host (%v) accepted %d connection(s), requests %q:\n%s", o.addrs, n, o.requests(), r)
	}
}

// ---- a sandbox with network.allow ----

// netFixture is a skill granting the work dir, network.allow rules and
// exec [curl, sh, probe], with the audit log and report in a folder the
// sandbox cannot see.
type netFixture struct {
	u                    user
	work, probe, skill   string
	audit, report, tools string
}

// newNet makes the fixture; with no allow rules the skill has no network
// key at all.
func newNet(t *testing.T, u user, allow ...string) netFixture {
	t.Helper()
	f := netFixture{u: u, work: newDir(t, u, "work"), tools: newDir(t, asSelf, "tools")}
	logs := newDir(t, u, "logs")
	f.audit, f.report = filepath.Join(logs, "audit.jsonl"), filepath.Join(logs, "report.json")
	f.probe = installProbe(t, f.tools)
	perms := "  fs:\n    write: [\"$WORK_DIR/**\"]\n"
	if len(allow) > 0 {
		q := make([]string, len(allow))
		for i, a := range allow {
			q[i] = strconv.Quote(a)
		}
		perms += "  network:\n    allow: [" + strings.Join(q, ", ") + "]\n"
	}
	perms += "  exec: [curl, sh, " + f.probe + "]\n"
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "nettest", perms)
	return f
}

// run runs script as attack.sh through `corral exec` with the audit log,
// the report and flags; "$probe" in the script is the probe. It fails the
// test unless the script ran to its end and corral exited 0 (the script's
// status).
func (f netFixture) run(t *testing.T, script string, flags ...string) result {
	t.Helper()
	writeFile(t, filepath.Join(f.work, "attack.sh"), "probe="+f.probe+"\n"+script+"\necho "+attackDone+"\n", 0o644)
	own(t, f.u, filepath.Join(f.work, "attack.sh"))
	args := []string{"exec", "--work-dir", f.work, "--audit-log", f.audit, "--report", f.report}
	if f.skill != "" {
		args = append(args, "--skill", f.skill)
	}
	args = append(append(append(args, flags...), "--"), "sh", "attack.sh")
	r := f.u.run(t, runOpts{args: args, dir: f.work})
	if !strings.Contains(r.stdout, attackDone) || r.code != 0 {
		t.Fatalf("the attack script did not run to its end and exit 0:\n%s", r)
	}
	return r
}

// proxyEvent is one line of the audit log (and one proxy_denials entry).
type proxyEvent struct {
	Method   string `json:"method"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Addr     string `json:"addr"`
	Decision string `json:"decision"`
	Status   int    `json:"status"`
	Rule     string `json:"rule"`
	Reason   string `json:"reason"`
	Via      string `json:"via"`
}

func (e proxyEvent) String() string {
	return fmt.Sprintf("%s %s port %d: %s %d addr %q (%s)", e.Method, e.Host, e.Port, e.Decision, e.Status, e.Addr, e.Reason)
}

func readAudit(t *testing.T, file string) []proxyEvent {
	t.Helper()
	var evs []proxyEvent
	if _, err := os.Stat(file); os.IsNotExist(err) {
		return nil // the log is created at its first event
	}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, file)), "\n") {
		if l == "" {
			continue
		}
		var e proxyEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit log line %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// proxyDenials reads proxy_denials from the run's report.
func (f netFixture) proxyDenials(t *testing.T) []proxyEvent {
	t.Helper()
	var rep struct {
		ProxyDenials []proxyEvent `json:"proxy_denials"`
	}
	data := readFile(t, f.report)
	if err := json.Unmarshal([]byte(data), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	return rep.ProxyDenials
}

// onlyDenied checks that every audited request was refused with 403 before
// any dial (no address), and returns how many there were.
func onlyDenied(t *testing.T, evs []proxyEvent) int {
	t.Helper()
	for _, e := range evs {
		if e.Decision != "deny" || e.Status != 403 || e.Addr != "" {
			t.Errorf("audit: want only 403 denials without a dial, got %s", e)
		}
	}
	return len(evs)
}

// cases collects the script's "CASE <key> <value>" lines.
func cases(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "CASE" {
			m[f[1]] = strings.Join(f[2:], " ")
		}
	}
	return m
}

// ---- corral exec with network.allow ----

// TestNetworkProxyAllowed fetches from an allowed host through the proxy,
// with plain HTTP (the proxy environment) and through a CONNECT tunnel.
// Not an attack: the control that the way out works, so the denials below
// mean something.
func TestNetworkProxyAllowed(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		o := newOrigin(t)
		f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
		tok := token("path")
		r := f.run(t, fmt.Sprintf(`
echo "ENV $http_proxy $HTTP_PROXY $https_proxy $HTTPS_PROXY $all_proxy $ALL_PROXY $no_proxy $NO_PROXY"
curl -q -sS --max-time 20 -w 'CASE plain %%{http_code}\n' http://api.test:%[1]d/plain-%[2]s
curl -q -sS --max-time 20 -p -w 'CASE tunnel %%{http_connect}/%%{http_code}\n' http://api.test:%[1]d/tunnel-%[2]s
`, o.port, tok), "--resolve", "api.test=127.0.0.1")
		env := strings.Repeat(sandboxProxyURL+" ", 6) + "localhost,127.0.0.1,::1 localhost,127.0.0.1,::1"
		if !strings.Contains(r.stdout, "ENV "+env+"\n") {
			t.Errorf("the proxy environment is not %q:\n%s", env, r)
		}
		c := cases(r.stdout)
		if c["plain"] != "200" || c["tunnel"] != "200/200" {
			t.Errorf("plain HTTP %q (want 200), CONNECT %q (want 200/200):\n%s", c["plain"], c["tunnel"], r)
		}
		for _, p := range []string{"/plain-" + tok, "/tunnel-" + tok} {
			if !strings.Contains(r.stdout, "ORIGIN-OK GET "+p+" HTTP/1.1") {
				t.Errorf("the command did not get the origin's answer for %s:\n%s", p, r)
			}
		}
		if got := o.requests(); len(got) != 2 {
			t.Errorf("the origin saw %q, want the two requests", got)
		}
		want := map[string]bool{"GET": false, "CONNECT": false}
		for _, e := range readAudit(t, f.audit) {
			if e.Decision == "allow" && e.Host == "api.test" && e.Port == o.port && e.Status == 200 &&
				e.Addr == fmt.Sprintf("127.0.0.1:%d", o.port) && e.Rule != "" {
				want[e.Method] = true
			} else {
				t.Errorf("audit: unexpected event %s", e)
			}
		}
		for m, ok := range want {
			if !ok {
				t.Errorf("audit: no allow event for %s api.test:%d", m, o.port)
			}
		}
		if d := f.proxyDenials(t); len(d) != 0 || strings.Contains(r.stderr, "refused") {
			t.Errorf("denials reported for allowed requests: %v\n%s", d, r)
		}
	})
}

// Where the proxy listens inside the sandbox, and what HTTP_PROXY and
// friends say there.
const (
	proxyAddr       = "127.0.0.1:3128"
	sandboxProxyURL = "http://" + proxyAddr
)

// TestNetworkProxyDenied asks the proxy for a host and for a port that no
// rule grants: 403 with a reason naming host:port and the rule that would
// grant it, nothing reaches the origin, and the report, the audit log and
// the stderr summary list each one.
func TestNetworkProxyDenied(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "reach a host and a port outside network.allow through the proxy")
		o, o2 := newOrigin(t), newOrigin(t)
		f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
		r := f.run(t, fmt.Sprintf(`
curl -q -sS --max-time 20 -D - -w 'CASE host %%{http_code}\n' http://other.test:%[1]d/
curl -q -sS --max-time 20 -D - -w 'CASE port %%{http_code}\n' http://api.test:%[2]d/
curl -q -sS --max-time 20 -p -w 'CASE tunnel %%{http_connect}\n' http://other.test:%[1]d/
`, o.port, o2.port), "--resolve", "api.test=127.0.0.1", "--resolve", "other.test=127.0.0.1")
		c := cases(r.stdout)
		if c["host"] != "403" || c["port"] != "403" || c["tunnel"] != "403" {
			t.Errorf("want 403 for the other host, the other port and the CONNECT, got %v:\n%s", c, r)
		}
		denied := []struct{ method, hostPort string }{
			{"GET", fmt.Sprintf("other.test:%d", o.port)},
			{"GET", fmt.Sprintf("api.test:%d", o2.port)},
			{"CONNECT", fmt.Sprintf("other.test:%d", o.port)},
		}
		for _, d := range denied[:2] {
			grant := `to allow it, add "` + d.hostPort + `" to permissions.network.allow`
			if !strings.Contains(r.stdout, "X-Corral-Reason: "+d.hostPort+" is not in the network allow list") ||
				!strings.Contains(r.stdout, "\n"+d.hostPort+" is not in the network allow list of skills nettest; "+grant+"\n") {
				t.Errorf("no X-Corral-Reason header and one-line body for %s saying %s:\n%s", d.hostPort, grant, r)
			}
		}
		o.untouched(t, r)
		o2.untouched(t, r)
		if !denialSummary.MatchString(r.stderr) || !strings.Contains(r.stderr, " 3 request(s):\n") {
			t.Errorf("no denial summary on stderr:\n%s", r)
		}
		reported := f.proxyDenials(t)
		audited := readAudit(t, f.audit)
		if onlyDenied(t, audited) != 3 || len(reported) != 3 {
			t.Errorf("want 3 denials in the audit log and the report, got %v and %v", audited, reported)
		}
		for _, d := range denied {
			if !strings.Contains(r.stderr, "\n  "+d.method+" "+d.hostPort+": 403 ") {
				t.Errorf("the stderr summary does not list %s %s:\n%s", d.method, d.hostPort, r)
			}
			found := false
			for _, e := range reported {
				found = found || (e.Method == d.method && fmt.Sprintf("%s:%d", e.Host, e.Port) == d.hostPort &&
					e.Status == 403 && strings.Contains(e.Reason, "permissions.network.allow"))
			}
			if !found {
				t.Errorf("report proxy_denials does not list %s %s: %v", d.method, d.hostPort, reported)
			}
		}
	})
}

// denialSummary starts the summary of refused requests on stderr.
var denialSummary = regexp.MustCompile(`(?m)^corral: the egress proxy refused .*\d+ request\(s\):$`)

// curlNotations are spellings of loopback and metadata addresses that curl
// accepts in a URL (it normalises some itself).
var curlNotations = []string{"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "[::1]",
	"[::ffff:127.0.0.1]", "169.254.169.254", "2852039166", "localhost", "0.0.0.0", "[::]"}

// rawNotations go to the proxy exactly as written (the probe sends the
// request head itself).
var rawNotations = []string{"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7F.1",
	"0177.0.0.1", "0177.1", "017700000001", "127.000.000.001", "127.0.0.1.", "[::1]", "[0:0:0:0:0:0:0:1]",
	"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1%25lo]", "0.0.0.0", "0", "[::]", "[::ffff:0.0.0.0]",
	"localhost", "LocalHost.", "169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376",
	"[::ffff:169.254.169.254]"}

// hostsFileLoopbackNames returns up to three names that the host's
// /etc/hosts maps to loopback, beyond the ones the policy knows by name.
// The proxy resolves them from that file alone (nsswitch says files
// first), so no DNS query leaves the host.
func hostsFileLoopbackNames() []string {
	ns, _ := os.ReadFile("/etc/nsswitch.conf")
	filesFirst := false
	for _, l := range strings.Split(string(ns), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "hosts:" {
			filesFirst = f[1] == "files"
		}
	}
	hosts, _ := os.ReadFile("/etc/hosts")
	if !filesFirst {
		return nil
	}
	var names []string
	for _, l := range strings.Split(string(hosts), "\n") {
		l, _, _ = strings.Cut(l, "#")
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if a, err := netip.ParseAddr(f[0]); err != nil || !a.IsLoopback() {
			continue
		}
		for _, n := range f[1:] {
			if len(names) < 3 && !strings.Contains(n, "localhost") && !strings.HasPrefix(n, "ip6-") {
				names = append(names, n)
			}
		}
	}
	return names
}

// TestNetworkProxyLoopbackNotations asks the proxy, under a rule that
// grants any name ("*:PORT"), for the host's loopback and the metadata
// address in every notation: with curl -x, with raw request heads as
// absolute URIs, CONNECT authorities and origin-form Host headers, and by
// names /etc/hosts maps to 127.0.0.1. Every one must be a 403 before any
// dial, and the origin on the host's 127.0.0.1 and [::1] sees nothing.
func TestNetworkProxyLoopbackNotations(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "reach the host's loopback or the metadata address through the proxy in any notation")
		o := newOrigin(t)
		f := newNet(t, u, fmt.Sprintf("*:%d", o.port))
		var s strings.Builder
		for i, h := range curlNotations {
			fmt.Fprintf(&s, "curl -q -sS --max-time 20 --noproxy '' -x %s -o /dev/null -w 'CASE get%d %%{http_code}\\n' 'http://%s:%d/'\n", sandboxProxyURL, i, h, o.port)
			fmt.Fprintf(&s, "curl -q -sS --max-time 20 --noproxy '' -x %s -p -o /dev/null -w 'CASE connect%d %%{http_connect}\\n' 'http://%s:%d/'\n", sandboxProxyURL, i, h, o.port)
		}
		// CONNECT goes to the proxy's [::1] listener, which exists when
		// the host has IPv6.
		proxy6 := proxyAddr
		if hostHasIPv6() {
			proxy6 = "[::1]:3128"
		}
		raw := append(append([]string{}, rawNotations...), hostsFileLoopbackNames()...)
		for _, h := range raw {
			hp := fmt.Sprintf("%s:%d", h, o.port)
			fmt.Fprintf(&s, "\"$probe\" http %s GET 'http://%s/'\n\"$probe\" http %s CONNECT '%s'\n\"$probe\" http %s GET / '%s'\n", proxyAddr, hp, proxy6, hp, proxyAddr, hp)
		}
		r := f.run(t, s.String())
		for k, v := range cases(r.stdout) {
			if v != "403" {
				t.Errorf("curl %s: %s, want 403", k, v)
			}
		}
		lines := probeLines(r.stdout)
		forbidden := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "ERR HTTP403 ") {
				forbidden++
			} else {
				t.Errorf("probe: %s", l)
			}
		}
		if len(lines) != 3*len(raw) {
			t.Errorf("want %d probe lines, got %d:\n%s", 3*len(raw), len(lines), r)
		}
		o.untouched(t, r)
		// Every request the proxy received is one 403 denial in the
		// audit log: nothing was dialled or allowed.
		if n := onlyDenied(t, readAudit(t, f.audit)); n != forbidden+2*len(curlNotations) {
			t.Errorf("audit: %d denials, want one per request (%d)", n, forbidden+2*len(curlNotations))
		}
		if !denialSummary.MatchString(r.stderr) {
			t.Errorf("no denial summary on stderr:\n%s", r)
		}
	})
}

// TestNetworkProxyPinnedLoopback pins allowed names with --resolve to
// loopback addresses, and one to 127.0.0.1 and a public address: a name
// rule never grants what the name resolves to when that is loopback, and
// every address is checked before any is dialled. (127.0.0.1 comes first
// so that a proxy checking in order refuses before it even looks at the
// public address, which must never be dialled from a test.)
func TestNetworkProxyPinnedLoopback(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "reach the host's loopback through a name pinned to 127.0.0.1")
		o := newOrigin(t)
		names := []string{"loop.test", "mixed.test", "loop6.test"}
		var allow []string
		for _, n := range names {
			allow = append(allow, fmt.Sprintf("%s:%d", n, o.port))
		}
		f := newNet(t, u, allow...)
		r := f.run(t, fmt.Sprintf(`
for h in %[2]s; do
  curl -q -sS --max-time 20 -o /dev/null -w "CASE get-$h %%{http_code}\n" http://$h:%[1]d/
  curl -q -sS --max-time 20 -p -o /dev/null -w "CASE connect-$h %%{http_connect}\n" http://$h:%[1]d/
done
`, o.port, strings.Join(names, " ")),
			"--resolve", "loop.test=127.0.0.1", "--resolve", "mixed.test=127.0.0.1,93.184.216.34", "--resolve", "loop6.test=::1")
		c := cases(r.stdout)
		for _, n := range names {
			if c["get-"+n] != "403" || c["connect-"+n] != "403" {
				t.Errorf("%s: GET %q, CONNECT %q, want 403 for both:\n%s", n, c["get-"+n], c["connect-"+n], r)
			}
		}
		o.untouched(t, r)
		evs := readAudit(t, f.audit)
		if onlyDenied(t, evs) != 2*len(names) {
			t.Errorf("audit: want %d denials: %v", 2*len(names), evs)
		}
		for _, e := range evs {
			// The public address passes its check; the refusal names
			// the loopback one, and no dial happened (no addr, 403 not a
			// 502/504 from a failed connect).
			want := fmt.Sprintf("resolves to 127.0.0.1:%d, a loopback address", o.port)
			if e.Host == "loop6.test" {
				want = fmt.Sprintf("resolves to [::1]:%d, a loopback address", o.port)
			}
			if !strings.Contains(e.Reason, want) {
				t.Errorf("audit: %s: the reason does not say %q", e, want)
			}
		}
	})
}

// netAttacks are attacks that bypass the proxy from a sandbox that has
// one. Each script's probe lines are checked by want (by line order).
var netAttacks = []struct {
	name   string
	script func(o *origin, extra map[string]string) string
	want   []string // the probe lines' prefixes, in order
	// landlock, when set, is want in the landlock tier, which has no
	// transparent egress: its supervisor refuses what is not the proxy.
	landlock []string
}{
	{"TCP straight to the host's loopback", func(o *origin, extra map[string]string) string {
		// A port of the host's loopback no grant names (a connect to the
		// granted one goes to the proxy, which decides it by the grant:
		// TestLoopbackPresetPlainClient), and the granted one by 0.0.0.0.
		return fmt.Sprintf(`
"$probe" tcp 127.0.0.1:%[2]s
"$probe" tcp [::1]:%[2]s
"$probe" tcp [::ffff:127.0.0.1]:%[2]s
"$probe" tcp 0.0.0.0:%[1]d
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE direct %%{http_code}\n' http://127.0.0.1:%[2]s/
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE direct6 %%{http_code}\n' 'http://[::1]:%[2]s/'
`, o.port, extra["ungranted"])
	}, []string{"ERR EACCES", "ERR EACCES", "ERR EACCES", "ERR EACCES"}, nil},
	{"TCP to host and gateway addresses", func(o *origin, _ map[string]string) string {
		// Transparent egress: corral's supervisor connects each socket
		// aimed outside to the proxy, which refuses private addresses
		// and resets the connection (each refusal is in its audit).
		return fmt.Sprintf(`
"$probe" tcp-talk 10.0.2.2:%[1]d
"$probe" tcp-talk 172.17.0.1:%[1]d
"$probe" tcp-talk 10.0.2.2:3128
`, o.port)
	}, []string{"ERR ECONNRESET", "ERR ECONNRESET", "ERR ECONNRESET"}, []string{"ERR EACCES", "ERR EACCES", "ERR EACCES"}},
	{"TCP bind", func(o *origin, _ map[string]string) string {
		return fmt.Sprintf(`
"$probe" bind-tcp 127.0.0.1:0
"$probe" bind-tcp 127.0.0.1:%d
"$probe" bind-tcp 0.0.0.0:8080
"$probe" bind-tcp [::1]:0
"$probe" bind-tcp [::]:3129
"$probe" bind-tcp 127.0.0.1:3128
`, o.port)
	}, []string{"ERR EACCES", "ERR EACCES", "ERR EACCES", "ERR EACCES", "ERR EACCES", "ERR EACCES"}, nil},
	{"MPTCP socket", func(*origin, map[string]string) string {
		return `
"$probe" socket 2 1 262
"$probe" socket 10 1 262
`
	}, []string{"ERR EPERM", "ERR EPERM"}, nil},
	{"DNS", func(_ *origin, extra map[string]string) string {
		s := `"$probe" dns example.com` + "\n"
		if ns := extra["nameserver"]; ns != "" {
			s += `"$probe" udp ` + ns + "\n"
		}
		return s
	}, []string{"OK", "ERR ENETUNREACH"}, []string{"ERR", "ERR EPERM"}},
	{"host UNIX sockets", func(_ *origin, extra map[string]string) string {
		return fmt.Sprintf(`
"$probe" connect-unix %s
"$probe" connect-unix %s
"$probe" connect-unix %s
"$probe" fds
`, extra["outside"], extra["tmp"], extra["run"])
	}, []string{"ERR", "ERR ENOENT", "ERR ENOENT", "OK"}, nil},
}

// hostNameserver is the first IPv4 nameserver of the host's resolv.conf
// as ADDR:53 when it is not a loopback address (which the sandbox's own lo
// would answer), else "".
func hostNameserver() string {
	data, _ := os.ReadFile("/etc/resolv.conf")
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil && a.Is4() && !a.IsLoopback() {
				return a.String() + ":53"
			}
			return ""
		}
	}
	return ""
}

// TestNetworkBypassProxy goes around the proxy from a sandbox that has one:
// TCP straight to the host's loopback and to host addresses, TCP bind,
// MPTCP, DNS, and the host's UNIX sockets. The origin and the sockets must
// see nothing.
func TestNetworkBypassProxy(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		requireKernel(t, landlockABI >= 4, "Landlock ABI < 4: no TCP rules")
		for _, a := range netAttacks {
			t.Run(a.name, func(t *testing.T) {
				t.Parallel()
				attack(t, "network", "bypass the proxy: "+a.name)
				o := newOrigin(t)
				f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
				// A short folder name: a socket path must fit in 108 bytes.
				outside, err := os.MkdirTemp(baseDir, "out-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(outside) })
				os.Chmod(outside, 0o755)
				run := "/run"
				if unix.Access(run, unix.W_OK) != nil {
					run = "/dev/shm" // not root: another folder the sandbox keeps private
				}
				socks := []*sink{
					listenSink(t, "unix", filepath.Join(outside, "agent.sock")),
					listenSink(t, "unix", filepath.Join("/tmp", token("corral-net")+".sock")),
					listenSink(t, "unix", filepath.Join(run, token("corral-net")+".sock")),
				}
				ungranted := newOrigin(t)
				extra := map[string]string{"nameserver": hostNameserver(),
					"outside": socks[0].addr, "tmp": socks[1].addr, "run": socks[2].addr, "ungranted": strconv.Itoa(ungranted.port)}
				want := a.want
				if e2eTier == "landlock" && a.landlock != nil {
					want = a.landlock
				}
				if a.name == "DNS" && extra["nameserver"] == "" {
					want = want[:1]
				}
				r := f.run(t, a.script(o, extra), "--resolve", "api.test=127.0.0.1")
				lines := probeLines(r.stdout)
				if len(lines) != len(want) {
					t.Fatalf("want %d probe lines:\n%s", len(want), r)
				}
				for i, l := range lines {
					if !strings.HasPrefix(l, want[i]+" ") {
						t.Errorf("probe: %q, want %s", l, want[i])
					}
				}
				for k, v := range cases(r.stdout) {
					if v != "000" {
						t.Errorf("curl %s: HTTP %s, want no connection (000)", k, v)
					}
				}
				if strings.Contains(r.stdout, "socket:") {
					t.Errorf("the command holds a socket it did not make (a proxy listener or corral's socket pair?):\n%s", r)
				}
				o.untouched(t, r)
				ungranted.untouched(t, r)
				for _, s := range socks {
					if n := s.sandboxArrivals(t, 0); n != 0 {
						t.Errorf("the sandboxed command connected to %s (%d connections)", s.addr, n)
					}
				}
				// Only the refusals of transparent egress, each of a
				// private address the command named.
				for _, ev := range readAudit(t, f.audit) {
					if a.name != "TCP to host and gateway addresses" || e2eTier == "landlock" || ev.Decision != "deny" || ev.Method != "TCP" || !strings.Contains(ev.Reason, "private network address") {
						t.Errorf("the proxy saw a request: %v", ev)
					}
				}
				if a.name == "DNS" && e2eTier != "landlock" && !strings.HasPrefix(lines[0], "OK dns example.com: 198.18.") {
					t.Errorf("the sandbox's resolver answered %q; want corral's fake address (198.18.0.0/15)", lines[0])
				}
			})
		}
	})
}

// TestNetworkListenWithoutBind calls listen() on a TCP socket that was
// never bound: the kernel binds an ephemeral port itself, without the
// bind() that Landlock checks.
func TestNetworkListenWithoutBind(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "listen on TCP without bind()")
		requireKernel(t, landlockABI >= 4, "Landlock ABI < 4: no TCP rules")
		f := newNet(t, u, "api.test:443")
		r := f.run(t, `
"$probe" listen-tcp 127.0.0.1
"$probe" listen-tcp ::1
`)
		lines := probeLines(r.stdout)
		if len(lines) != 2 {
			t.Fatalf("want two probe lines:\n%s", r)
		}
		if strings.HasPrefix(lines[0], "OK") || strings.HasPrefix(lines[1], "OK") {
			// Landlock checks bind(), not the implicit bind of listen(); the
			// listener is in the sandbox's own network namespace, which
			// nothing outside can reach, and the protections say so.
			explain := f.u.run(t, runOpts{args: []string{"explain", "--work-dir", f.work, "--skill", f.skill}, dir: f.work})
			if !strings.Contains(explain.stdout, "listen() on an unbound socket") {
				t.Errorf("listen() without bind() works (%q) and the landlock-net protection does not say so", lines)
			}
		}
	})
}

// TestNetworkUDPHostLoopback sends datagrams from a sandbox with a proxy
// to a UDP server on the host's 127.0.0.1: Landlock does not handle UDP,
// so only the network namespace keeps them in.
func TestNetworkUDPHostLoopback(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "UDP to the host's 127.0.0.1 from a sandbox with a proxy")
		srv := listenSink(t, "udp4", "127.0.0.1:0")
		srv.control(t, "udp")
		before := srv.count("PROBE")
		f := newNet(t, u, fmt.Sprintf("*:%d", srv.port), fmt.Sprintf("preset:loopback:%d", srv.port))
		r := f.run(t, fmt.Sprintf(`
"$probe" udp 127.0.0.1:%[1]d
"$probe" udp [::ffff:127.0.0.1]:%[1]d
"$probe" udp 0.0.0.0:%[1]d
`, srv.port))
		if n := srv.sandboxArrivals(t, before); n != 0 {
			t.Errorf("the UDP server on the host received %d datagrams from the sandbox:\n%s", n, r)
		}
	})
}

// TestNetworkNoAllowNoProxy runs a skill without network.allow, and the
// default sandbox: no proxy listens, no proxy variable is set, and neither
// the proxy port nor the host's loopback can be reached.
func TestNetworkNoAllowNoProxy(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "its own /proc/net (the landlock tier grants none: tier_test.go attacks its network)")
	users(t, func(t *testing.T, u user) {
		for _, withSkill := range []bool{true, false} {
			name := map[bool]string{true: "skill without network", false: "default sandbox"}[withSkill]
			t.Run(name, func(t *testing.T) {
				attack(t, "network", "find a way out without network.allow ("+name+")")
				o := newOrigin(t)
				f := newNet(t, u)
				if !withSkill {
					f.skill, f.probe = "", installProbe(t, f.work)
					own(t, u, f.probe)
				}
				r := f.run(t, fmt.Sprintf(`
echo "CASE env [$http_proxy$HTTP_PROXY$https_proxy$HTTPS_PROXY$all_proxy$ALL_PROXY$no_proxy$NO_PROXY]"
"$probe" read /proc/net/tcp
"$probe" read /proc/net/tcp6
"$probe" tcp 127.0.0.1:3128
"$probe" tcp [::1]:3128
"$probe" tcp 127.0.0.1:%[1]d
curl -q -sS --max-time 10 --noproxy '' -x %[2]s -o /dev/null -w 'CASE via %%{http_code}\n' http://127.0.0.1:%[1]d/
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE direct %%{http_code}\n' http://127.0.0.1:%[1]d/
`, o.port, sandboxProxyURL))
				c := cases(r.stdout)
				if c["env"] != "[]" || c["via"] != "000" || c["direct"] != "000" {
					t.Errorf("want no proxy variables and no HTTP answer, got %v:\n%s", c, r)
				}
				lines := probeLines(r.stdout)
				if len(lines) != 5 {
					t.Fatalf("want five probe lines:\n%s", r)
				}
				if !strings.HasPrefix(lines[0], "OK read /proc/net/tcp") {
					t.Errorf("control: cannot read the sandbox's /proc/net/tcp: %s", lines[0])
				}
				if strings.Contains(r.stdout, ":0C38 ") {
					t.Errorf("something listens on port 3128 in the sandbox:\n%s", r)
				}
				for _, l := range lines[2:] {
					if !strings.HasPrefix(l, "ERR ") {
						t.Errorf("probe: %s", l)
					}
				}
				o.untouched(t, r)
				if exists(f.audit) || strings.Contains(r.stderr, "egress proxy") || len(f.proxyDenials(t)) != 0 {
					t.Errorf("a proxy ran (audit log %v):\n%s", exists(f.audit), r)
				}
			})
		}
	})
}

// ---- corral proxy ----

// syncBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// proxyProc is a `corral proxy` the test started.
type proxyProc struct {
	cmd    *exec.Cmd
	addr   string // 127.0.0.1:port
	port   int
	audit  string
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

// startProxy starts `corral proxy` as u on a free port of 127.0.0.1 with
// the skill skillFor(port) writes, an audit log and args. With maxFDs > 0
// it runs under prlimit with that many file descriptors, which bounds a
// relay loop.
func startProxy(t *testing.T, u user, maxFDs int, skillFor func(port int) string, args ...string) *proxyProc {
	t.Helper()
	logs := newDir(t, u, "proxy-logs")
	for attempt := 0; attempt < 3; attempt++ {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		p := &proxyProc{addr: fmt.Sprintf("127.0.0.1:%d", port), port: port, stderr: &syncBuffer{},
			audit: filepath.Join(logs, fmt.Sprintf("audit-%d.jsonl", attempt)), done: make(chan struct{})}
		argv := append([]string{corralBin, "proxy", "--skill", skillFor(port), "--listen", p.addr, "--audit-log", p.audit}, args...)
		if maxFDs > 0 {
			prlimit, err := exec.LookPath("prlimit")
			if err != nil {
				t.Skip("prlimit (util-linux) is not installed: a relay loop would be bounded only by the file limit")
			}
			argv = append([]string{prlimit, fmt.Sprintf("--nofile=%d:%d", maxFDs, maxFDs)}, argv...)
		}
		if u.unpriv {
			argv = append([]string{setpriv, "--reuid", fmt.Sprint(nobody), "--regid", fmt.Sprint(nobody), "--clear-groups"}, argv...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		p.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		p.cmd.Dir, p.cmd.Env, p.cmd.Stderr = baseDir, defaultEnv(), p.stderr
		p.cmd.WaitDelay = 2 * time.Second
		if err := p.cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		go func() {
			p.cmd.Wait()
			p.code = p.cmd.ProcessState.ExitCode()
			cancel()
			close(p.done)
		}()
		t.Cleanup(func() {
			select {
			case <-p.done:
			default:
				p.cmd.Process.Kill()
				<-p.done
			}
			if t.Failed() {
				t.Logf("corral proxy's stderr:\n%s", p.stderr.String())
			}
		})
		waitFor(15*time.Second, func() bool {
			select {
			case <-p.done:
				return true
			default:
				return strings.Contains(p.stderr.String(), "listening on")
			}
		})
		select {
		case <-p.done:
			if strings.Contains(p.stderr.String(), "address already in use") {
				continue
			}
			t.Fatalf("corral proxy ended with %d:\n%s", p.code, p.stderr.String())
		default:
		}
		if !strings.Contains(p.stderr.String(), "listening on "+p.addr) {
			t.Fatalf("corral proxy did not say it listens on %s within 15s:\n%s", p.addr, p.stderr.String())
		}
		return p
	}
	t.Fatal("corral proxy found no free port in 3 attempts")
	return nil
}

// stop sends SIGTERM to the proxy (the process the test started) and
// returns its exit code.
func (p *proxyProc) stop(t *testing.T) int {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.code
	case <-time.After(20 * time.Second):
		t.Errorf("corral proxy did not end within 20s of SIGTERM")
		p.cmd.Process.Kill()
		<-p.done
		return p.code
	}
}

// curlVia runs curl on the host through the proxy at addr: it prints the
// answer's head and body, then "CASE code <status>".
func curlVia(t *testing.T, addr string, connect bool, url string) string {
	t.Helper()
	args := []string{"-q", "-sS", "--max-time", "8", "--noproxy", "", "-x", "http://" + addr, "-D", "-", "-w", "\nCASE code %{http_code}\n"}
	if connect {
		args = append(args[:len(args)-1], "\nCASE code %{http_connect}\n", "-p")
	}
	out, _ := runHost("curl", append(args, url)...)
	return out
}

func proxySkill(t *testing.T, allow ...string) string {
	t.Helper()
	q := make([]string, len(allow))
	for i, a := range allow {
		q[i] = strconv.Quote(a)
	}
	return writeSkill(t, newDir(t, asSelf, "skills"), "proxytest", "  network:\n    allow: ["+strings.Join(q, ", ")+"]\n")
}

// TestProxyStandalone runs `corral proxy` and uses it from the host: an
// allowed request (plain and CONNECT) reaches the origin, a denied one is
// a 403 that never reaches it, the audit log has both, and SIGTERM ends
// the proxy with status 0 and the denial summary.
func TestProxyStandalone(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "corral proxy: reach a host outside network.allow")
		o := newOrigin(t)
		skill := proxySkill(t, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
		p := startProxy(t, u, 0, func(int) string { return skill }, "--resolve", "api.test=127.0.0.1")
		tok := token("path")
		plain := curlVia(t, p.addr, false, fmt.Sprintf("http://api.test:%d/plain-%s", o.port, tok))
		tunnel := curlVia(t, p.addr, true, fmt.Sprintf("http://api.test:%d/tunnel-%s", o.port, tok))
		denied := curlVia(t, p.addr, false, fmt.Sprintf("http://other.test:%d/", o.port))
		if cases(plain)["code"] != "200" || !strings.Contains(plain, "ORIGIN-OK GET /plain-"+tok) {
			t.Errorf("allowed plain request: want 200 from the origin:\n%s", plain)
		}
		if cases(tunnel)["code"] != "200" || !strings.Contains(tunnel, "ORIGIN-OK GET /tunnel-"+tok) {
			t.Errorf("allowed CONNECT: want 200 from the origin:\n%s", tunnel)
		}
		hp := fmt.Sprintf("other.test:%d", o.port)
		if cases(denied)["code"] != "403" || !strings.Contains(denied, "X-Corral-Reason: "+hp+" is not in the network allow list") {
			t.Errorf("denied request: want 403 with a reason naming %s:\n%s", hp, denied)
		}
		if got := o.requests(); len(got) != 2 {
			t.Errorf("the origin saw %q, want only the two allowed requests", got)
		}
		if strings.Contains(p.stderr.String(), "refused") {
			t.Errorf("the summary came before the proxy ended:\n%s", p.stderr.String())
		}
		if code := p.stop(t); code != 0 {
			t.Errorf("corral proxy exit %d after SIGTERM, want 0", code)
		}
		if stderr := p.stderr.String(); !denialSummary.MatchString(stderr) || !strings.Contains(stderr, " 1 request(s):\n  GET "+hp+": 403 ") {
			t.Errorf("stderr does not have the denial summary for GET %s:\n%s", hp, stderr)
		}
		got := map[string]int{}
		for _, e := range readAudit(t, p.audit) {
			got[fmt.Sprintf("%s %s %s:%d %d", e.Decision, e.Method, e.Host, e.Port, e.Status)]++
		}
		for _, w := range []string{
			fmt.Sprintf("allow GET api.test:%d 200", o.port),
			fmt.Sprintf("allow CONNECT api.test:%d 200", o.port),
			fmt.Sprintf("deny GET %s 403", hp),
		} {
			if got[w] != 1 {
				t.Errorf("audit: want one %q, got %v", w, got)
			}
		}
	})
}

// TestProxySelfRelay asks `corral proxy` to relay to its own address,
// under a rule that grants loopback on its port: each request would come
// back to the proxy as a new request, and so on until it runs out of file
// descriptors. It runs under prlimit so that a loop stays small.
func TestProxySelfRelay(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		for _, c := range []struct {
			host    string
			connect bool
			known   bool // the unspecified address: a reported bug
		}{
			{"127.0.0.1", false, false}, {"127.0.0.1", true, false}, {"localhost", false, false},
			{"[::ffff:127.0.0.1]", false, false}, {"0.0.0.0", false, true}, {"0.0.0.0", true, true}, {"[::]", false, true},
		} {
			name := map[bool]string{false: "GET ", true: "CONNECT "}[c.connect] + c.host
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				attack(t, "network", "corral proxy: relay to itself through "+name)
				p := startProxy(t, u, 256, func(port int) string {
					return proxySkill(t, fmt.Sprintf("preset:loopback:%d", port))
				})
				out := curlVia(t, p.addr, c.connect, fmt.Sprintf("http://%s:%d/", c.host, p.port))
				code := cases(out)["code"]
				if exit := p.stop(t); exit != 0 {
					t.Errorf("corral proxy exit %d after SIGTERM, want 0", exit)
				}
				evs := readAudit(t, p.audit)
				loops := 0
				for _, e := range evs {
					if e.Decision == "allow" && strings.HasSuffix(e.Addr, fmt.Sprintf(":%d", p.port)) {
						loops++
					}
				}
				if loops > 0 && c.known {
					knownBug(t, "corral proxy --listen %s relays %s:%d to itself (%d allowed hops to %s in the audit log, curl got %q): isSelf (netns/proxy.go) matches the target against the listening address, and treats an unspecified address only on the listening side, so 0.0.0.0/[::] (which connect to the loopback listener) loop until the proxy runs out of file descriptors", p.addr, c.host, p.port, loops, p.addr, code)
				}
				if loops > 0 {
					t.Errorf("the proxy relayed to itself %d times", loops)
				}
				if code != "403" {
					t.Errorf("want 403, got %q:\n%s", code, out)
				}
				if onlyDenied(t, evs) != 1 {
					t.Errorf("audit: want one denial: %v", evs)
				}
			})
		}
	})
}
