package netns

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// smuggled is a request a hostile client hides in a body: the origin must
// never see it.
const smuggled = "GET /secret HTTP/1.1\r\nHost: internal-admin\r\n\r\n"

// recordingOrigin records exactly the bytes each connection brings, up to
// the proxy's half-close or reset, and answers 200.
func recordingOrigin(t *testing.T) (*server, chan string) {
	got := make(chan string, 16)
	s := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		data, _ := io.ReadAll(c)
		got <- string(data)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	return s, got
}

func framingProxy(t *testing.T) (p *testProxy, origin *server, got chan string, authority string) {
	origin, got = recordingOrigin(t)
	authority = "api.test:" + strconv.Itoa(origin.port)
	p = startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	return p, origin, got, authority
}

// TestAmbiguousFramingRefused: a head whose body another parser could
// delimit differently is a 400 (501 for a coding the proxy does not
// decode), and the origin gets no connection at all, so the request
// hidden in the body goes nowhere.
func TestAmbiguousFramingRefused(t *testing.T) {
	p, origin, _, authority := framingProxy(t)
	line := "POST http://" + authority + "/in HTTP/1.1\r\n"
	body := "5\r\nhello\r\n0\r\n\r\n" + smuggled
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"two lengths", "Content-Length: 5\r\nContent-Length: 64\r\n", 400},
		{"two equal lengths", "Content-Length: 5\r\nContent-Length: 5\r\n", 400},
		{"length list", "Content-Length: 5, 5\r\n", 400},
		{"empty length beside chunked", "Content-Length: \r\nTransfer-Encoding: chunked\r\nContent-Length: 64\r\n", 400},
		{"empty length", "Content-Length:\r\n", 400},
		{"plus sign", "Content-Length: +5\r\n", 400},
		{"minus sign", "Content-Length: -1\r\n", 400},
		{"hex length", "Content-Length: 0x5\r\n", 400},
		{"decimal point", "Content-Length: 5.0\r\n", 400},
		{"space inside", "Content-Length: 5 5\r\n", 400},
		{"non-breaking space", "Content-Length: 5\u00a0\r\n", 400},
		{"fullwidth digit", "Content-Length: \uff15\r\n", 400},
		{"overflow", "Content-Length: 99999999999999999999\r\n", 400},
		{"chunked and length", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
		{"length and chunked", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400},
		{"chunked twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
		{"chunked not last", "Transfer-Encoding: chunked, gzip\r\n", 400},
		{"unknown coding", "Transfer-Encoding: gzip\r\n", 400},
		{"coding look-alike", "Transfer-Encoding: xchunked\r\n", 400},
		{"coding with parameter", "Transfer-Encoding: chunked;q=1\r\n", 400},
		{"empty coding", "Transfer-Encoding: \r\n", 400},
		{"coding before chunked", "Transfer-Encoding: gzip, chunked\r\n", 501},
		{"connection drops length", "Content-Length: 5\r\nConnection: Content-Length\r\n", 400},
		{"connection drops coding", "Transfer-Encoding: chunked\r\nConnection: close, transfer-encoding\r\n", 400},
		{"connection drops host", "Connection: Host\r\nContent-Length: 5\r\n", 400},
		{"folded coding", "X-A: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
		{"tab-folded", "Content-Length: 5\r\n\t, 64\r\n", 400},
		{"space before colon", "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n", 400},
		{"bare LF in head", "Transfer-Encoding: chunked\nContent-Length: 5\r\n", 400},
		{"bare CR in head", "X: a\rTransfer-Encoding: chunked\r\n", 400},
		{"two hosts", "Host: a\r\nHost: b\r\nContent-Length: 5\r\n", 400},
	} {
		r, _, _ := exchange(t, p.addr, line+tc.head+"\r\n"+body)
		if r.status != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.name, r.status, r.header["x-corral-reason"], tc.status)
		}
	}
	// An HTTP/1.0 request's framing is by Content-Length or the end of
	// the connection; Transfer-Encoding there is a smuggling attempt.
	r, _, _ := exchange(t, p.addr, "POST http://"+authority+"/in HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
	if r.status != 400 {
		t.Errorf("HTTP/1.0 with Transfer-Encoding: status %d, want 400", r.status)
	}
	if n := origin.accepts.Load(); n != 0 {
		t.Fatalf("the origin got %d connections for refused requests", n)
	}
}

// TestBrokenChunksCutUpstream: a chunked body that breaks its framing
// half-way (the head was fine, so the origin is already connected) is a
// 400 to the client, and the origin never gets the bytes after the break,
// so the request hidden there never arrives.
func TestBrokenChunksCutUpstream(t *testing.T) {
	p, _, got, authority := framingProxy(t)
	head := "POST http://" + authority + "/in HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct{ name, body string }{
		{"bare LF after size", "5\nhello\r\n0\r\n\r\n"},
		{"bare CR after size", "5\rhello\r\n0\r\n\r\n"},
		{"plus sign", "+5\r\nhello\r\n0\r\n\r\n"},
		{"minus sign", "-5\r\nhello\r\n0\r\n\r\n"},
		{"leading space", " 5\r\nhello\r\n0\r\n\r\n"},
		{"trailing space", "5 \r\nhello\r\n0\r\n\r\n"},
		{"0x prefix", "0x5\r\nhello\r\n0\r\n\r\n"},
		{"empty size", "\r\nhello\r\n0\r\n\r\n"},
		{"overflow", "10000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"wraps to small", "ffffffffffffffff5\r\nhello\r\n0\r\n\r\n"},
		{"data longer than size", "3\r\nhello\r\n0\r\n\r\n"},
		{"data without CRLF", "5\r\nhello0\r\n\r\n"},
		{"data with bare LF", "5\r\nhello\n0\r\n\r\n"},
		{"extension with bare LF", "5;a=b\nhello\r\n0\r\n\r\n"},
		{"extension with control", "5;a=\x01\r\nhello\r\n0\r\n\r\n"},
		{"huge extension", "5;" + strings.Repeat("a", 8192) + "\r\nhello\r\n0\r\n\r\n"},
		{"last chunk bare LF", "5\r\nhello\r\n0\n\n"},
		{"trailer bare LF", "5\r\nhello\r\n0\r\nX-T: v\n\r\n"},
		{"trailer not a field", "5\r\nhello\r\n0\r\nnot a field\r\n\r\n"},
		{"trailer folded", "5\r\nhello\r\n0\r\nX-T: v\r\n w\r\n\r\n"},
	} {
		r, _, _ := exchange(t, p.addr, head+tc.body+smuggled)
		if r.status != 400 {
			t.Errorf("%s: status %d, want 400", tc.name, r.status)
		}
		select {
		case up := <-got:
			if strings.Contains(up, "/secret") || strings.Contains(up, "internal-admin") {
				t.Errorf("%s: the hidden request reached the origin: %q", tc.name, up)
			}
			if strings.Contains(up, "0\r\n\r\n") {
				t.Errorf("%s: the origin got a complete body: %q", tc.name, up)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the origin saw no connection", tc.name)
		}
		if ev := p.events.last(t); ev.Decision != "error" || ev.Status != 400 {
			t.Errorf("%s: last audit event %+v, want the body error", tc.name, ev)
		}
	}
}

// TestBodiesReframed: the origin gets the body in the proxy's framing,
// byte for byte: its own Content-Length, its own chunks without
// extensions or trailers, and nothing the client sent after the body.
func TestBodiesReframed(t *testing.T) {
	p, _, got, authority := framingProxy(t)
	line := "POST http://" + authority + "/in HTTP/1.1\r\n"
	upHead := "POST /in HTTP/1.1\r\nHost: " + authority + "\r\n"
	for _, tc := range []struct{ name, in, want string }{
		{"length", "Content-Length: 5\r\n\r\nhello" + smuggled,
			upHead + "Content-Length: 5\r\nConnection: close\r\n\r\nhello"},
		{"padded length", "Content-Length: \t005 \r\n\r\nhello" + smuggled,
			upHead + "Content-Length: 5\r\nConnection: close\r\n\r\nhello"},
		{"zero length", "Content-Length: 0\r\n\r\n" + smuggled,
			upHead + "Content-Length: 0\r\nConnection: close\r\n\r\n"},
		{"no body", "\r\n" + smuggled,
			upHead + "Connection: close\r\n\r\n"},
		{"chunked", "Transfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled,
			upHead + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{"extensions and trailers dropped", "Transfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n00005;a=b;c=\"d\"\r\nhello\r\nA\r\n0123456789\r\n0;z\r\nX-T: v\r\n\r\n" + smuggled,
			upHead + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\na\r\n0123456789\r\n0\r\n\r\n"},
	} {
		r, _, _ := exchange(t, p.addr, line+tc.in)
		if r.status != 200 {
			t.Errorf("%s: status %d (%s)", tc.name, r.status, r.header["x-corral-reason"])
			continue
		}
		if up := <-got; up != tc.want {
			t.Errorf("%s: origin got\n%q\nwant\n%q", tc.name, up, tc.want)
		}
	}
}

// TestChunkSizeGrammar covers chunkSize alone.
func TestChunkSizeGrammar(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"a", 10, true}, {"FF", 255, true}, {"000010", 16, true},
		{"5;ext", 5, true}, {"5;a=\"b c\"", 5, true}, {"fffffffffffffff", 1<<60 - 1, true},
		{"", 0, false}, {";x", 0, false}, {"5 ", 0, false}, {" 5", 0, false}, {"+5", 0, false},
		{"-5", 0, false}, {"0x5", 0, false}, {"5 ;x", 0, false}, {"1000000000000000", 0, false}, {"g", 0, false},
	} {
		n, err := chunkSize([]byte(tc.in))
		var be *bodyError
		if (err == nil) != tc.ok || n != tc.n || (err != nil && !errors.As(err, &be)) {
			t.Errorf("chunkSize(%q) = %d, %v", tc.in, n, err)
		}
	}
}

// FuzzChunked: whatever the client sends, a chunked body the proxy
// accepts is written again canonically (hex sizes, CRLF, "0\r\n\r\n" at
// the end, nothing after it), and decoding that output gives it back
// unchanged.
func FuzzChunked(f *testing.F) {
	for _, s := range []string{"5\r\nhello\r\n0\r\n\r\n", "5;a=b\r\nhello\r\n0\r\nX: y\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"A\r\n0123456789\r\n0\r\n\r\n", "5\nhello\r\n0\r\n\r\n", "+5\r\nhello\r\n0\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := copyChunked(w, bufio.NewReaderSize(strings.NewReader(in), 4096)); err != nil {
			return
		}
		w.Flush()
		first := out.String()
		if !strings.HasSuffix(first, "0\r\n\r\n") {
			t.Fatalf("%q re-framed as %q", in, first)
		}
		var again bytes.Buffer
		w2 := bufio.NewWriter(&again)
		if err := copyChunked(w2, bufio.NewReader(strings.NewReader(first+"trailing"))); err != nil {
			t.Fatalf("the proxy's own framing %q does not parse: %v", first, err)
		}
		w2.Flush()
		if again.String() != first {
			t.Fatalf("re-framing is not stable: %q then %q", first, again.String())
		}
	})
}

// TestResponseClosesConnection: the client is told the connection closes
// after the one response, whatever the origin says, so a client never
// reads an origin's extra bytes as the answer to its next request (to
// another host); interim 1xx responses pass, a 101 or an unreadable head
// is a 502.
func TestResponseClosesConnection(t *testing.T) {
	answer := make(chan string, 1)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.ReadAll(c)
		io.WriteString(c, <-answer)
	})
	authority := "api.test:" + strconv.Itoa(origin.port)
	p := startProxy(t, Config{
		Engine:   testEngine(t, authority, "preset:loopback:"+strconv.Itoa(origin.port)),
		Resolver: pin("api.test", "127.0.0.1"),
	})
	forged := "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
	for _, tc := range []struct{ name, answer, want string }{
		{"keep-alive", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Kept: 1\r\n\r\nok" + forged,
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kept: 1\r\nConnection: close\r\n\r\nok" + forged},
		{"no connection header", "HTTP/1.1 204 No Content\r\n\r\n" + forged,
			"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n" + forged},
		{"framing kept", "HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"},
	} {
		answer <- tc.answer
		c := dial(t, p.addr)
		io.WriteString(c, "GET http://"+authority+"/ HTTP/1.1\r\n\r\n")
		got, _ := io.ReadAll(c)
		if string(got) != tc.want {
			t.Errorf("%s: client got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", ""} {
		answer <- bad
		r, _, _ := exchange(t, p.addr, "GET http://"+authority+"/ HTTP/1.1\r\n\r\n")
		checkRefusal(t, r, 502)
	}
}
