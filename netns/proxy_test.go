package netns

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpOrigin is a raw HTTP/1.1 origin: it records each request head it
// gets, line by line, and answers "hello" with Connection: close.
func httpOrigin(t *testing.T) (*server, chan []string) {
	heads := make(chan []string, 16)
	s := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		var head []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			l = strings.TrimRight(l, "\r\n")
			if l == "" {
				break
			}
			head = append(head, l)
		}
		heads <- head
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
	})
	return s, heads
}

// headerValues returns the values of header name in a recorded head.
func headerValues(head []string, name string) []string {
	var out []string
	for _, l := range head[1:] {
		k, v, _ := strings.Cut(l, ":")
		if strings.EqualFold(k, name) {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

func TestPlainHTTPAllowed(t *testing.T) {
	origin, heads := httpOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})

	r, br, _ := exchange(t, p.addr, "GET http://"+authority+"/path?q=1 HTTP/1.1\r\n"+
		"Host: evil.test\r\n"+
		"Proxy-Authorization: Basic dXNlcjpwdw==\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Connection: keep-alive, X-Hop\r\n"+
		"X-Hop: dropped\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"X-Keep: kept\r\n\r\n")
	if r.status != 200 || r.body != "hello" {
		t.Fatalf("got %d %q, want 200 \"hello\"", r.status, r.body)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("bytes after the response: %q", rest)
	}
	head := <-heads
	if head[0] != "GET /path?q=1 HTTP/1.1" {
		t.Errorf("origin got request line %q, want origin form %q", head[0], "GET /path?q=1 HTTP/1.1")
	}
	want := map[string][]string{
		"Host":                {authority},
		"Connection":          {"close"},
		"Proxy-Authorization": nil,
		"Proxy-Connection":    nil,
		"Keep-Alive":          nil,
		"X-Hop":               nil, // named in Connection
		"X-Keep":              {"kept"},
	}
	for name, vals := range want {
		if got := headerValues(head, name); !slices.Equal(got, vals) {
			t.Errorf("origin got %s %q, want %q (head %q)", name, got, vals, head)
		}
	}
	ev := p.events.last(t)
	if ev.Decision != "allow" || ev.Status != 200 || ev.Method != "GET" || ev.Host != "api.test" ||
		ev.Port != origin.port || ev.Rule != authority || ev.Addr != origin.addr {
		t.Errorf("audit event %+v", ev)
	}
}

func TestPlainHTTPDefaults(t *testing.T) {
	origin, heads := httpOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	// No path: the origin form is "/"; a query right after the authority
	// gets its "/"; a body the client sent with the head goes along.
	for _, tc := range []struct{ target, want string }{
		{"http://" + authority, "POST / HTTP/1.1"},
		{"http://api.test:" + strconv.Itoa(origin.port) + "?x=1", "POST /?x=1 HTTP/1.1"},
	} {
		r, _, _ := exchange(t, p.addr, "POST "+tc.target+" HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody")
		if r.status != 200 {
			t.Fatalf("%s: status %d", tc.target, r.status)
		}
		head := <-heads
		if head[0] != tc.want {
			t.Errorf("%s: origin got %q, want %q", tc.target, head[0], tc.want)
		}
		if got := headerValues(head, "Host"); !slices.Equal(got, []string{authority}) {
			t.Errorf("%s: Host %q, want %q", tc.target, got, authority)
		}
	}
}

// The Host header the origin gets is the authority the policy checked,
// not the client's spelling of it.
func TestPlainHTTPHostIsCanonical(t *testing.T) {
	origin, heads := httpOrigin(t)
	port := strconv.Itoa(origin.port)
	res := &stubResolver{answer: func(int64, string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	p := startProxy(t, Config{
		Engine:   testEngine(t, "api.test:"+port, "xn--bcher-kva.test:"+port, "preset:loopback:"+port),
		Resolver: res,
	})
	for _, tc := range []struct{ host, want string }{
		{"API.TEST", "api.test"},
		{"api.test.", "api.test"},
		{"b\u00fccher.test", "xn--bcher-kva.test"},
	} {
		r, _, _ := exchange(t, p.addr, "GET http://"+tc.host+":"+port+"/ HTTP/1.1\r\n\r\n")
		if r.status != 200 {
			t.Fatalf("%s: status %d (%s)", tc.host, r.status, r.header["x-corral-reason"])
		}
		if got := headerValues(<-heads, "Host"); !slices.Equal(got, []string{tc.want + ":" + port}) {
			t.Errorf("GET http://%s:%s/: origin got Host %q, want %q", tc.host, port, got, tc.want+":"+port)
		}
	}
}

// A real HTTP client configured with the proxy gets through it.
func TestPlainHTTPWithNetHTTPClient(t *testing.T) {
	origin, heads := httpOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr})}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + authority + "/via-client")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, err)
	}
	if head := <-heads; head[0] != "GET /via-client HTTP/1.1" {
		t.Errorf("origin got %q", head[0])
	}

	// A denied host comes back as the proxy's 403 with its reason.
	resp, err = client.Get("http://other.test:" + strconv.Itoa(origin.port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Corral-Reason") == "" || !strings.Contains(string(body), "other.test") {
		t.Errorf("denied request: %d %q %q", resp.StatusCode, resp.Header.Get("X-Corral-Reason"), body)
	}
}

// halfCloseOrigin echoes until the client half-closes, reports that, and
// then still sends "after-eof".
func halfCloseOrigin(t *testing.T) (*server, chan struct{}) {
	eof := make(chan struct{}, 1)
	s := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(c, c); err != nil {
			return
		}
		eof <- struct{}{}
		io.WriteString(c, "after-eof")
	})
	return s, eof
}

func TestConnectTunnel(t *testing.T) {
	origin, eof := halfCloseOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	c := dial(t, p.addr)
	// Early data right behind the head, in the same write.
	if _, err := io.WriteString(c, connectHead(authority)+"early\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	r, err := readResponse(br)
	if err != nil {
		t.Fatal(err)
	}
	if r.status != 200 || r.body != "" || len(r.header) != 0 {
		t.Fatalf("CONNECT answer %+v, want a bare 200", r)
	}
	expect := func(want string) {
		t.Helper()
		b := make([]byte, len(want))
		if _, err := io.ReadFull(br, b); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	expect("early\n")
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB each way
	go io.WriteString(c, big)
	expect(big)

	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-eof:
	case <-time.After(5 * time.Second):
		t.Fatal("the origin never saw the client's half-close")
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "after-eof" {
		t.Fatalf("after half-close read %q, %v; want \"after-eof\" then EOF", rest, err)
	}
	ev := p.events.last(t)
	if ev.Method != "CONNECT" || ev.Decision != "allow" || ev.Status != 200 || ev.Addr != origin.addr {
		t.Errorf("audit event %+v", ev)
	}
}

// The other half-close: the origin finishes first, the client keeps
// sending.
func TestConnectOriginHalfClose(t *testing.T) {
	got := make(chan string, 1)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "greeting")
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		got <- string(b)
	})
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback")})
	br, c := tunnel(t, p.addr, origin.addr)
	b, err := io.ReadAll(br)
	if err != nil || string(b) != "greeting" {
		t.Fatalf("read %q, %v; want \"greeting\" then EOF", b, err)
	}
	io.WriteString(c, "late reply")
	c.CloseWrite()
	if s := <-got; s != "late reply" {
		t.Errorf("origin got %q after its half-close", s)
	}
}

func TestConnectIPRules(t *testing.T) {
	t.Run("v4", func(t *testing.T) {
		origin := startServer(t, "127.0.0.1:0", echo)
		p := startProxy(t, Config{Engine: testEngine(t, origin.addr)})
		br, c := tunnel(t, p.addr, origin.addr)
		roundTripEcho(t, br, c, "v4")
		// Another notation of the same address matches the IP rule.
		br, c = tunnel(t, p.addr, "127.1:"+strconv.Itoa(origin.port))
		roundTripEcho(t, br, c, "127.1")
	})
	t.Run("v6", func(t *testing.T) {
		ln, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		ln.Close()
		origin := startServer(t, "[::1]:0", echo)
		p := startProxy(t, Config{Engine: testEngine(t, origin.addr)})
		br, c := tunnel(t, p.addr, origin.addr)
		roundTripEcho(t, br, c, "v6")
		if ev := p.events.last(t); ev.Host != "::1" || ev.Addr != origin.addr {
			t.Errorf("audit event %+v", ev)
		}
	})
}

// roundTripEcho sends msg as a line and reads it back. (A word without its
// line end could still begin an HTTP request line, which the proxy waits
// to see the end of before it relays a byte: tunnel.go.)
func roundTripEcho(t testing.TB, br *bufio.Reader, c net.Conn, msg string) {
	t.Helper()
	msg += "\n"
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(br, b); err != nil || string(b) != msg {
		t.Fatalf("echo: read %q, %v; want %q", b, err, msg)
	}
}

func TestMalformedRequests(t *testing.T) {
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback")})
	big := strings.Repeat("a", maxHeadBytes)
	many := strings.Repeat("X-A: 1\r\n", maxHeaders+1)
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"garbage", "GARBAGE\r\n\r\n", 400},
		{"no version", "GET http://api.test/\r\n\r\n", 400},
		{"lower-case method", "get http://api.test/ HTTP/1.1\r\n\r\n", 400},
		{"HTTP/2", "GET http://api.test/ HTTP/2.0\r\n\r\n", 400},
		{"HTTP/1.10", "GET http://api.test/ HTTP/1.10\r\n\r\n", 400},
		{"https absolute", "GET https://x/ HTTP/1.1\r\n\r\n", 400},
		{"ftp", "GET ftp://x/ HTTP/1.1\r\n\r\n", 400},
		{"asterisk", "OPTIONS * HTTP/1.1\r\n\r\n", 400},
		{"credentials", "GET http://user:pw@api.test/ HTTP/1.1\r\n\r\n", 400},
		{"origin form without Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"CONNECT without port", "CONNECT api.test HTTP/1.1\r\n\r\n", 400},
		{"CONNECT port 0", "CONNECT api.test:0 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT port too big", "CONNECT api.test:65536 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT unbracketed v6", "CONNECT ::1:80 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT open bracket", "CONNECT [::1:80 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT empty host", "CONNECT :80 HTTP/1.1\r\n\r\n", 400},
		{"header without colon", "CONNECT api.test:443 HTTP/1.1\r\nNoColon\r\n\r\n", 400},
		{"space in header name", "CONNECT api.test:443 HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
		{"folded header", "CONNECT api.test:443 HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
		{"long header", "CONNECT api.test:443 HTTP/1.1\r\nX-Big: " + big + "\r\n\r\n", 431},
		{"long request line", "GET http://api.test/" + big + " HTTP/1.1\r\n\r\n", 431},
		{"many headers", "CONNECT api.test:443 HTTP/1.1\r\n" + many + "\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, p.addr)
			// A refusal may come while the client is still sending.
			go io.WriteString(c, tc.head)
			r, err := readResponse(bufio.NewReader(c))
			if err != nil {
				t.Fatal(err)
			}
			checkRefusal(t, r, tc.status)
			if ev := p.events.last(t); ev.Decision != "error" || ev.Status != tc.status || ev.Reason != r.header["x-corral-reason"] {
				t.Errorf("audit event %+v", ev)
			}
		})
	}
}

// A head just inside the limits is read and decided, not refused.
func TestHeadAtLimits(t *testing.T) {
	p := startProxy(t, Config{Engine: testEngine(t)})
	first := "CONNECT api.test:443 HTTP/1.1\r\n"
	pad := maxHeadBytes - len(first) - len("X-Pad: \r\n") - len("\r\n")
	for name, head := range map[string]string{
		"32 KiB":      first + "X-Pad: " + strings.Repeat("a", pad) + "\r\n\r\n",
		"100 headers": first + strings.Repeat("X-A: 1\r\n", maxHeaders) + "\r\n",
	} {
		r, _, _ := exchange(t, p.addr, head)
		if r.status != 403 {
			t.Errorf("%s: status %d (%s), want 403 from the policy", name, r.status, r.header["x-corral-reason"])
		}
	}
	r, _, _ := exchange(t, p.addr, first+"X-Pad: "+strings.Repeat("a", pad+1)+"\r\n\r\n")
	if r.status != 431 {
		t.Errorf("one byte over: status %d, want 431", r.status)
	}
}
