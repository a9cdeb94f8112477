package netns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// A plain HTTP request's body is delimited the way RFC 9112 §6.3 says,
// and only when that is unambiguous: the head names one framing, the
// proxy reads the body by it, and the origin gets the body re-framed by
// the proxy (its own Content-Length or its own chunks), never the
// client's framing headers or bytes. A request another parser could
// split differently ("Content-Length" twice, "Transfer-Encoding" beside
// "Content-Length", a Connection header that drops a framing header, a
// chunk line ending in a bare LF) is refused before anything is dialled;
// a chunked body that goes wrong half-way ends the upstream connection,
// which then holds an incomplete message, never a second one.

// framing is how a request's body is delimited.
type framing struct {
	chunked  bool  // Transfer-Encoding: chunked
	length   int64 // Content-Length, when not chunked
	declared bool  // a Content-Length was given (also 0)
}

// maxLengthDigits bounds Content-Length and chunk sizes well below
// overflow: 10^18 bytes and 16^15 bytes are more than anyone sends.
const maxLengthDigits = 18

// parseFraming reads the body's framing from the head, refusing every
// combination RFC 9112 calls an error or leaves to the recipient.
func (r *request) parseFraming() error {
	var lengths, codings []string
	hosts, sawTE := 0, false
	for _, h := range r.headers {
		switch strings.ToLower(h[0]) {
		case "content-length":
			lengths = append(lengths, h[1])
		case "transfer-encoding":
			sawTE = true
			for _, c := range strings.Split(h[1], ",") {
				codings = append(codings, strings.ToLower(strings.Trim(c, " \t")))
			}
		case "host":
			hosts++
		case "connection":
			for _, tok := range strings.Split(h[1], ",") {
				switch tok = strings.ToLower(strings.Trim(tok, " \t")); tok {
				case "content-length", "transfer-encoding", "host":
					// A hop that honours this drops the header and
					// frames the body differently than one that does not.
					return badRequest("Connection header names %s, which frames the request", tok)
				}
			}
		}
	}
	switch {
	case hosts > 1:
		return badRequest("more than one Host header")
	case len(lengths) > 1:
		return badRequest("more than one Content-Length header")
	case sawTE && len(lengths) > 0:
		return badRequest("both Transfer-Encoding and Content-Length")
	case sawTE && r.proto == "HTTP/1.0":
		return badRequest("Transfer-Encoding in an HTTP/1.0 request")
	case sawTE:
		return r.parseCodings(codings)
	case len(lengths) == 1:
		n, ok := parseLength(lengths[0])
		if !ok {
			return badRequest("Content-Length %q is not a number of bytes", clip(lengths[0]))
		}
		r.body = framing{length: n, declared: true}
	}
	return nil
}

// parseCodings accepts exactly one transfer coding, chunked: a final
// coding other than chunked leaves the length undetermined (RFC 9112
// §6.3), and the proxy decodes no other coding.
func (r *request) parseCodings(codings []string) error {
	if len(codings) == 0 || codings[len(codings)-1] != "chunked" {
		return badRequest("Transfer-Encoding %q does not end in chunked", clip(strings.Join(codings, ", ")))
	}
	for _, c := range codings[:len(codings)-1] {
		if c == "chunked" {
			return badRequest("Transfer-Encoding %q applies chunked twice", clip(strings.Join(codings, ", ")))
		}
	}
	if len(codings) > 1 {
		return &headError{status: 501, msg: fmt.Sprintf("Transfer-Encoding %q: only chunked alone is relayed", clip(strings.Join(codings, ", ")))}
	}
	r.body = framing{chunked: true}
	return nil
}

// parseLength parses 1*DIGIT: no sign, no space inside, no list.
func parseLength(s string) (int64, bool) {
	if s == "" || len(s) > maxLengthDigits || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// bodyError is a body that broke its framing half-way: the client gets a
// 400 and the origin a cut connection.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return e.msg }

// errBodyCut is a client that went away or stalled inside its body.
var errBodyCut = errors.New("the request body ended early")

// copyBody sends the request's body upstream in the framing originHead
// announced, and nothing the client sent after it.
func (r *request) copyBody(up io.Writer, br *bufio.Reader) error {
	switch {
	case r.body.chunked:
		w := bufio.NewWriterSize(up, 32<<10)
		if err := copyChunked(w, br); err != nil {
			return err
		}
		return w.Flush()
	case r.body.length > 0:
		if _, err := io.CopyN(up, br, r.body.length); err != nil {
			return cut(err)
		}
	}
	return nil
}

// copyChunked decodes a chunked body (RFC 9112 §7.1) and writes it again
// as chunks of the same sizes, without chunk extensions or trailer fields
// (RFC 9110 §6.5.1 lets an intermediary drop those).
func copyChunked(w *bufio.Writer, br *bufio.Reader) error {
	for {
		l, err := chunkLine(br)
		if err != nil {
			return err
		}
		n, err := chunkSize(l)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := skipTrailers(br); err != nil {
				return err
			}
			_, err := w.WriteString("0\r\n\r\n")
			return err
		}
		fmt.Fprintf(w, "%x\r\n", n)
		if _, err := io.CopyN(w, br, n); err != nil {
			return cut(err)
		}
		var crlf [2]byte
		if _, err := io.ReadFull(br, crlf[:]); err != nil {
			return cut(err)
		}
		if crlf != [2]byte{'\r', '\n'} {
			return &bodyError{"chunk data not followed by CRLF"}
		}
		if _, err := w.WriteString("\r\n"); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// cut maps a read error inside the body to errBodyCut; write errors (the
// origin went away) pass through.
func cut(err error) error {
	var oe *net.OpError
	if err == io.EOF || err == io.ErrUnexpectedEOF || (errors.As(err, &oe) && oe.Op == "read") {
		return errBodyCut
	}
	return err
}

// chunkLine reads one line of the chunked framing, without its CRLF. A
// bare LF, a bare CR or another control character is an error, and so is
// a line longer than br's buffer.
func chunkLine(br *bufio.Reader) ([]byte, error) {
	l, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, &bodyError{fmt.Sprintf("a chunk line is longer than %d bytes", br.Size())}
	case err != nil:
		return nil, cut(err)
	}
	text, ok := bytes.CutSuffix(l, []byte("\r\n"))
	if !ok {
		return nil, &bodyError{"a chunk line ends in a bare LF, not CRLF"}
	}
	for _, c := range text {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return nil, &bodyError{fmt.Sprintf("control character 0x%02x in a chunk line", c)}
		}
	}
	return text, nil
}

// chunkSize parses "1*HEXDIG [; chunk-ext]": no sign, no 0x, no space
// before the extensions, at most maxLengthDigits-3 digits. Extensions are
// dropped, so only their characters are checked.
func chunkSize(l []byte) (int64, error) {
	size, ext, hasExt := bytes.Cut(l, []byte(";"))
	if hasExt && bytes.ContainsAny(ext, "\r\n") {
		return 0, &bodyError{"malformed chunk extension"}
	}
	if len(size) == 0 || len(size) > maxLengthDigits-3 {
		return 0, &bodyError{fmt.Sprintf("bad chunk size %q", clip(string(size)))}
	}
	var n int64
	for _, c := range size {
		d, ok := hexDigit(c)
		if !ok {
			return 0, &bodyError{fmt.Sprintf("bad chunk size %q", clip(string(size)))}
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// skipTrailers reads the trailer section up to its empty line, bounded as
// a head is, checking that each line is a field line.
func skipTrailers(br *bufio.Reader) error {
	budget := maxHeadBytes
	for n := 0; ; n++ {
		l, err := chunkLine(br)
		if err != nil {
			return err
		}
		if len(l) == 0 {
			return nil
		}
		budget -= len(l)
		if budget < 0 || n == maxHeaders {
			return &bodyError{"trailer section too large"}
		}
		k, _, ok := bytes.Cut(l, []byte(":"))
		if !ok || !isToken(string(k)) {
			return &bodyError{fmt.Sprintf("malformed trailer line %q", clip(string(l)))}
		}
	}
}
