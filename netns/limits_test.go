package netns

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// readEnd waits up to 3s for the proxy to end c and returns how long that
// took; it fails the test if c is still open.
func readEnd(t *testing.T, r io.Reader, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(3 * time.Second))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the proxy did not close the connection within 3s")
	}
	return time.Since(start)
}

func TestSlowLoris(t *testing.T) {
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback"), HeadTimeout: 200 * time.Millisecond})
	for _, prefix := range []string{"", "CONNECT 127.0.0.1:1 HTTP/1.1\r\n"} {
		c := dial(t, p.addr)
		io.WriteString(c, prefix)
		start := time.Now()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := io.WriteString(c, "X"); err != nil {
						return
					}
				}
			}
		}()
		readEnd(t, c, c)
		took := time.Since(start)
		close(stop)
		wg.Wait()
		if took > time.Second || took < 150*time.Millisecond {
			t.Errorf("prefix %q: connection closed after %v, want about the 200ms head timeout", prefix, took)
		}
	}
}

func TestIdleTunnel(t *testing.T) {
	originEnded := make(chan struct{}, 1)
	origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
		io.Copy(c, c)
		originEnded <- struct{}{}
	})
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback"), IdleTimeout: 200 * time.Millisecond})
	br, c := tunnel(t, p.addr, origin.addr)
	// Traffic both ways for three idle periods keeps the tunnel open.
	for i := range 12 {
		roundTripEcho(t, br, c, "ping"+strconv.Itoa(i))
		time.Sleep(50 * time.Millisecond)
	}
	// The idle period began at the last echo, before the loop's last 50 ms
	// sleep: about 150 ms are left when readEnd starts, less on a slow
	// machine (the emulated VM of the matrix measured 149.7 ms).
	if took := readEnd(t, br, c); took > time.Second || took < 100*time.Millisecond {
		t.Errorf("idle tunnel closed after %v, want about 200ms", took)
	}
	select {
	case <-originEnded:
	case <-time.After(2 * time.Second):
		t.Error("the upstream connection stayed open")
	}
}

// Traffic in one direction only keeps a tunnel open as well: a download
// the client never answers, an upload the origin never answers.
func TestIdleTunnelOneWay(t *testing.T) {
	const idle = 300 * time.Millisecond
	for _, dir := range []string{"download", "upload"} {
		t.Run(dir, func(t *testing.T) {
			received := make(chan int, 1)
			origin := startServer(t, "127.0.0.1:0", func(c net.Conn) {
				if dir == "upload" {
					n, _ := io.Copy(io.Discard, c)
					received <- int(n)
					return
				}
				for range 100 {
					if _, err := io.WriteString(c, "."); err != nil {
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
			})
			p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback"), IdleTimeout: idle})
			br, c := tunnel(t, p.addr, origin.addr)
			if dir == "download" {
				b, err := io.ReadAll(br)
				if len(b) != 100 {
					t.Fatalf("downloaded %d of 100 bytes (%v): the proxy cut the tunnel", len(b), err)
				}
				return
			}
			for range 100 {
				if _, err := io.WriteString(c, "."); err != nil {
					t.Fatalf("upload: %v", err)
				}
				time.Sleep(25 * time.Millisecond)
			}
			c.CloseWrite()
			if n := <-received; n != 100 {
				t.Fatalf("uploaded %d of 100 bytes: the proxy cut the tunnel", n)
			}
		})
	}
}

func TestMaxConns(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	p := startProxy(t, Config{Engine: testEngine(t, "preset:loopback"), MaxConns: 2})
	br1, c1 := tunnel(t, p.addr, origin.addr)
	br2, c2 := tunnel(t, p.addr, origin.addr)

	r, _, _ := exchange(t, p.addr, connectHead(origin.addr))
	checkRefusal(t, r, 503)
	if !strings.Contains(r.body, "2 connections") {
		t.Errorf("reason %q", r.body)
	}
	if ev := p.events.last(t); ev.Decision != "error" || ev.Status != 503 {
		t.Errorf("audit event %+v", ev)
	}
	// The two tunnels still work.
	roundTripEcho(t, br1, c1, "one")
	roundTripEcho(t, br2, c2, "two")

	// Once one closes its slot is free again.
	c1.Close()
	ok := eventually(3*time.Second, func() bool {
		c := dial(t, p.addr)
		io.WriteString(c, connectHead(origin.addr))
		r, err := readResponse(bufio.NewReader(c))
		c.Close()
		return err == nil && r.status == 200
	})
	if !ok {
		t.Error("no slot came free after a tunnel closed")
	}
}
