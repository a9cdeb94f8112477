package netns

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func parse(s string) (*request, error) {
	return readHead(bufio.NewReaderSize(strings.NewReader(s), 4096))
}

func TestReadHead(t *testing.T) {
	for _, tc := range []struct {
		head          string
		method, host  string
		port          int
		connect       bool
		target, proto string
	}{
		{"CONNECT api.test:443 HTTP/1.1\r\n\r\n", "CONNECT", "api.test", 443, true, "", "HTTP/1.1"},
		{"CONNECT [::1]:8443 HTTP/1.0\r\n\r\n", "CONNECT", "::1", 8443, true, "", "HTTP/1.0"},
		{"GET http://api.test/a/b?c=d HTTP/1.1\r\n\r\n", "GET", "api.test", 80, false, "/a/b?c=d", "HTTP/1.1"},
		{"GET http://api.test:8080 HTTP/1.1\r\n\r\n", "GET", "api.test", 8080, false, "/", "HTTP/1.1"},
		{"GET http://api.test?x HTTP/1.1\r\n\r\n", "GET", "api.test", 80, false, "/?x", "HTTP/1.1"},
		{"GET HTTP://API.TEST/ HTTP/1.1\r\n\r\n", "GET", "API.TEST", 80, false, "/", "HTTP/1.1"},
		{"GET http://[::1]:81/x HTTP/1.1\r\n\r\n", "GET", "::1", 81, false, "/x", "HTTP/1.1"},
		{"GET http://[::1]/ HTTP/1.1\r\n\r\n", "GET", "::1", 80, false, "/", "HTTP/1.1"},
		{"GET /p HTTP/1.1\r\nhost: api.test:81\r\n\r\n", "GET", "api.test", 81, false, "/p", "HTTP/1.1"},
	} {
		r, err := parse(tc.head)
		if err != nil {
			t.Errorf("%q: %v", tc.head, err)
			continue
		}
		if r.method != tc.method || r.host != tc.host || r.port != tc.port || r.connect != tc.connect ||
			r.target != tc.target || r.proto != tc.proto {
			t.Errorf("%q: got %+v", tc.head, *r)
		}
	}
}

func TestReadHeadErrors(t *testing.T) {
	for _, tc := range []struct {
		head   string
		status int // 0: an I/O error, no answer
	}{
		{"", 0},
		{"CONNECT api.test:443 HTTP/1.1\r\n", 0},
		{"CONNECT api.test:443 HTTP/1.1\r\nA: b", 0},
		{"CONNECT api.test:443 HTTP/1.1", 0},
		{"\r\n", 400},
		{"GET  HTTP/1.1\r\n\r\n", 400},
		{" / HTTP/1.1\r\n\r\n", 400},
		{"G3T http://a/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1 extra\r\n\r\n", 400},
		{"GET http://a/ XTTP/1.1\r\n\r\n", 400},
		{"GET https://a/ HTTP/1.1\r\n\r\n", 400},
		{"GET http:///x HTTP/1.1\r\n\r\n", 400},
		{"GET http://a:x/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://[::1]x/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://u@a/ HTTP/1.1\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"CONNECT a:1 HTTP/1.1\r\n: v\r\n\r\n", 400},
		{"CONNECT a:1 HTTP/1.1\r\nA\tB: v\r\n\r\n", 400},
		// Bare LF line ends are refused: the origin might not take them.
		{"POST http://api.test/ HTTP/1.1\nContent-Length: 0\n\n", 400},
		{"GET http://a/ HTTP/1.1\r\nX: y\n\r\n", 400},
		{"GET http://a/ HTTP/1.2\r\n\r\n", 400},
		{"GET http://a/\tb HTTP/1.1\r\n\r\n", 400},
		{"CONNECT " + strings.Repeat("a", maxHeadBytes) + ":1 HTTP/1.1\r\n\r\n", 431},
		{"CONNECT a:1 HTTP/1.1\r\n" + strings.Repeat("A: b\r\n", 101) + "\r\n", 431},
		{"CONNECT a:1 HTTP/1.1\r\n" + strings.Repeat("A: "+strings.Repeat("b", 1000)+"\r\n", 40) + "\r\n", 431},
	} {
		_, err := parse(tc.head)
		var he *headError
		switch {
		case err == nil:
			t.Errorf("%.60q: no error", tc.head)
		case tc.status == 0 && errors.As(err, &he):
			t.Errorf("%.60q: %v answered %d, want an I/O error", tc.head, err, he.status)
		case tc.status == 0 && !errors.Is(err, io.EOF):
			t.Errorf("%.60q: %v, want EOF", tc.head, err)
		case tc.status != 0 && (!errors.As(err, &he) || he.status != tc.status):
			t.Errorf("%.60q: %v, want status %d", tc.head, err, tc.status)
		}
	}
}

func TestOriginHead(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{
			"GET http://api.test/x HTTP/1.1\r\nHost: other\r\nAccept: */*\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: websocket\r\nConnection: Upgrade, X-Secret\r\nX-Secret: s\r\nUser-Agent: t\r\n\r\n",
			"GET /x HTTP/1.1\r\nHost: api.test\r\nAccept: */*\r\nUser-Agent: t\r\nConnection: close\r\n\r\n",
		},
		{
			"POST http://[::1]:8080/p HTTP/1.0\r\nContent-Length: 3\r\n\r\n",
			"POST /p HTTP/1.0\r\nHost: [::1]:8080\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
		},
		{
			"GET /q HTTP/1.1\r\nHOST: api.test:81\r\nkeep-alive: 1\r\n\r\n",
			"GET /q HTTP/1.1\r\nHost: api.test:81\r\nConnection: close\r\n\r\n",
		},
	} {
		r, err := parse(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := string(r.originHead(false)); got != tc.want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestSplitAuthority(t *testing.T) {
	for _, tc := range []struct {
		in      string
		defPort int
		host    string
		port    int
		ok      bool
	}{
		{"a.test", 80, "a.test", 80, true},
		{"a.test:1", 80, "a.test", 1, true},
		{"a.test:65535", 0, "a.test", 65535, true},
		{"[::1]", 80, "::1", 80, true},
		{"[::1]:9", 0, "::1", 9, true},
		{"a.test", 0, "", 0, false},
		{"a.test:", 0, "", 0, false},
		{"a.test:65536", 80, "", 0, false},
		{"a.test:-1", 80, "", 0, false},
		{"::1", 80, "", 0, false},
		{"[::1", 80, "", 0, false},
		{"[]:80", 80, "", 0, false},
		{":80", 80, "", 0, false},
		{"", 80, "", 0, false},
	} {
		host, port, err := splitAuthority(tc.in, tc.defPort)
		if (err == nil) != tc.ok || host != tc.host || port != tc.port {
			t.Errorf("splitAuthority(%q, %d) = %q, %d, %v", tc.in, tc.defPort, host, port, err)
		}
	}
}

// A port is digits only, as RFC 3986 has it.
func TestSplitAuthoritySignedPort(t *testing.T) {
	for _, in := range []string{"a.test:+443", "[::1]:+443"} {
		if host, port, err := splitAuthority(in, 0); err == nil {
			t.Errorf("splitAuthority(%q) = %q, %d; want an error", in, host, port)
		}
	}
}

func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n",
		"GET http://api.test/x?y HTTP/1.1\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
		"GET http://[::ffff:127.0.0.1]:1/ HTTP/1.0\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parse(s)
		if err != nil {
			var he *headError
			if errors.As(err, &he) && he.status != 400 && he.status != 431 && he.status != 501 {
				t.Fatalf("status %d", he.status)
			}
			return
		}
		if r.host == "" || r.port < 1 || r.port > 65535 || len(r.headers) > maxHeaders {
			t.Fatalf("parsed %q into %+v", s, *r)
		}
		if r.connect {
			return
		}
		if !strings.HasPrefix(r.target, "/") {
			t.Fatalf("origin-form target %q", r.target)
		}
		head := string(r.originHead(false))
		if !strings.HasSuffix(head, "\r\nConnection: close\r\n\r\n") || strings.Count(head, "\r\n\r\n") != 1 {
			t.Fatalf("origin head %q", head)
		}
		// One framing header at most, and it is the proxy's.
		lower := strings.ToLower(head)
		framing := strings.Count(lower, "\r\ncontent-length:") + strings.Count(lower, "\r\ntransfer-encoding:")
		want := 0
		if r.body.chunked || r.body.declared {
			want = 1
		}
		if framing != want {
			t.Fatalf("origin head %q has %d framing headers, want %d", head, framing, want)
		}
	})
}
