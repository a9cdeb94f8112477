package main

// Measuring what open tunnels cost: this process's memory and the
// kernel's slab.

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// memSample is this process's memory: live Go heap after a collection,
// goroutine stacks, resident set (bytes), goroutines and open fds; and the
// whole machine's kernel slab (bytes), where sockets and pipes live.
type memSample struct{ heap, stacks, rss, goroutines, fds, slab int64 }

func sampleMem() (memSample, error) {
	// Closed tunnels leave splice pipes in a sync.Pool; a pipe's fds close
	// in a cleanup after the pool lets it go, so collect until they settle.
	var fds []os.DirEntry
	for i := range 50 {
		freeOS()
		prev := len(fds)
		var err error
		if fds, err = os.ReadDir("/proc/self/fd"); err != nil {
			return memSample{}, err
		}
		if i > 0 && len(fds) == prev {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := kiloBytes("/proc/self/status", "VmRSS:")
	if err != nil {
		return memSample{}, err
	}
	slab, err := kiloBytes("/proc/meminfo", "Slab:")
	if err != nil {
		return memSample{}, err
	}
	return memSample{int64(ms.HeapAlloc), int64(ms.StackInuse), rss, int64(runtime.NumGoroutine()), int64(len(fds)), slab}, nil
}

// kiloBytes reads a "Key:   123 kB" line of a /proc file, in bytes.
func kiloBytes(file, key string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s %s %q: %w", file, key, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%s has no %s line", file, key)
}

func (m memSample) minus(b memSample) memSample {
	return memSample{m.heap - b.heap, m.stacks - b.stacks, m.rss - b.rss, m.goroutines - b.goroutines, m.fds - b.fds, m.slab - b.slab}
}

type memResult struct{ direct, tunnel memSample } // growth while o.tunnels were open

// memory opens o.tunnels connections to the echo server directly, then as
// many tunnels, and measures the growth of each. The first round of
// tunnels is unrecorded, so both rounds start from the same steady state.
func memory(o options) (memResult, error) {
	var r memResult
	if _, err := hold(o, o.proxyAddr); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	var err error
	if r.direct, err = hold(o, ""); err != nil {
		return r, fmt.Errorf("direct: %w", err)
	}
	if r.tunnel, err = hold(o, o.proxyAddr); err != nil {
		return r, fmt.Errorf("tunnels: %w", err)
	}
	progress("memory: %d direct connections, then %d tunnels held open", o.tunnels, o.tunnels)
	return r, nil
}

// hold opens o.tunnels connections, each proven by an echo, measures, checks
// that every one still answers, closes them and waits for the servers to
// let go.
func hold(o options, proxy string) (memSample, error) {
	before, err := sampleMem()
	if err != nil {
		return memSample{}, err
	}
	conns := make([]*net.TCPConn, 0, o.tunnels)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range o.tunnels {
		c, _, err := dial(proxy, o.echoAddr)
		if err != nil {
			return memSample{}, fmt.Errorf("opening connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
		if err := roundTrip(c); err != nil {
			return memSample{}, err
		}
	}
	after, err := sampleMem()
	if err != nil {
		return memSample{}, err
	}
	for i, c := range conns {
		if err := roundTrip(c); err != nil {
			return memSample{}, fmt.Errorf("connection %d of %d after measuring: %w", i+1, len(conns), err)
		}
	}
	if active := o.echoActive.Load(); active < int64(o.tunnels) {
		return memSample{}, fmt.Errorf("the echo server holds %d connections, want %d", active, o.tunnels)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	for range 1000 { // up to 10s
		if o.echoActive.Load() == 0 && int64(runtime.NumGoroutine()) <= before.goroutines {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := o.echoActive.Load(); n != 0 {
		return memSample{}, fmt.Errorf("the echo server still holds %d connections 10s after closing", n)
	}
	return after.minus(before), nil
}
