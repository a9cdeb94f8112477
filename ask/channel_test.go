package ask

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a Channel over one end of a socketpair and the caller's end.
func pair(t *testing.T, timeout time.Duration) (*Channel, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Open(fds[0], timeout)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "caller")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); ch.Close() })
	return ch, c
}

// TestConcurrentQuestions: many questions at once arrive as whole lines,
// and each gets the answer with its id, whatever order they come in.
func TestConcurrentQuestions(t *testing.T) {
	ch, c := pair(t, 5*time.Second)
	const n = 64
	go func() {
		br := bufio.NewReader(c)
		var ids []string
		for range n {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			var q Question
			if err := json.Unmarshal([]byte(line), &q); err != nil {
				return // an interleaved line: the questions time out and the test fails
			}
			ids = append(ids, q.ID+" "+q.Host)
		}
		for i := len(ids) - 1; i >= 0; i-- { // answer in reverse order
			id, host, _ := strings.Cut(ids[i], " ")
			reply := AllowOnce
			if strings.HasSuffix(host, "7.test") {
				reply = Deny
			}
			fmt.Fprintf(c, `{"v":1,"id":%q,"answer":%q}`+"\n", id, reply)
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("h%d.test", i)
			a := ch.Ask(context.Background(), Question{Kind: Network, Host: host, Reason: strings.Repeat("x", 3000)})
			want := AllowOnce
			if strings.HasSuffix(host, "7.test") {
				want = Deny
			}
			if a.Reply != want || a.By != "caller" {
				t.Errorf("%s: %+v, want %s", host, a, want)
			}
		}()
	}
	wg.Wait()
}

// TestNobodyAnswers: an absent or slow caller costs at most the timeout,
// and a caller that never reads cannot block a question past it either.
func TestNobodyAnswers(t *testing.T) {
	ch, _ := pair(t, 200*time.Millisecond)
	start := time.Now()
	big := strings.Repeat("y", 1<<20) // more than the socket buffer: the write blocks
	a := ch.Ask(context.Background(), Question{Kind: Command, Command: big})
	if a.Reply != Deny || time.Since(start) > 2*time.Second {
		t.Fatalf("%+v after %v", a, time.Since(start))
	}
	// The line was cut short: the channel is broken, and says so at once.
	a = ch.Ask(context.Background(), Question{Kind: Command, Command: "ls"})
	if a.Reply != Deny || a.By != "closed" {
		t.Fatalf("after a cut line: %+v", a)
	}
}

func TestTimeoutThenLateAnswer(t *testing.T) {
	ch, c := pair(t, 100*time.Millisecond)
	a := ch.Ask(context.Background(), Question{Kind: Network, Host: "a.test"})
	if a.Reply != Deny || a.By != "timeout" {
		t.Fatalf("%+v", a)
	}
	br := bufio.NewReader(c)
	br.ReadString('\n')
	// A late answer to q1 is dropped; the channel still works.
	fmt.Fprintf(c, `{"v":1,"id":"q1","answer":"allow-run"}`+"\n")
	go func() {
		br.ReadString('\n')
		fmt.Fprintf(c, `{"v":1,"id":"q2","answer":"allow-run","by":"alice"}`+"\n")
	}()
	if a := ch.Ask(context.Background(), Question{Kind: Network, Host: "b.test"}); a.Reply != AllowRun || a.By != "alice" || a.ID != "q2" {
		t.Fatalf("%+v", a)
	}
}

func TestGarbageAndEOF(t *testing.T) {
	for _, tc := range []struct{ send, by string }{
		{"yes\n", "garbage"},
		{`{"v":1,"id":"q1","answer":"allow-once","extra":1}` + "\n", "garbage"},
		{`{"v":1,"id":"q1","answer":"ALLOW-ONCE"}` + "\n", "garbage"},
		{`{"id":"q1","answer":"allow-once"}` + "\n", "garbage"},
		{strings.Repeat("z", maxLine+10) + "\n", "garbage"},
		{"", "eof"},
	} {
		ch, c := pair(t, 5*time.Second)
		go func() {
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte(tc.send))
			if tc.send == "" {
				c.Close()
			}
		}()
		a := ch.Ask(context.Background(), Question{Kind: Network, Host: "a.test"})
		if a.Reply != Deny || a.By != tc.by {
			t.Errorf("%.40q: %+v, want deny by %s", tc.send, a, tc.by)
		}
		if a := ch.Ask(context.Background(), Question{Kind: Network, Host: "b.test"}); a.Reply != Deny || a.By != tc.by {
			t.Errorf("%.40q, after: %+v", tc.send, a)
		}
	}
}

// TestNoLeak: Close ends the reader and every waiting question.
func TestNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		fds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		ch, err := Open(fds[0], time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan Answer)
		go func() { done <- ch.Ask(context.Background(), Question{Kind: Network, Host: "a.test"}) }()
		time.Sleep(5 * time.Millisecond)
		ch.Close()
		if a := <-done; a.Reply != Deny {
			t.Fatalf("%+v", a)
		}
		unix.Close(fds[1])
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}

func TestOpenRefuses(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := unix.Dup(int(f.Fd()))
	if _, err := Open(fd, 0); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file: %v", err)
	}
}
