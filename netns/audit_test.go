package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Events from a live proxy carry every field, and the JSON lines parse
// back into the same events.
func TestAuditEvents(t *testing.T) {
	origin := startServer(t, "127.0.0.1:0", echo)
	port := strconv.Itoa(origin.port)
	var buf bytes.Buffer
	audit := NewAudit(&buf)
	p := startProxy(t, Config{
		Engine:   testEngine(t, "api.test:"+port, "preset:loopback:"+port),
		Resolver: pin("api.test", "127.0.0.1"),
		Audit:    audit.Record,
	})
	start := time.Now()
	tunnel(t, p.addr, "api.test:"+port)
	exchange(t, p.addr, connectHead("other.test:"+port))
	exchange(t, p.addr, "GET / HTTP/1.1\r\n\r\n")

	want := []Event{
		{Method: "CONNECT", Host: "api.test", Port: origin.port, Addr: origin.addr, Decision: "allow", Status: 200, Rule: "api.test:" + port},
		{Method: "CONNECT", Host: "other.test", Port: origin.port, Decision: "deny", Status: 403},
		{Decision: "error", Status: 400},
	}
	var got []Event
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, ev)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, ev := range got {
		if ev.Time.Before(start.Add(-time.Second)) || ev.Time.After(time.Now()) {
			t.Errorf("event %d: time %v", i, ev.Time)
		}
		if ev.Reason == "" {
			t.Errorf("event %d: no reason", i)
		}
		w := want[i]
		w.Time, w.Reason, w.Permission = ev.Time, ev.Reason, "network"
		if ev != w {
			t.Errorf("event %d:\ngot  %+v\nwant %+v", i, ev, w)
		}
	}
	denials, dropped := audit.Denials()
	if len(denials) != 2 || dropped != 0 || denials[0].Host != "other.test" || denials[1].Status != 400 {
		t.Errorf("denials %+v, %d dropped", denials, dropped)
	}
	if audit.Err() != nil {
		t.Error(audit.Err())
	}
}

func TestAuditJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	a := NewAudit(&buf)
	evs := []Event{
		{Time: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Method: "CONNECT", Host: "api.test", Port: 443, Addr: "192.0.2.1:443", Decision: "allow", Status: 200, Rule: "api.test:443", Reason: "ok"},
		{Time: time.Date(2025, 1, 2, 3, 4, 5, 7, time.UTC), Method: "GET", Host: "x.test", Port: 80, Decision: "deny", Status: 403, Reason: "line\nbreak \"quoted\""},
	}
	for _, ev := range evs {
		a.Record(ev)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("%d lines for %d events: %q", len(lines), len(evs), buf.String())
	}
	for i, l := range lines {
		var ev Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if !ev.Time.Equal(evs[i].Time) {
			t.Errorf("time %v, want %v", ev.Time, evs[i].Time)
		}
		ev.Time = evs[i].Time
		if ev != evs[i] {
			t.Errorf("got %+v, want %+v", ev, evs[i])
		}
	}
	if strings.Contains(lines[1], `"addr"`) || strings.Contains(lines[1], `"rule"`) {
		t.Errorf("empty addr and rule are not omitted: %s", lines[1])
	}
}

func TestAuditKeepsDenials(t *testing.T) {
	a := NewAudit(nil)
	a.Record(Event{Decision: "allow"})
	var wg sync.WaitGroup
	for i := range maxKept + 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := "deny"
			if i%2 == 1 {
				d = "error"
			}
			a.Record(Event{Decision: d, Port: i + 1})
		}()
	}
	wg.Wait()
	denials, dropped := a.Denials()
	if len(denials) != maxKept || dropped != 5 {
		t.Fatalf("kept %d, dropped %d; want %d and 5", len(denials), dropped, maxKept)
	}
	if slices.ContainsFunc(denials, func(ev Event) bool { return ev.Decision == "allow" }) {
		t.Error("an allowed request was kept as a denial")
	}
	denials[0].Host = "changed"
	if d, _ := a.Denials(); d[0].Host == "changed" {
		t.Error("Denials returned the Audit's own slice")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestAuditWriteError(t *testing.T) {
	w := &failWriter{}
	a := NewAudit(w)
	a.Record(Event{Decision: "deny"})
	a.Record(Event{Decision: "deny"})
	if a.Err() == nil || w.n != 1 {
		t.Errorf("Err %v after %d writes; want the first error and no more writes", a.Err(), w.n)
	}
	if d, _ := a.Denials(); len(d) != 2 {
		t.Errorf("%d denials kept, want 2 despite the log failing", len(d))
	}
}

func TestPinned(t *testing.T) {
	next := &stubResolver{answer: func(_ int64, host string) ([]netip.Addr, error) {
		return addrs("192.0.2.9"), nil
	}}
	p := &Pinned{Names: map[string][]netip.Addr{"api.test": addrs("127.0.0.1", "::1")}, Next: next}
	ctx := context.Background()
	for _, name := range []string{"api.test", "API.Test", "api.test."} {
		got, err := p.LookupNetIP(ctx, "ip", name)
		if err != nil || !slices.Equal(got, addrs("127.0.0.1", "::1")) {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
	got, _ := p.LookupNetIP(ctx, "ip", "api.test")
	got[0] = netip.MustParseAddr("10.0.0.1")
	if again, _ := p.LookupNetIP(ctx, "ip", "api.test"); again[0] != netip.MustParseAddr("127.0.0.1") {
		t.Error("a caller changed the pinned table through the returned slice")
	}
	if got, err := p.LookupNetIP(ctx, "ip", "other.test"); err != nil || !slices.Equal(got, addrs("192.0.2.9")) || next.calls.Load() != 1 {
		t.Errorf("unpinned name: %v %v, %d lookups by Next", got, err, next.calls.Load())
	}
	p.Next = nil
	if _, err := p.LookupNetIP(ctx, "ip", "other.test"); err == nil {
		t.Error("no error for an unpinned name without Next")
	}
}

func TestParsePin(t *testing.T) {
	for _, tc := range []struct {
		in    string
		host  string
		addrs []string
	}{
		{"api.test=127.0.0.1", "api.test", []string{"127.0.0.1"}},
		{"API.Test.=127.0.0.1", "api.test", []string{"127.0.0.1"}},
		{"api.test=127.0.0.1, [::1] ,2001:db8::1", "api.test", []string{"127.0.0.1", "::1", "2001:db8::1"}},
		{"xn--bcher-kva.test=192.0.2.1", "xn--bcher-kva.test", []string{"192.0.2.1"}},
	} {
		host, got, err := ParsePin(tc.in)
		if err != nil || host != tc.host || !slices.Equal(got, addrs(tc.addrs...)) {
			t.Errorf("ParsePin(%q) = %q, %v, %v", tc.in, host, got, err)
		}
	}
	for _, in := range []string{
		"", "api.test", "=127.0.0.1", "api.test=", "api.test=localhost", "api.test=127.0.0.1,",
		"api.test=127.0.0.1:80", "api.test=256.0.0.1", "bad name=127.0.0.1", "a..b=127.0.0.1",
	} {
		if host, got, err := ParsePin(in); err == nil {
			t.Errorf("ParsePin(%q) = %q, %v; want an error", in, host, got)
		}
	}
}

func TestListen(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if mp, err := c.(*net.TCPConn).MultipathTCP(); err != nil || mp {
		t.Errorf("accepted connection uses MPTCP: %v %v", mp, err)
	}
	if _, err := Listen("127.0.0.1:-1"); err == nil || !strings.HasPrefix(err.Error(), "proxy: ") {
		t.Errorf("bad address: %v", err)
	}
}
