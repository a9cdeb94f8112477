//go:build linux

package tests

// network.bind (issue 20, item 2): the command listens on the ports a
// skill names, inside its own network namespace; nothing outside the
// sandbox reaches them, and no other port can be bound.

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

func TestNetworkBind(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "network.bind (the landlock tier refuses it: tier_test.go)")
	users(t, func(t *testing.T, u user) {
		requireKernel(t, landlockABI >= 4, "Landlock ABI < 4: no TCP rules")
		port := 20000 + rand.IntN(20000)
		o := newOrigin(t)
		f := newNet(t, u, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
		f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "server", fmt.Sprintf(
			"  fs:\n    read: [%q]\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: [\"api.test:%d\", \"preset:loopback:%d\"]\n    bind: [%d]\n",
			f.tools+"/**", o.port, o.port, port))
		// A server the host could reach would answer here meanwhile.
		script := fmt.Sprintf(`
python3 -m http.server %[1]d --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 50); do curl -q -s --noproxy '*' -o /dev/null http://127.0.0.1:%[1]d/ && break; sleep 0.1; done
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE inside %%{http_code}\n' http://127.0.0.1:%[1]d/
curl -q -sS --max-time 10 -o /dev/null -w 'CASE proxied %%{http_code}\n' http://api.test:%[2]d/
echo READY
sleep 2
"$probe" bind-tcp 127.0.0.1:%[3]d
"$probe" bind-tcp 0.0.0.0:%[1]d
kill %%1
`, port, o.port, port+1)
		done := make(chan result, 1)
		go func() { done <- f.run(t, script, "--resolve", "api.test=127.0.0.1") }()
		// While the sandbox's server runs: the host's 127.0.0.1 is
		// another namespace's.
		time.Sleep(1500 * time.Millisecond)
		if c, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
			b := make([]byte, 200)
			n, _ := c.Read(b)
			c.Close()
			if strings.Contains(string(b[:n]), "SimpleHTTP") {
				t.Errorf("the host reached the sandbox's server on port %d", port)
			}
		}
		r := <-done
		c := cases(r.stdout)
		if c["inside"] != "200" || c["proxied"] != "200" {
			t.Errorf("inside: %q, proxied: %q; want 200 and 200\n%s", c["inside"], c["proxied"], r)
		}
		lines := probeLines(r.stdout)
		want := []string{"ERR EACCES", "OK"}
		if len(lines) != len(want) {
			t.Fatalf("want %d probe lines:\n%s", len(want), r)
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, want[i]) && !(i == 1 && strings.HasPrefix(l, "ERR EADDRINUSE")) {
				t.Errorf("probe: %q, want %s", l, want[i])
			}
		}
	})
}

// TestNetworkBindAny: "*" lets the command listen on any port, still in
// its own namespace.
func TestNetworkBindAny(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "network.bind (the landlock tier refuses it: tier_test.go)")
	requireSandbox(t)
	f := newNet(t, asSelf)
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "anyport", fmt.Sprintf("  fs:\n    read: [%q]\n    write: [\"$WORK_DIR/**\"]\n  network:\n    bind: [\"*\"]\n", f.tools+"/**"))
	port := 20000 + rand.IntN(20000)
	r := f.run(t, fmt.Sprintf(`
"$probe" bind-tcp 127.0.0.1:%d
"$probe" bind-tcp [::1]:%d
`, port, port+1))
	for _, l := range probeLines(r.stdout) {
		if !strings.HasPrefix(l, "OK") && !strings.Contains(l, "EADDRNOTAVAIL") {
			t.Errorf("probe: %q, want OK", l)
		}
	}
}

// TestNetworkBindRefused: bad ports are one line and 125; the landlock
// tier, whose ports would be the host's, refuses network.bind.
func TestNetworkBindRefused(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "it names its tiers itself")
	work := newDir(t, asSelf, "work")
	for _, v := range []string{"0", "65536", "-1", "http", "80-90", "1.5"} {
		skill := writeSkill(t, newDir(t, asSelf, "skills"), "badport", "  network:\n    bind: ["+v+"]\n")
		r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", skill, "--", "true"}, dir: work, keepRefusal: true})
		if r.code != 125 || !strings.Contains(r.stderr, "permissions.network.bind[0]") {
			t.Errorf("bind [%s]: exit %d, want 125 naming the field:\n%s", v, r.code, r)
		}
	}
	skill := writeSkill(t, newDir(t, asSelf, "skills"), "lltier", "  network:\n    bind: [8080]\n")
	r := asSelf.run(t, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--skill", skill, "--", "true"}, dir: work, keepRefusal: true})
	if r.code != 125 || !strings.Contains(r.stderr, "network.bind (8080, from lltier) needs the namespaces tier") {
		t.Errorf("landlock tier: exit %d, want 125 and why:\n%s", r.code, r)
	}
}
