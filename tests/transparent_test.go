//go:build linux

package tests

// Transparent egress (issue 20, item 1): clients that ignore HTTP_PROXY
// reach allowed hosts through corral's fake DNS and connect supervisor,
// and nothing else; a SOCKS5 client too. Every server here listens on
// 127.0.0.1, reached by names pinned with --resolve.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// transparentNet is newNet with a skill that lists no programs (node, git
// and ssh run many) and allows exactly allow.
func transparentNet(t *testing.T, u user, allow ...string) netFixture {
	t.Helper()
	f := newNet(t, u, allow...)
	q := make([]string, len(allow))
	for i, a := range allow {
		q[i] = strconv.Quote(a)
	}
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "egress", "  fs:\n    read: [\""+f.tools+"/**\"]\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: ["+strings.Join(q, ", ")+"]\n")
	return f
}

func TestTransparentEgress(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "transparent egress (the landlock tier has no network namespace to redirect in)")
	users(t, func(t *testing.T, u user) {
		o := newOrigin(t)
		denied := newOrigin(t)
		f := transparentNet(t, u, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
		script := fmt.Sprintf(`
"$probe" dns api.test
"$probe" tcp-talk api.test:%[1]d
"$probe" tcp-talk other.test:%[2]d
"$probe" tcp-talk api.test:%[2]d
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE direct %%{http_code}\n' http://api.test:%[1]d/direct
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE directdenied %%{http_code}\n' http://other.test:%[2]d/
curl -q -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 -o /dev/null -w 'CASE socks %%{http_code}\n' http://api.test:%[1]d/socks
curl -q -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 -o /dev/null -w 'CASE socksdenied %%{http_code}\n' http://other.test:%[2]d/
curl -q -sS --max-time 10 -o /dev/null -w 'CASE proxied %%{http_code}\n' http://api.test:%[1]d/proxied
bash -c 'exec 3<>/dev/tcp/api.test/%[1]d && printf "GET /bash HTTP/1.0\r\n\r\n" >&3 && head -c 15 <&3 && echo' 
`, o.port, denied.port)
		// Node's fetch at times never settles when the connection is
		// reset as it opens (about 1 in 10 runs here, with or without
		// corral's latest changes), and node exits 0 with nothing said:
		// that is no connection too (the origin's count below decides).
		if _, err := exec.LookPath("node"); err == nil {
			script += fmt.Sprintf(`node -e 'fetch("http://api.test:%[1]d/node").then(r => console.log("CASE node " + r.status), e => console.log("CASE node err " + e.cause))'
node -e 'let done = 0; process.on("exit", () => done || console.log("CASE nodedenied 000")); fetch("http://other.test:%[2]d/").then(r => { done = 1; console.log("CASE nodedenied " + r.status) }, e => { done = 1; console.log("CASE nodedenied 000") })'
`, o.port, denied.port)
		}
		r := f.run(t, script, "--resolve", "api.test=127.0.0.1", "--resolve", "other.test=127.0.0.1")
		lines := probeLines(r.stdout)
		// A refused connection is reset (ECONNRESET, at connect or at
		// the read), or seen closed first: no byte of an answer.
		want := []string{"OK dns api.test: 198.18.", "OK tcp read \"HTTP/1.1 200 OK", "ERR ", "ERR "}
		if len(lines) != len(want) {
			t.Fatalf("want %d probe lines:\n%s", len(want), r)
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, want[i]) {
				t.Errorf("probe: %q, want %s", l, want[i])
			}
		}
		c := cases(r.stdout)
		for k, v := range map[string]string{"direct": "200", "directdenied": "000", "socks": "200", "socksdenied": "000", "proxied": "200"} {
			if c[k] != v {
				t.Errorf("curl %s: %q, want %s\n%s", k, c[k], v, r)
			}
		}
		if _, err := exec.LookPath("node"); err == nil {
			if c["node"] != "200" || c["nodedenied"] != "000" {
				t.Errorf("node fetch: %q, denied %q; want 200 and a failure\n%s", c["node"], c["nodedenied"], r)
			}
		} else {
			t.Log("node is not installed: its fetch is not tried")
		}
		if !strings.Contains(r.stdout, "HTTP/1.1 200 OK") {
			t.Errorf("bash's /dev/tcp got no answer:\n%s", r)
		}
		if n := denied.connections(t); n != 0 {
			t.Errorf("the origin no rule allows got %d connections", n)
		}
		got := o.requests()
		for _, p := range []string{"/direct", "/socks", "/proxied", "/bash"} {
			if !strings.Contains(strings.Join(got, "\n"), "GET "+p+" ") {
				t.Errorf("the allowed origin never saw %s: %q", p, got)
			}
		}
		// Every connection is in the audit log, with how its host was
		// learnt; the refusals name the rule to add.
		var vias []string
		for _, ev := range readAudit(t, f.audit) {
			switch {
			case ev.Decision == "deny" && (ev.Host != "other.test" && !(ev.Host == "api.test" && ev.Port == denied.port)):
				t.Errorf("refused %v", ev)
			case ev.Decision == "deny" && !strings.Contains(ev.Reason, "to allow it, add"):
				t.Errorf("a refusal without its remedy: %v", ev)
			}
			vias = append(vias, ev.Method+"/"+ev.Via)
		}
		for _, v := range []string{"TCP/dns", "CONNECT/socks5"} {
			if !strings.Contains(strings.Join(vias, " "), v) {
				t.Errorf("no %s event in the audit log: %v", v, vias)
			}
		}
	})
}

// TestTransparentEgressSNI connects to a bare address: the proxy learns
// the host from the TLS ClientHello's server name (and from an HTTP Host
// header), decides that name and dials its address, not the one the
// client named.
func TestTransparentEgressSNI(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "transparent egress (the landlock tier has no network namespace to redirect in)")
	requireSandbox(t)
	o := newOrigin(t)
	f := transparentNet(t, asSelf, fmt.Sprintf("api.test:%d", o.port), fmt.Sprintf("preset:loopback:%d", o.port))
	// 192.0.2.1 (TEST-NET-1) is never dialled: the name decides. (No CA
	// bundle to parse before the ClientHello: under emulation curl took
	// longer than the proxy waits for a client's first bytes.)
	r := f.run(t, fmt.Sprintf(`
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE host %%{http_code}\n' -H 'Host: api.test:%[1]d' http://192.0.2.1:%[1]d/host
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE nohost %%{http_code}\n' http://192.0.2.1:%[1]d/nohost
curl -q -sS --max-time 10 --noproxy '*' -k --cacert /dev/null -o /dev/null -w 'CASE sni %%{http_code}\n' --resolve api.test:%[1]d:192.0.2.1 https://api.test:%[1]d/
`, o.port), "--resolve", "api.test=127.0.0.1")
	c := cases(r.stdout)
	if c["host"] != "200" || c["nohost"] != "403" {
		t.Errorf("Host header: %q, none: %q; want 200 and 403\n%s", c["host"], c["nohost"], r)
	}
	// The origin speaks plain HTTP: the TLS handshake fails, after the
	// proxy let the connection through by its SNI.
	var sni bool
	for _, ev := range readAudit(t, f.audit) {
		if ev.Via == "sni" && ev.Host == "api.test" && ev.Decision == "allow" {
			sni = true
		}
		if strings.Contains(ev.Addr, "192.0.2.1") {
			t.Errorf("the proxy dialled the bare address: %v", ev)
		}
	}
	if !sni {
		t.Errorf("no connection allowed by its TLS server name:\n%s", r)
	}
}

// TestTransparentEgressGitSSH clones a repository over ssh from a server
// the test starts on 127.0.0.1, port 22 where it is free, by a name the
// skill allows; the same clone from a name it does not allow fails.
func TestTransparentEgressGitSSH(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "transparent egress (the landlock tier has no network namespace to redirect in)")
	if !isRoot {
		t.Skip("the test's sshd needs root")
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing (apt-get install openssh-server openssh-client)", p)
		}
	}
	dir := newDir(t, asSelf, "sshd")
	keygen := func(name string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	keygen("host")
	keygen("client")
	pub, _ := os.ReadFile(filepath.Join(dir, "client.pub"))
	writeFile(t, filepath.Join(dir, "authorized_keys"), string(pub), 0o600)
	repo := filepath.Join(dir, "repo.git")
	src := filepath.Join(dir, "src")
	for _, args := range [][]string{{"init", "-q", "-b", "main", src}, {"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "TRANSPARENT-SSH-OK"}, {"clone", "-q", "--bare", src, repo}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	port := 22
	if l, err := net.Listen("tcp4", "127.0.0.1:22"); err == nil {
		l.Close()
	} else {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		t.Logf("127.0.0.1:22 is taken; the ssh server listens on port %d", port)
	}
	os.MkdirAll("/run/sshd", 0o755)
	cfg := filepath.Join(dir, "sshd_config")
	writeFile(t, cfg, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nPidFile none\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys")), 0o600)
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	var log syncBuffer
	sshd.Stderr = &log
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sshd.Process.Kill(); sshd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("sshd did not listen:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	f := transparentNet(t, asSelf, fmt.Sprintf("git.test:%d", port), fmt.Sprintf("preset:loopback:%d", port))
	key := filepath.Join(f.work, "id")
	k, _ := os.ReadFile(filepath.Join(dir, "client"))
	writeFile(t, key, string(k), 0o600)
	r := f.run(t, fmt.Sprintf(`
export GIT_SSH_COMMAND="ssh -i %[1]s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
git clone -q ssh://root@git.test:%[2]d%[3]s cloned && git -C cloned log --format='CASE clone %%s' -1
git clone -q ssh://root@evil.test:%[2]d%[3]s cloned2 2>&1 | tail -1; test -d cloned2 && echo 'CASE evil cloned' || echo 'CASE evil refused'
`, key, port, repo), "--resolve", "git.test=127.0.0.1", "--resolve", "evil.test=127.0.0.1")
	c := cases(r.stdout)
	if c["clone"] != "TRANSPARENT-SSH-OK" || c["evil"] != "refused" {
		t.Errorf("clone: %q, from a name no rule allows: %q; want TRANSPARENT-SSH-OK and refused\n%s\nsshd: %s", c["clone"], c["evil"], r, log.String())
	}
}

// TestStdinSocketStaysOutside hands corral a TCP connection as stdin (as
// inetd, systemd's Accept=yes or socat would): a socket of the host's
// network namespace. The command must not be able to disconnect it and
// connect it (or send by TCP Fast Open) to the host's services: corral
// gives the command a pipe instead, and the connect supervisor refuses
// to connect a socket from another namespace.
func TestStdinSocketStaysOutside(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	inetd, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inetd.Close()
	host := newOrigin(t) // a host service the command must not reach
	client, err := net.Dial("tcp4", inetd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := inetd.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	stdin, err := server.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	f := transparentNet(t, asSelf, "api.test:443")
	for _, mode := range []string{"", "tfo"} {
		args := []string{"exec", "--work-dir", f.work, "--skill", f.skill, "--", f.probe, "stdin-reconnect", fmt.Sprintf("127.0.0.1:%d", host.port)}
		if mode != "" {
			args = append(args, mode)
		}
		cmd := exec.Command(corralBin, args...)
		cmd.Dir, cmd.Stdin = f.work, stdin
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "OK stdin is not a socket") {
			t.Errorf("stdin-reconnect %s: %s", mode, out)
		}
	}
	if n := host.connections(t); n != 0 {
		t.Errorf("the host's service got %d connections from the sandbox", n)
	}
}
