package netns_test

// Benchmarks of the proxy's data path against plain loopback: bulk
// throughput through a CONNECT tunnel and the cost of opening one. Every
// server here listens on 127.0.0.1:0 in this process. bench/proxy runs the
// same measurements at 1 GiB and adds 1,000 tunnels held open.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
)

const (
	benchTransfer = 64 << 20 // bytes per throughput iteration
	benchBuf      = 1 << 20  // read and write buffer on both ends
)

// listen serves every connection to a fresh 127.0.0.1 port with serve until
// the benchmark ends.
func listen(b *testing.B, serve func(net.Conn)) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// sink reads to EOF and answers with the byte count.
func sink(c net.Conn) {
	buf := make([]byte, benchBuf)
	var n uint64
	for {
		m, err := c.Read(buf)
		n += uint64(m)
		if err != nil {
			break
		}
	}
	c.Write(binary.BigEndian.AppendUint64(nil, n))
}

// echo writes back what it reads.
func echo(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// startProxy serves a proxy granting loopback on 127.0.0.1:0.
func startProxy(b *testing.B) string {
	b.Helper()
	e, err := policyengine.New(policyengine.Permissions{
		Network:  policyengine.NewEntries("bench", []string{"preset:loopback"}),
		Declared: []string{"bench"},
	}, policyengine.Options{WorkDir: "/"})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := netns.New(netns.Config{Engine: e})
	go p.Serve(ln)
	b.Cleanup(func() { p.Close() })
	return ln.Addr().String()
}

var established = []byte("HTTP/1.1 200 Connection Established\r\n\r\n")

// dialTunnel opens a CONNECT tunnel to target through the proxy at proxy.
func dialTunnel(proxy, target string) (*net.TCPConn, error) {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		c.Close()
		return nil, err
	}
	// Nothing follows the answer until the client writes, so reading
	// exactly its length leaves no tunnel bytes behind.
	resp := make([]byte, len(established))
	if _, err := io.ReadFull(c, resp); err != nil || !bytes.Equal(resp, established) {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: answer %q: %v", target, resp, err)
	}
	return c.(*net.TCPConn), nil
}

// push sends n bytes, half-closes and waits for the sink's count.
func push(c *net.TCPConn, buf []byte, n int64) error {
	defer c.Close()
	for left := n; left > 0; {
		m, err := c.Write(buf[:min(left, int64(len(buf)))])
		left -= int64(m)
		if err != nil {
			return err
		}
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	var got [8]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("reading the sink's count: %w", err)
	}
	if m := binary.BigEndian.Uint64(got[:]); m != uint64(n) {
		return fmt.Errorf("sink got %d bytes, sent %d", m, n)
	}
	return nil
}

// roundTrip sends one byte and waits for the echo. ('@' begins no HTTP
// request line, so the tunnel relays it at once: tunnel.go.)
func roundTrip(c net.Conn) error {
	var b [1]byte
	if _, err := c.Write([]byte{'@'}); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return err
	}
	if b[0] != '@' {
		return errors.New("echo answered a different byte")
	}
	return nil
}

func benchThroughput(b *testing.B, dial func() (*net.TCPConn, error)) {
	buf := make([]byte, benchBuf)
	b.SetBytes(benchTransfer)
	for b.Loop() {
		c, err := dial()
		if err != nil {
			b.Fatal(err)
		}
		if err := push(c, buf, benchTransfer); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirectThroughput(b *testing.B) {
	addr := listen(b, sink)
	benchThroughput(b, func() (*net.TCPConn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return c.(*net.TCPConn), nil
	})
}

func BenchmarkTunnelThroughput(b *testing.B) {
	addr, proxy := listen(b, sink), startProxy(b)
	benchThroughput(b, func() (*net.TCPConn, error) { return dialTunnel(proxy, addr) })
}

// BenchmarkDirectConnect is the baseline for BenchmarkNewTunnel: connect
// and one echo round trip.
func BenchmarkDirectConnect(b *testing.B) {
	addr := listen(b, echo)
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		err = roundTrip(c)
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewTunnel is a new tunnel's time to first byte: connect to the
// proxy, CONNECT, read 200, and one echo round trip through the tunnel.
func BenchmarkNewTunnel(b *testing.B) {
	addr, proxy := listen(b, echo), startProxy(b)
	for b.Loop() {
		c, err := dialTunnel(proxy, addr)
		if err != nil {
			b.Fatal(err)
		}
		err = roundTrip(c)
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
