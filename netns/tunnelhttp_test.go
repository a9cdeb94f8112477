package netns

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

// Issue 27, item 3: plain HTTP inside a tunnel (CONNECT, SOCKS5, a
// transparent connection) is served as through HTTP_PROXY, one request a
// connection: each request counts against network.budget, is checked
// against the URL rules, goes to the tunnel's host with the proxy's Host
// header and framing, and nothing the client sends after it reaches the
// origin. Every test runs over every tunnel route against headOrigin,
// which answers every head it reads on a connection, keep-alive.

// tunnelEnv is a proxy allowing every .test name on the origin's port,
// all resolving to 127.0.0.1.
func tunnelEnv(t *testing.T, origin *server, cfg Config) *routeEnv {
	port := strconv.Itoa(origin.port)
	cfg.Engine = testEngine(t, "*.test:"+port, "preset:loopback:"+port)
	cfg.Resolver = &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	return newRouteEnv(t, cfg)
}

// TestTunnelKeepAliveCounted: a client that keeps its connection for
// request after request gets one answered per connection and opens a
// new one (counted) for the next, so a requests cap of 2 lets exactly 2
// through (12 of 12 went through one kept-alive tunnel).
func TestTunnelKeepAliveCounted(t *testing.T) {
	origin := newHeadOrigin(t)
	for _, r := range tunnelRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin.server, Config{Budgets: []policyengine.Budget{{From: "s", Hosts: []policyengine.HostCap{
				{Pattern: "*.test:*", Cap: policyengine.Cap{Requests: 2}}}}}})
			before := origin.heads.Load()
			answers, conns := 0, 0
			for conns < 12 && answers < 12 {
				c, br := r.open(t, e, "api.test", origin.port)
				if c == nil {
					break
				}
				conns++
				for range 12 {
					if _, err := io.WriteString(c, r.head("api.test", origin.port, "/k")); err != nil || !answered(br) {
						break
					}
					answers++
				}
				c.Close()
			}
			if answers != 2 || origin.heads.Load()-before != 2 {
				t.Errorf("%d answers on %d connections, the origin read %d heads; want 2 of each (the cap)", answers, conns, origin.heads.Load()-before)
			}
		})
	}
}

// TestTunnelOneRequest: whatever follows the one request (pipelined in
// the same write, hidden after a body the head frames, after a chunked
// body's end) never reaches the origin, which reads exactly one head.
func TestTunnelOneRequest(t *testing.T) {
	origin := newHeadOrigin(t)
	for _, r := range tunnelRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin.server, Config{})
			authority := "api.test:" + strconv.Itoa(origin.port)
			for _, tc := range []struct{ name, send string }{
				{"pipelined", r.head("api.test", origin.port, "/one") + r.head("api.test", origin.port, "/two") + r.head("api.test", origin.port, "/three")},
				{"after a body", "POST /one HTTP/1.1\r\nHost: " + authority + "\r\nContent-Length: 5\r\n\r\nhello" + smuggled},
				{"after an empty body", "POST /one HTTP/1.1\r\nHost: " + authority + "\r\nContent-Length: 0\r\n\r\n" + smuggled},
				{"after a chunked body", "POST /one HTTP/1.1\r\nHost: " + authority + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled},
				{"HTTP/1.0 keep-alive", "GET /one HTTP/1.0\r\nConnection: keep-alive\r\nHost: " + authority + "\r\n\r\n" + smuggled},
				{"Connection: close", "GET /one HTTP/1.1\r\nConnection: close\r\nHost: " + authority + "\r\n\r\n" + smuggled},
			} {
				before := len(origin.seen())
				c, br := r.open(t, e, "api.test", origin.port)
				if c == nil {
					t.Fatalf("%s: refused", tc.name)
				}
				io.WriteString(c, tc.send)
				if !answered(br) {
					t.Errorf("%s: the first request was not answered", tc.name)
				}
				// The proxy ends the connection after the one exchange.
				if rest, _ := io.ReadAll(br); len(rest) != 0 {
					t.Errorf("%s: after the answer, the client read %q", tc.name, rest)
				}
				c.Close()
				got := origin.seen()[before:]
				if len(got) != 1 || !strings.Contains(got[0], "/one") {
					t.Errorf("%s: the origin read %q, want the one request", tc.name, got)
				}
			}
		})
	}
}

// TestTunnelHostPinned: a request inside a tunnel goes to the tunnel's
// host, in origin form with the checked Host header, whatever host its
// Host header or absolute target names (domain fronting: another site on
// the same server).
func TestTunnelHostPinned(t *testing.T) {
	origin := newHeadOrigin(t)
	for _, r := range tunnelRoutes {
		if r.name == hostRoute.name {
			continue // there the Host header names the tunnel's host
		}
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin.server, Config{})
			for _, head := range []string{
				"GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n",
				"GET http://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n",
			} {
				before := len(origin.seen())
				c, br := r.open(t, e, "api.test", origin.port)
				io.WriteString(c, head)
				if !answered(br) {
					t.Fatalf("%q: not answered", head)
				}
				c.Close()
				want := "GET /x HTTP/1.1 host=api.test:" + strconv.Itoa(origin.port)
				if got := origin.seen()[before:]; len(got) != 1 || got[0] != want {
					t.Errorf("%q: the origin read %q, want %q", head, got, want)
				}
			}
		})
	}
}

// denyPaths is an agent policy that allows every tunnel and refuses the
// plain-HTTP URLs whose path starts with /secret.
type denyPaths struct{}

func (denyPaths) CheckRequest(method, url, host string, port int) policyengine.Decision {
	if i := strings.Index(url, "://"); i >= 0 {
		if rest := url[i+3:]; strings.Contains(rest, "/secret") {
			return policyengine.Decision{Action: policyengine.Deny, Rule: "url.deny: */secret*", Reason: url + ": denied by the test's URL rule"}
		}
	}
	return policyengine.Decision{Action: policyengine.Allow}
}

func (denyPaths) CheckAddr(string, netip.Addr, int) policyengine.Decision {
	return policyengine.Decision{Action: policyengine.Allow}
}

// TestTunnelURLChecked: a request inside a tunnel is checked against the
// URL rules, as through HTTP_PROXY: a denied path is a 403 and reaches
// nothing.
func TestTunnelURLChecked(t *testing.T) {
	origin := newHeadOrigin(t)
	for _, r := range tunnelRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin.server, Config{Policy: denyPaths{}})
			before := len(origin.seen())
			c, br := r.open(t, e, "api.test", origin.port)
			if c == nil {
				t.Fatal("the tunnel was refused")
			}
			io.WriteString(c, r.head("api.test", origin.port, "/secret/keys"))
			resp, err := readResponse(br)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			checkRefusal(t, resp, 403)
			if !strings.Contains(resp.header["x-corral-reason"], "denied by the test's URL rule") {
				t.Errorf("reason %q", resp.header["x-corral-reason"])
			}
			if ev := e.tp.events.last(t); ev.Decision != "deny" || ev.URL != "http://api.test:"+strconv.Itoa(origin.port)+"/secret/keys" || ev.Rule != "url.deny: */secret*" {
				t.Errorf("audit event %+v", ev)
			}
			if !r.try(t, e, "api.test", origin.port) {
				t.Error("an allowed path was refused")
			}
			if got := origin.seen()[before:]; len(got) != 1 || strings.Contains(got[0], "secret") {
				t.Errorf("the origin read %q, want only the allowed request", got)
			}
		})
	}
}

// TestTunnelHeadShapes: a head split into single bytes, sent late, or
// longer than the proxy's first read is still a request, served alone;
// heads the proxy refuses through HTTP_PROXY are refused inside a tunnel
// too, reaching nothing.
func TestTunnelHeadShapes(t *testing.T) {
	origin := newHeadOrigin(t)
	for _, r := range tunnelRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin.server, Config{})
			authority := "api.test:" + strconv.Itoa(origin.port)
			long := "/" + strings.Repeat("a", 20<<10)
			for _, tc := range []struct {
				name, head string
				bytewise   bool
				status     int // 0: answered by the origin
			}{
				{"byte by byte", r.head("api.test", origin.port, "/split"), true, 0},
				{"20 KiB target", "GET " + long + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", false, 0},
				{"40 KiB head", "GET / HTTP/1.1\r\nHost: " + authority + "\r\nX-Big: " + strings.Repeat("b", 40<<10) + "\r\n\r\n", false, 431},
				{"lower-case method", "get / HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", false, 400},
				{"leading empty line", "\r\nGET / HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", false, 400},
				{"HTTP/0.9", "GET /old\r\n\r\n", false, 400},
				{"bare LF", "GET / HTTP/1.1\nHost: " + authority + "\n\n", false, 400},
				{"two lengths", "POST / HTTP/1.1\r\nHost: " + authority + "\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello" + smuggled, false, 400},
				{"CONNECT inside", "CONNECT evil.example:80 HTTP/1.1\r\nHost: evil.example:80\r\n\r\n", false, 400},
			} {
				sniffed := r.name == hostRoute.name
				if sniffed && len(tc.head) > maxSniff {
					continue // the Host sniffer reads at most maxSniff bytes
				}
				before := len(origin.seen())
				c, br := r.open(t, e, "api.test", origin.port)
				if c == nil {
					t.Fatalf("%s: refused", tc.name)
				}
				if tc.bytewise && !sniffed { // that route's proxy reads the head before it decides
					time.Sleep(50 * time.Millisecond) // sent late: there is no window to miss
					for i := range len(tc.head) {
						c.Write([]byte{tc.head[i]})
					}
				} else {
					io.WriteString(c, tc.head)
				}
				resp, err := readResponse(br)
				switch {
				case sniffed && tc.status != 0 && (err != nil || resp.status == 403):
					// A head the sniffer cannot read a host from (or
					// one naming another) decides the tunnel by the
					// bare address, which no rule allows.
				case err != nil:
					t.Errorf("%s: %v", tc.name, err)
				case tc.status == 0 && (resp.status != 200 || resp.body != "ok"):
					t.Errorf("%s: %d %s, want the origin's answer", tc.name, resp.status, resp.header["x-corral-reason"])
				case tc.status != 0:
					checkRefusal(t, resp, tc.status)
				}
				c.Close()
				got := origin.seen()[before:]
				if want := map[bool]int{true: 1, false: 0}[tc.status == 0]; len(got) != want {
					t.Errorf("%s: the origin read %d heads, want %d", tc.name, len(got), want)
				}
			}
		})
	}
}

// TestTunnelOtherProtocols: a tunnel whose client does not start with an
// HTTP request line is relayed byte for byte, as before: a protocol
// where the server speaks first, one whose first line is not a request
// line (SSH, Redis), and binary.
func TestTunnelOtherProtocols(t *testing.T) {
	greeter := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "220 hello\r\n")
		io.Copy(c, c)
	})
	echoer := startServer(t, "127.0.0.1:0", echo)
	for _, r := range tunnelRoutes {
		if r.name == hostRoute.name {
			continue // decided by an HTTP head
		}
		t.Run(r.name, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				origin *server
				send   string
				want   string
			}{
				{"server first", greeter, "EHLO me\r\n", "220 hello\r\nEHLO me\r\n"},
				{"server first, then a request line", greeter, "GET / HTTP/1.1\r\n\r\n", "220 hello\r\nGET / HTTP/1.1\r\n\r\n"},
				{"ssh", echoer, "SSH-2.0-OpenSSH_9.2\r\n", "SSH-2.0-OpenSSH_9.2\r\n"},
				{"redis inline", echoer, "GET key\r\nSET key value\r\n", "GET key\r\nSET key value\r\n"},
				{"binary", echoer, "\x00\x00\x00\x08\x04\xd2\x16\x2f", "\x00\x00\x00\x08\x04\xd2\x16\x2f"},
			} {
				e := tunnelEnv(t, tc.origin, Config{})
				c, br := r.open(t, e, "api.test", tc.origin.port)
				if c == nil {
					t.Fatalf("%s: refused", tc.name)
				}
				if tc.origin == greeter {
					// The client waits for the greeting, as such clients do.
					if l, err := br.ReadString('\n'); err != nil || l != "220 hello\r\n" {
						t.Fatalf("%s: greeting %q, %v", tc.name, l, err)
					}
					tc.want = strings.TrimPrefix(tc.want, "220 hello\r\n")
				}
				io.WriteString(c, tc.send)
				c.(*net.TCPConn).CloseWrite()
				got, _ := io.ReadAll(br)
				if string(got) != tc.want {
					t.Errorf("%s: relayed %q, want %q", tc.name, got, tc.want)
				}
				c.Close()
			}
		})
	}
}

// TestTunnelSimpleRequestAtEnd: a method and a target the client ends its
// side after ("GET /secret", then FIN) is an HTTP/0.9 request to some
// origins (Python's http.server): it is not relayed, where a bare word
// ended the same way is.
func TestTunnelSimpleRequestAtEnd(t *testing.T) {
	got := make(chan string, 4)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		got <- string(b)
		c.Write(b)
	})
	for _, r := range []route{connectRoute, socksRoute, fakeDNSRoute} {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin, Config{})
			for _, tc := range []struct{ send, want string }{{"GET /secret", ""}, {"hello", "hello"}} {
				c, br := r.open(t, e, "api.test", origin.port)
				io.WriteString(c, tc.send)
				c.(*net.TCPConn).CloseWrite()
				io.ReadAll(br)
				c.Close()
				select {
				case b := <-got:
					if b != tc.want {
						t.Errorf("%q then the end: the origin got %q, want %q", tc.send, b, tc.want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%q: the origin's connection did not end", tc.send)
				}
			}
		})
	}
}

// TestTunnelOriginEndsFirst: an origin that half-closes before it says
// anything has not spoken first; the client's first bytes still decide,
// and its pipelined requests do not reach an origin that goes on
// reading.
func TestTunnelOriginEndsFirst(t *testing.T) {
	heads := make(chan int, 4)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		heads <- strings.Count(string(b), " HTTP/1.1\r\n")
	})
	for _, r := range []route{connectRoute, socksRoute, fakeDNSRoute} {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin, Config{})
			c, br := r.open(t, e, "api.test", origin.port)
			time.Sleep(50 * time.Millisecond) // the origin's end comes first
			io.WriteString(c, r.head("api.test", origin.port, "/one")+r.head("api.test", origin.port, "/two"))
			io.ReadAll(br)
			c.Close()
			select {
			case n := <-heads:
				if n != 1 {
					t.Errorf("the origin read %d request heads, want 1", n)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the origin's connection did not end")
			}
		})
	}
}

// h2cPreface is HTTP/2's connection preface without TLS (prior
// knowledge): many requests in one connection, which the proxy cannot
// count.
const h2cPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// TestTunnelH2C: under a request cap, HTTP/2 without TLS is refused (its
// requests cannot be counted); without one it is relayed as it is.
func TestTunnelH2C(t *testing.T) {
	echoer := startServer(t, "127.0.0.1:0", echo)
	for _, r := range []route{connectRoute, socksRoute, fakeDNSRoute} {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, echoer, Config{})
			c, br := r.open(t, e, "api.test", echoer.port)
			io.WriteString(c, h2cPreface)
			c.(*net.TCPConn).CloseWrite()
			if got, _ := io.ReadAll(br); string(got) != h2cPreface {
				t.Errorf("without a cap: relayed %q", got)
			}
			e = tunnelEnv(t, echoer, Config{Budgets: []policyengine.Budget{{From: "s", Total: policyengine.Cap{Requests: 100}}}})
			c, br = r.open(t, e, "api.test", echoer.port)
			io.WriteString(c, h2cPreface)
			if got, _ := io.ReadAll(br); len(got) != 0 {
				t.Errorf("under a request cap: the client read %q, want the connection ended", got)
			}
			if ev := e.tp.events.last(t); ev.Decision != "deny" || ev.Rule != "network.budget" || !strings.Contains(ev.Reason, "HTTP/2") {
				t.Errorf("audit event %+v", ev)
			}
		})
	}
}

// TestTunnelWebSocket: a WebSocket upgrade inside a tunnel is one
// request; once the origin switched protocols, the tunnel relays both
// ways as it comes.
func TestTunnelWebSocket(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		var head []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if l == "\r\n" {
				break
			}
			head = append(head, strings.TrimSpace(l))
		}
		h := strings.ToLower(strings.Join(head, "\n"))
		if !strings.Contains(h, "\nupgrade: websocket") || !strings.Contains(h, "\nconnection: upgrade") {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.Copy(c, br)
	})
	for _, r := range tunnelRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := tunnelEnv(t, origin, Config{Budgets: []policyengine.Budget{{From: "s", Total: policyengine.Cap{Requests: 1}}}})
			c, br := r.open(t, e, "api.test", origin.port)
			io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: api.test:"+strconv.Itoa(origin.port)+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
			resp, err := readResponse(br)
			if err != nil || resp.status != 101 {
				t.Fatalf("upgrade: %+v %v", resp, err)
			}
			io.WriteString(c, "frames, as they come")
			c.(*net.TCPConn).CloseWrite()
			if got, _ := io.ReadAll(br); string(got) != "frames, as they come" {
				t.Errorf("after the upgrade: %q", got)
			}
		})
	}
}
