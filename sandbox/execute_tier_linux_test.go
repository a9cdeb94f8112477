package sandbox

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOwnListener: the landlock tier's proxy listener hands over only the
// connections corral's supervisor dialled, by address and port: another
// local user connecting from 127.0.0.2 with the same port, or from
// 127.0.0.1 with another, is closed unserved.
func TestOwnListener(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := newOwnListener(ln)
	defer own.Close()
	proxy := ln.Addr().(*net.TCPAddr).AddrPort()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := own.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// Another user, from 127.0.0.2 on the port corral's next socket
	// will have: registered first, as a race would have it.
	fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 2}}); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(fd)
	port := sa.(*unix.SockaddrInet4).Port
	own.mu.Lock()
	own.ours[port] = true
	own.mu.Unlock()
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: proxy.Addr().As4(), Port: int(proxy.Port())}); err != nil {
		t.Fatal(err)
	}
	// Another connection from 127.0.0.1 that corral did not dial.
	stranger, err := net.Dial("tcp4", proxy.String())
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	f, err := own.dial(proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	select {
	case c := <-accepted:
		if got := c.RemoteAddr().(*net.TCPAddr); !got.IP.Equal(net.IPv4(127, 0, 0, 1)) || got.Port == stranger.LocalAddr().(*net.TCPAddr).Port {
			t.Fatalf("accepted %v, not corral's own connection", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("corral's own connection was not accepted")
	}
	select {
	case c := <-accepted:
		t.Fatalf("a second connection was accepted: %v", c.RemoteAddr())
	case <-time.After(200 * time.Millisecond):
	}
}
