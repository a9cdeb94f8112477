//go:build linux

package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink is a server the test runs on the host: it records the first line
// of every connection (or datagram) in arrival order. The probe sends
// "PROBE"; the test sends a sentinel after the sandbox ran and waits for
// it, so every earlier arrival has been recorded by then.
type sink struct {
	network, addr string
	port          int
	mu            sync.Mutex
	msgs          []string
}

func (s *sink) record(msg string) {
	s.mu.Lock()
	s.msgs = append(s.msgs, strings.TrimSpace(msg))
	s.mu.Unlock()
}

// count returns how many arrivals said msg.
func (s *sink) count(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// listenSink listens on network ("tcp4", "udp4", "unix" or "unixgram")
// at addr.
func listenSink(t *testing.T, network, addr string) *sink {
	t.Helper()
	s := &sink{network: network, addr: addr}
	if network == "udp4" || network == "unixgram" {
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
			s.addr, s.port = a.String(), a.Port
		} else {
			os.Chmod(addr, 0o777) // plain permissions must not be what stops the user
			t.Cleanup(func() { os.Remove(addr) })
		}
		go func() {
			buf := make([]byte, 2048)
			for {
				n, _, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				s.record(string(buf[:n]))
			}
		}()
		return s
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	if network == "unix" && !strings.HasPrefix(addr, "@") {
		os.Chmod(addr, 0o777) // plain permissions must not be what stops the user
		t.Cleanup(func() { os.Remove(addr) })
	}
	t.Cleanup(func() { l.Close() })
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		s.addr, s.port = a.String(), a.Port
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			s.record(line)
		}
	}()
	return s
}

// control runs the probe on the host, outside any sandbox, against the
// sink: it must arrive, or the test would prove nothing.
func (s *sink) control(t *testing.T, probeCmd string) {
	t.Helper()
	out := hostProbe(t, probeCmd, s.addr)
	if !waitFor(10*time.Second, func() bool { return s.count("PROBE") >= 1 }) {
		t.Fatalf("control: the probe on the host did not reach %s %s: %s", s.network, s.addr, out)
	}
	if s.network == "udp4" {
		// The probe sends three datagrams; all were queued before it
		// exited, so once a barrier sent now is read, all of them are
		// counted (a late one counted as the sandbox's made this flaky).
		c, err := net.Dial(s.network, s.addr)
		if err != nil {
			t.Fatalf("barrier: %v", err)
		}
		c.Write([]byte("BARRIER\n"))
		c.Close()
		if !waitFor(10*time.Second, func() bool { return s.count("BARRIER") >= 1 }) {
			t.Fatalf("the barrier did not arrive at %s %s", s.network, s.addr)
		}
	}
}

// sandboxArrivals sends a sentinel, waits for it and returns how many
// probe messages arrived besides the control's.
func (s *sink) sandboxArrivals(t *testing.T, controls int) int {
	t.Helper()
	c, err := net.Dial(s.network, s.addr)
	if err != nil {
		t.Fatalf("sentinel: %v", err)
	}
	c.Write([]byte("SENTINEL\n"))
	c.Close()
	if !waitFor(10*time.Second, func() bool { return s.count("SENTINEL") == 1 }) {
		t.Fatalf("the sentinel did not arrive at %s %s", s.network, s.addr)
	}
	return s.count("PROBE") - controls
}

// TestNetInterfaces lists the network interfaces: only lo.
func TestNetInterfaces(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a network namespace with only lo (the landlock tier grants no /proc/net, and no socket can reach an interface but through the proxy)")
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "find a network interface besides lo")
		f := newFS(t, u)
		r := u.exec(t, f.work, nil, f.probe, "ifaces")
		if got := strings.TrimSpace(r.stdout); got != "OK lo" {
			t.Errorf("interfaces %q, want only lo:\n%s", got, r)
		}
	})
}

// TestNetHostLoopbackTCP connects to a TCP server on the host's
// 127.0.0.1, by its plain address and by spellings of it.
func TestNetHostLoopbackTCP(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "TCP to a server on the host's 127.0.0.1")
		f := newFS(t, u)
		srv := listenSink(t, "tcp4", "127.0.0.1:0")
		srv.control(t, "tcp")
		var script strings.Builder
		for _, host := range []string{"127.0.0.1", "127.1", "0x7f.1", "2130706433", "localhost", "[::ffff:127.0.0.1]", "0.0.0.0"} {
			fmt.Fprintf(&script, "./probe tcp %s:%d\n", host, srv.port)
		}
		r := runScript(t, u, f.work, nil, script.String())
		if n := srv.sandboxArrivals(t, 1); n != 0 {
			t.Errorf("the server on the host accepted %d connections from the sandbox:\n%s", n, r)
		}
		for _, l := range probeLines(r.stdout) {
			if strings.HasPrefix(l, "OK") {
				t.Errorf("probe: %s", l)
			}
		}
	})
}

// TestNetHostLoopbackUDP sends datagrams to a UDP server on the host's
// 127.0.0.1: sending may succeed (into the sandbox's own lo), but nothing
// may arrive.
func TestNetHostLoopbackUDP(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "UDP to a server on the host's 127.0.0.1")
		f := newFS(t, u)
		srv := listenSink(t, "udp4", "127.0.0.1:0")
		srv.control(t, "udp")
		before := srv.count("PROBE")
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
./probe udp 127.0.0.1:%[1]d
./probe udp 0.0.0.0:%[1]d
./probe udp [::ffff:127.0.0.1]:%[1]d
`, srv.port))
		if n := srv.sandboxArrivals(t, before); n != 0 {
			t.Errorf("the server on the host received %d datagrams from the sandbox:\n%s", n, r)
		}
	})
}

// TestNetDNS resolves names: there is no DNS server to reach.
func TestNetDNS(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "resolve a name through DNS")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `
./probe dns example.com
./probe dns corral-test.invalid.
getent hosts example.com && echo GETENT-RESOLVED
getent ahosts example.org && echo GETENT-RESOLVED
`)
		if strings.Contains(r.stdout, "GETENT-RESOLVED") {
			t.Errorf("getent resolved a name:\n%s", r)
		}
		lines := probeLines(r.stdout)
		if len(lines) != 2 {
			t.Fatalf("want two probe lines:\n%s", r)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "ERR") {
				t.Errorf("probe: %s", l)
			}
		}
	})
}

// TestNetHostAbstractSocket connects to an abstract UNIX socket the test
// listens on: abstract sockets belong to the network namespace and are
// scoped by Landlock.
func TestNetHostAbstractSocket(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "connect to a host abstract UNIX socket")
		f := newFS(t, u)
		l := listenSink(t, "unix", "@"+token("corral-abstract"))
		l.control(t, "connect-unix")
		r := u.exec(t, f.work, nil, f.probe, "connect-unix", l.addr)
		if n := l.sandboxArrivals(t, 1); n != 0 || strings.HasPrefix(r.stdout, "OK") {
			t.Errorf("the sandbox connected to %s (%d connections):\n%s", l.addr, n, r)
		}
	})
}
