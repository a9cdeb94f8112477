package netns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// A plain-HTTP client connection carries one exchange: the proxy reads
// one request and closes after the response. A client that kept the
// connection for its next request (to another host, say) would read
// whatever else the origin sent as the answer to it, so the origin could
// forge answers in another host's name. The proxy therefore tells the
// client, in the response head, that the connection closes: it drops the
// origin's Connection, Keep-Alive and Proxy-Connection headers (and those
// Connection names, but for the framing ones) and adds "Connection: close". Interim 1xx responses
// go through as they came; a head the proxy cannot read is a 502.

// maxInterim bounds the 1xx responses before the final one.
const maxInterim = 8

// relayResponse copies the origin's response, read through br, to the
// client with its head rewritten, and the rest as it comes until the
// origin closes. With upgrade (a WebSocket upgrade was asked for) a 101
// goes through as it came, and upgraded says so: the caller relays the
// connection from then on.
func relayResponse(c, up net.Conn, br *bufio.Reader, idle time.Duration, upgrade bool) (upgraded bool, _ error) {
	for interim := 0; ; interim++ {
		up.SetReadDeadline(time.Now().Add(idle))
		head, status, err := readResponseHead(br)
		if err != nil {
			return false, err
		}
		if status == 101 && upgrade {
			if _, err := c.Write(head); err != nil {
				return false, err
			}
			upgraded = true
			break
		}
		if status >= 100 && status < 200 && status != 101 && interim < maxInterim {
			if _, err := c.Write(head); err != nil {
				return false, err
			}
			continue
		}
		if status < 200 {
			return false, &headError{status: 502, msg: fmt.Sprintf("the origin answered %d, which the proxy does not relay", status)}
		}
		if _, err := c.Write(closeHead(head)); err != nil {
			return false, err
		}
		break
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := c.Write(b); err != nil {
			return false, err
		}
	}
	if upgraded {
		return true, nil
	}
	if upgrade {
		// The origin refused the upgrade; the request was its one.
		closeWrite(up)
	}
	copyIdle(c, up, idle)
	return false, nil
}

// readResponseHead reads a status line and header lines up to the empty
// line, bounded as a request head is, and returns them as read.
func readResponseHead(br *bufio.Reader) ([]byte, int, error) {
	var head []byte
	for n := 0; ; n++ {
		l, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(head)+len(l) > maxHeadBytes || n > maxHeaders {
			return nil, 0, &headError{status: 502, msg: "the origin's response head is too large"}
		}
		if err != nil {
			if err == io.EOF && len(head)+len(l) == 0 {
				return nil, 0, &headError{status: 502, msg: "the origin closed without a response"}
			}
			return nil, 0, err
		}
		head = append(head, l...)
		if n > 0 && (len(l) == 2 && l[0] == '\r' || len(l) == 1) {
			break
		}
	}
	status, ok := statusCode(head)
	if !ok {
		return nil, 0, &headError{status: 502, msg: fmt.Sprintf("malformed status line from the origin %q", clip(string(head[:bytes.IndexByte(head, '\n')])))}
	}
	return head, status, nil
}

// statusCode reads the code of "HTTP/1.x NNN ...".
func statusCode(head []byte) (int, bool) {
	if len(head) < 12 || !bytes.HasPrefix(head, []byte("HTTP/1.")) || head[8] != ' ' {
		return 0, false
	}
	code := 0
	for _, c := range head[9:12] {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if len(head) > 12 && head[12] != ' ' && head[12] != '\r' && head[12] != '\n' {
		return 0, false
	}
	return code, true
}

// closeHead rewrites a final response head so the client closes the
// connection after it: the origin's connection headers go, and
// "Connection: close" ends the head.
func closeHead(head []byte) []byte {
	lines := strings.SplitAfter(string(head), "\n")
	drop := map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "connection") {
			for _, tok := range strings.Split(v, ",") {
				// The framing stays: the client reads this one response
				// by it, and the connection ends after.
				if tok = strings.ToLower(strings.TrimSpace(tok)); tok != "content-length" && tok != "transfer-encoding" {
					drop[tok] = true
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString(lines[0])
	for _, l := range lines[1:] {
		if strings.TrimRight(l, "\r\n") == "" {
			break
		}
		if k, _, ok := strings.Cut(l, ":"); ok && drop[strings.ToLower(strings.TrimSpace(k))] {
			continue
		}
		b.WriteString(l)
	}
	b.WriteString("Connection: close\r\n\r\n")
	return []byte(b.String())
}
