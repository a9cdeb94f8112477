package netns

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAmbiguousPathsRefused: paths an origin could read differently from
// the check (encoded slashes and dots, fragments, ';' on a dot segment,
// backslashes) are refused before anything is dialled; dot segments and
// repeated slashes are resolved before the check and sent resolved.
func TestAmbiguousPathsRefused(t *testing.T) {
	origin, heads := httpOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	for _, target := range []string{"/public/..%2fsecret", "/public/%2e%2e/secret", "/a%5cb", "/public/#/../secret",
		"/public/..;/admin", "/x/.;/y", `/a\b`, "/a%2Fb", "/a%00b"} {
		r, _, _ := exchange(t, p.addr, "GET http://"+authority+target+" HTTP/1.1\r\n\r\n")
		if r.status != 400 {
			t.Errorf("%s: status %d, want 400", target, r.status)
		}
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Fatalf("the origin got %d connections for refused paths", n)
	}
	r, _, _ := exchange(t, p.addr, "GET http://"+authority+"/public/../secret//x?q=a/../b HTTP/1.1\r\n\r\n")
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	if head := <-heads; head[0] != "GET /secret/x?q=a/../b HTTP/1.1" {
		t.Errorf("origin got %q, want the resolved path", head[0])
	}
	if ev := p.events.last(t); ev.URL != "http://"+authority+"/secret/x?q=a/../b" {
		t.Errorf("audit URL %q", ev.URL)
	}
}

// TestPipelinedRequestNotForwarded: after the first request and its
// declared body, nothing more of the client's bytes goes upstream, also
// for a chunked body.
func TestPipelinedRequestNotForwarded(t *testing.T) {
	got := make(chan string, 2)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		data, _ := io.ReadAll(c) // the proxy half-closes after the body
		got <- string(data)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	second := "GET /secret HTTP/1.1\r\nHost: internal-admin\r\n\r\n"
	for _, c := range []struct{ name, head, body string }{
		{"content-length", "POST http://" + authority + "/in HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "hello"},
		{"chunked", "POST http://" + authority + "/in HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
	} {
		r, _, _ := exchange(t, p.addr, c.head+c.body+second)
		if r.status != 200 {
			t.Fatalf("%s: status %d", c.name, r.status)
		}
		upstream := <-got
		if !strings.HasSuffix(upstream, c.body) || strings.Contains(upstream, "/secret") || strings.Contains(upstream, "internal-admin") {
			t.Errorf("%s: upstream got %q", c.name, upstream)
		}
	}
}

// TestPipelinedAnswerNotLost: the proxy serves one request a connection
// and leaves what follows unread. Closing a socket with unread input
// sends a reset, and on a loaded host a reset can reach the client before
// the answer sent just before it (they may leave through different CPUs'
// queues), so the client reads "Connection reset by peer" and no answer.
// The proxy ends its side first and reads the rest away.
func TestPipelinedAnswerNotLost(t *testing.T) {
	// The origin answers late, so the client's later bytes are waiting
	// when the proxy is done.
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.ReadAll(c) // the proxy half-closes after the request
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	first := "GET http://" + authority + "/one HTTP/1.1\r\n\r\n"
	pipelined := strings.Repeat("GET /two HTTP/1.1\r\nHost: "+authority+"\r\n\r\n", 2000)
	for i := range 3 {
		c := dial(t, p.addr)
		if _, err := io.WriteString(c, first); err != nil {
			t.Fatal(err)
		}
		// The rest comes in a later write, so it waits in the proxy's
		// socket, unread, when the proxy is done with the connection.
		time.Sleep(30 * time.Millisecond)
		if _, err := io.WriteString(c, pipelined); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the answer and the close arrive meanwhile
		br := bufio.NewReader(c)
		r, err := readResponse(br)
		if err != nil {
			t.Fatalf("round %d: the answer was lost: %v", i, err)
		}
		if r.status != 200 {
			t.Fatalf("round %d: status %d", i, r.status)
		}
		// After the answer comes the end (FIN), not a reset: only an
		// ordered end cannot overtake the answer on its way.
		if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
			t.Fatalf("round %d: after the answer: %d bytes, %v; want the end of the stream", i, n, err)
		}
		c.Close()
	}
}

// TestControlCharactersRefused: a bare CR or other control character in
// the head is a 400, not a second header upstream.
func TestControlCharactersRefused(t *testing.T) {
	origin, _ := httpOrigin(t)
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	for _, head := range []string{
		"GET http://" + authority + "/ HTTP/1.1\r\nX-A: v\rHost: evil.example\r\n\r\n",
		"GET http://" + authority + "/ HTTP/1.1\r\nX-A: v\x00w\r\n\r\n",
	} {
		r, _, _ := exchange(t, p.addr, head)
		if r.status != 400 {
			t.Errorf("%q: status %d, want 400", head, r.status)
		}
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Errorf("the origin got %d connections", n)
	}
}
