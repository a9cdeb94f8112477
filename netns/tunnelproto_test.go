package netns

import (
	"bufio"
	"strings"
	"testing"
)

func TestClassifyPrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tunnelProto
	}{
		{"", protoUndecided},
		{"G", protoUndecided},
		{"GET", protoUndecided},
		{"GET ", protoUndecided},
		{"GET /a", protoUndecided},
		{"GET /a ", protoUndecided},
		{"GET /a HTT", protoUndecided},
		{"GET /a HTTP/", protoHTTP1},
		{"GET /a HTTP/1.1\r\n", protoHTTP1},
		{"get /a http/1.1\r\n", protoHTTP1},        // lenient origins take any token, any case
		{"FOO  /a \tHTTP/1.1\r\n", protoHTTP1},     // runs of blanks
		{"\r\n\r\nGET / HTTP/1.1\r\n", protoHTTP1}, // empty lines first (RFC 9112 §2.2)
		{"\r\n", protoUndecided},
		{"GET /old\r\n", protoHTTP1}, // HTTP/0.9
		{"GET http://x/ HTTP/1.0\r\n", protoHTTP1},
		{"OPTIONS * HTTP/1.1\r\n", protoHTTP1},
		{"PRI * HTTP/2", protoUndecided},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", protoH2C},
		{"PRI * HTTP/1.1\r\n", protoHTTP1},
		{"SSH-2.0-OpenSSH_9.2\r\n", protoOther},
		{"EHLO me\r\n", protoOther},
		{"QUIT\r\n", protoOther},
		{"GET key\r\n", protoOther}, // Redis inline
		{"SET key value\r\n", protoOther},
		{"MAIL FROM:<a@b> SIZE=1\r\n", protoOther},
		{"CONNECT\naccept-version:1.2\n", protoOther}, // STOMP
		{"*1\r\n$4\r\nPING\r\n", protoOther},          // RESP
		{"AMQP\x00\x00\x09\x01", protoOther},
		{"\x16\x03\x01\x02\x00", protoOther}, // TLS
		{"\x00\x00\x00\x08\x04\xd2\x16\x2f", protoOther},
		{"0033git-upload-pack /p.git\x00host=x\x00", protoOther},
		{"GET /a\x00 HTTP/1.1\r\n", protoOther},
		{"GET \x01", protoOther},
		{"hello\n", protoOther},
		{"hello 0\n", protoOther},
	} {
		if got := classifyPrefix([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestClassifyAtEnd: what a client ended its side after is relayed with
// the end only when no origin could take it for a request then.
func TestClassifyAtEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tunnelProto
	}{
		{"hello", protoOther},
		{"GET", protoOther},
		{"GET ", protoOther},
		{"\r\n", protoOther},
		{"GET /secret", protoHTTP1}, // HTTP/0.9 at the end of the stream
		{"GET key", protoHTTP1},
		{"GET /a HTTP/1.1\r\n", protoHTTP1},
		{"SSH-2.0-x", protoOther},
		{"\x00abc", protoOther},
	} {
		if got := classifyAtEnd([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzClassifyPrefix: a decision never changes as more bytes come (so a
// head split across reads is decided as a whole one), and every head the
// proxy would serve as a request is taken for one.
func FuzzClassifyPrefix(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "SSH-2.0-x\r\n", "\r\nGET /x\r\n", "GET key\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := classifyPrefix(b)
		for i := range len(b) {
			if p := classifyPrefix(b[:i]); p != protoUndecided && p != whole {
				t.Fatalf("%q is %d, its first %d bytes %d", b, whole, i, p)
			}
		}
		if _, err := readHeadIn(bufio.NewReader(strings.NewReader(string(b))), true); err == nil && whole != protoHTTP1 {
			t.Fatalf("%q is a head the proxy serves, classified %d", b, whole)
		}
	})
}
