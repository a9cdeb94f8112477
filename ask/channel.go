package ask

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// conn is the descriptor's side corral uses: a socket (net.Conn) or a
// pollable file, both with deadlines, so no write or read outlasts its
// bound.
type conn interface {
	io.ReadWriteCloser
	SetWriteDeadline(time.Time) error
}

// Channel is the ask channel over one read/write descriptor. Questions
// from many goroutines go out whole, one at a time (one writer); one
// reader hands each answer to the question with its id. The first
// thing wrong on the channel (end of input, a line that is not an answer,
// a write that did not go out in time) breaks it: every question waiting
// and every later one is denied, saying why.
type Channel struct {
	c       conn
	timeout time.Duration

	wmu sync.Mutex // one writer: held for a whole line

	mu      sync.Mutex
	next    int
	pending map[string]chan Answer
	broken  *Answer // set once: the answer every question gets from then on

	done chan struct{} // closed when the reader ends
}

// maxLine bounds an answer line; a longer one is garbage.
const maxLine = 64 << 10

// Open makes a Channel of descriptor fd, which corral takes over: the
// caller's number is closed (corral keeps a close-on-exec copy), so
// nothing corral starts inherits it. timeout bounds each question
// (DefaultTimeout when 0 or less).
func Open(fd int, timeout time.Duration) (*Channel, error) {
	f := os.NewFile(uintptr(fd), "ask-fd "+strconv.Itoa(fd))
	if f == nil {
		return nil, fmt.Errorf("descriptor %d is not open", fd)
	}
	var c conn
	if nc, err := net.FileConn(f); err == nil {
		// FileConn made a close-on-exec, non-blocking copy.
		f.Close()
		if _, ok := nc.(*net.UnixConn); !ok {
			if _, ok := nc.(*net.TCPConn); !ok {
				nc.Close()
				return nil, fmt.Errorf("descriptor %d is a %s socket: pass a stream socket (socketpair(AF_UNIX, SOCK_STREAM) or a TCP connection)", fd, nc.LocalAddr().Network())
			}
		}
		c = nc
	} else {
		f.Close()
		return nil, fmt.Errorf("descriptor %d is not a socket (%v): pass one end of socketpair(AF_UNIX, SOCK_STREAM)", fd, err)
	}
	return newChannel(c, timeout), nil
}

// newChannel starts the reader on c.
func newChannel(c conn, timeout time.Duration) *Channel {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ch := &Channel{c: c, timeout: timeout, pending: map[string]chan Answer{}, done: make(chan struct{})}
	go ch.read()
	return ch
}

// Timeout is how long a question waits for its answer.
func (ch *Channel) Timeout() time.Duration { return ch.timeout }

// Ask sends q (its V, Type, ID and TimeoutMS filled in here) and waits for
// its answer: at most the channel's timeout, less if ctx ends first. Every
// way of not getting a well-formed answer is Deny.
func (ch *Channel) Ask(ctx context.Context, q Question) Answer {
	ch.mu.Lock()
	if ch.broken != nil {
		a := *ch.broken
		ch.mu.Unlock()
		return a
	}
	ch.next++
	q.V, q.Type, q.ID, q.TimeoutMS = Version, "question", "q"+strconv.Itoa(ch.next), ch.timeout.Milliseconds()
	wait := make(chan Answer, 1)
	ch.pending[q.ID] = wait
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		delete(ch.pending, q.ID)
		ch.mu.Unlock()
	}()

	deadline := time.Now().Add(ch.timeout)
	withID := func(a Answer) Answer { a.ID = q.ID; return a }
	line, err := json.Marshal(q)
	if err != nil {
		return Answer{Reply: Deny, By: "corral", Note: fmt.Sprintf("cannot write the question: %v", err)}
	}
	if err := ch.write(append(line, '\n'), deadline); err != nil {
		return withID(ch.fail(Answer{Reply: Deny, By: "closed", Note: fmt.Sprintf("the question could not be sent: %v", err)}))
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case a := <-wait:
		a.ID = q.ID
		return a
	case <-t.C:
		return withID(Answer{Reply: Deny, By: "timeout", Note: fmt.Sprintf("no answer within %s", ch.timeout)})
	case <-ctx.Done():
		return withID(Answer{Reply: Deny, By: "closed", Note: "the run ended before an answer came"})
	}
}

// write sends one whole line, or breaks the channel: a line cut short
// would leave the caller reading half a question.
func (ch *Channel) write(line []byte, deadline time.Time) error {
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	ch.c.SetWriteDeadline(deadline)
	_, err := ch.c.Write(line)
	return err
}

// read hands each answer line to its question until the channel ends.
func (ch *Channel) read() {
	defer close(ch.done)
	br := bufio.NewReaderSize(ch.c, 4096)
	for {
		line, err := readLine(br)
		if err != nil {
			why := Answer{Reply: Deny, By: "eof", Note: "the caller closed the ask channel"}
			if errors.Is(err, errLong) {
				why = Answer{Reply: Deny, By: "garbage", Note: fmt.Sprintf("an answer line over %d bytes", maxLine)}
			} else if !errors.Is(err, io.EOF) {
				why = Answer{Reply: Deny, By: "closed", Note: fmt.Sprintf("reading the ask channel: %v", err)}
			}
			ch.fail(why)
			return
		}
		id, a, err := parseAnswer(line)
		if err != nil {
			ch.fail(Answer{Reply: Deny, By: "garbage", Note: err.Error()})
			return
		}
		ch.mu.Lock()
		wait := ch.pending[id]
		delete(ch.pending, id)
		ch.mu.Unlock()
		if wait != nil {
			wait <- a // buffered: never blocks
		}
		// An id nobody waits for answers a question that timed out: the
		// caller was late, which is no reason to stop listening.
	}
}

// fail breaks the channel with a (once) and answers every waiting
// question with it. It returns the answer the channel now gives.
func (ch *Channel) fail(a Answer) Answer {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.broken == nil {
		ch.broken = &a
	}
	for id, wait := range ch.pending {
		wait <- *ch.broken
		delete(ch.pending, id)
	}
	return *ch.broken
}

// Close ends the channel and waits for its reader: questions still waiting
// are denied.
func (ch *Channel) Close() error {
	ch.fail(Answer{Reply: Deny, By: "closed", Note: "the run ended before an answer came"})
	err := ch.c.Close()
	<-ch.done
	return err
}

var errLong = errors.New("line too long")

// readLine reads one line without its newline, at most maxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := br.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, errLong
		}
		if !isPrefix {
			return line, nil
		}
	}
}

// wireAnswer is an answer line.
type wireAnswer struct {
	V      *int   `json:"v"`
	ID     string `json:"id"`
	Answer Reply  `json:"answer"`
	By     string `json:"by"`
}

// parseAnswer reads one answer line strictly: a JSON object of protocol
// version 1 with an id and one of the four answers, nothing else.
func parseAnswer(line []byte) (string, Answer, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w wireAnswer
	if err := dec.Decode(&w); err != nil {
		return "", Answer{}, fmt.Errorf("not an answer: %v", err)
	}
	if dec.More() {
		return "", Answer{}, errors.New("not an answer: more than one JSON value on the line")
	}
	if w.V == nil || *w.V != Version {
		return "", Answer{}, fmt.Errorf("not an answer of protocol version %d (\"v\": %d)", Version, Version)
	}
	if w.ID == "" {
		return "", Answer{}, errors.New(`not an answer: no "id"`)
	}
	switch w.Answer {
	case AllowOnce, AllowRun, Deny, Remember:
	default:
		return "", Answer{}, fmt.Errorf("answer %q to %s is none of allow-once, allow-run, deny, remember", clip(string(w.Answer)), clip(w.ID))
	}
	by := w.By
	if by == "" {
		by = "caller"
	}
	return w.ID, Answer{Reply: w.Answer, By: clip(by)}, nil
}

// clip bounds a caller's string that goes into the report and the log.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
