package fsaudit

import (
	"fmt"
	"slices"
	"testing"
)

func TestFields(t *testing.T) {
	serial, kv := fields(`audit(1795678853.524:226): domain=114ae1163 blockers=fs.read_file,fs.execute path="/etc/ld.so.cache" dev="vda" ino=672`)
	if serial != "226" || kv["domain"] != "114ae1163" || kv["blockers"] != "fs.read_file,fs.execute" || kv["path"] != "/etc/ld.so.cache" || kv["ino"] != "672" {
		t.Fatalf("got %q %q", serial, kv)
	}
	// A value with spaces or control characters is hex, unquoted.
	_, kv = fields(`audit(1.2:3): domain=1 blockers=fs.read_file path=2F746D702F611B5B324A20 dev="vda" ino=1`)
	if kv["path"] != "/tmp/a\x1b[2J " {
		t.Fatalf("hex path: %q", kv["path"])
	}
	_, kv = fields(`audit(1.2:3): arch=c000003e syscall=257 pid=42 comm=6361740A exe="/usr/bin/cat" key=(null)`)
	if kv["comm"] != "cat\n" || kv["pid"] != "42" || kv["key"] != "(null)" {
		t.Fatalf("syscall record: %q", kv)
	}
	if s, kv := fields("garbage"); s != "" || len(kv) != 0 {
		t.Fatalf("garbage: %q %q", s, kv)
	}
}

// feed sends one denial event as the kernel writes it: the access record,
// the domain's allocation record with its first denial, the syscall
// record and the end of the event.
func feed(c *collector, serial int, domain string, creator, pid int, path string, first bool) {
	a := fmt.Sprintf("audit(1.0:%d): ", serial)
	c.record(typeAccess, a+"domain="+domain+" blockers=fs.read_file path=\""+path+"\" dev=\"vda\" ino=1")
	if first {
		c.record(typeDomain, a+fmt.Sprintf("domain=%s status=allocated mode=enforcing pid=%d uid=0 exe=\"/x\" comm=\"corral\"", domain, creator))
	}
	c.record(typeSyscall, a+fmt.Sprintf("arch=c000003e syscall=257 success=no exit=-13 pid=%d comm=\"cat\" exe=\"/usr/bin/cat\"", pid))
	c.record(typeEOE, a)
}

func TestCollectorAttributes(t *testing.T) {
	c := newCollector(1234)
	c.attribute([]int{100, 101})
	feed(c, 1, "d1", 101, 500, "/mine", true)   // the run's init made d1
	feed(c, 2, "d2", 200, 600, "/theirs", true) // another run
	feed(c, 3, "d1", 0, 501, "/mine2", false)   // d1 again: no allocation record
	feed(c, 4, "d2", 0, 601, "/theirs2", false)
	feed(c, 5, "d1", 0, 502, "/mine", false) // the same denial again: kept once
	got, more, lost := c.result()
	var paths []string
	for _, d := range got {
		paths = append(paths, d.Path)
	}
	if !slices.Equal(paths, []string{"/mine", "/mine2"}) || more != 0 || lost {
		t.Fatalf("got %v more %d lost %v", paths, more, lost)
	}
	if got[0].Pid != 500 || got[0].Comm != "cat" || got[0].Exe != "/usr/bin/cat" || !slices.Equal(got[0].Blockers, []string{"fs.read_file"}) {
		t.Fatalf("denial: %+v", got[0])
	}
}

// Records that come before the run's init is known are attributed at the
// end; records without an end of event are finished at the end.
func TestCollectorPending(t *testing.T) {
	c := newCollector(1234)
	a := "audit(1.0:7): "
	c.record(typeAccess, a+`domain=d9 blockers=fs.make_reg path="/etc" dev="vda" ino=1`)
	c.record(typeDomain, a+`domain=d9 status=allocated mode=enforcing pid=77 uid=0 exe="/x" comm="x"`)
	c.attribute([]int{77})
	got, _, _ := c.result()
	if len(got) != 1 || got[0].Path != "/etc" || got[0].Pid != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestCollectorBounded(t *testing.T) {
	c := newCollector(1234)
	c.attribute([]int{1})
	for i := range maxKept + 5 {
		feed(c, i+1, "d", 1, 2, fmt.Sprintf("/p%d", i), i == 0)
	}
	got, more, _ := c.result()
	if len(got) != maxKept || more != 5 {
		t.Fatalf("kept %d more %d", len(got), more)
	}
	// The deallocation record counts what the kernel logged: more than
	// reached corral means records were lost.
	c = newCollector(1234)
	c.attribute([]int{1})
	feed(c, 1, "d", 1, 2, "/a", true)
	c.record(typeDomain, "audit(1.0:9): domain=d status=deallocated denials=3")
	if _, _, lost := c.result(); !lost {
		t.Fatal("3 logged, 1 seen: not reported lost")
	}
}

// The marker is corral's own op=connect listener record, once expected:
// not another process's, not a disconnect, not one before Finish.
func TestCollectorMarker(t *testing.T) {
	c := newCollector(1234)
	rec := func(pid int, op string) {
		c.record(typeListener, fmt.Sprintf(`audit(1.0:1): pid=%d uid=0 auid=4294967295 tty=(none) ses=4294967295 comm="corral" exe="/x" nl-mcgrp=1 op=%s res=1`, pid, op))
	}
	rec(1234, "connect") // Open's own join
	if c.marked() || c.expecting() {
		t.Fatal("marked before Finish")
	}
	c.expectMarker()
	rec(99, "connect")
	rec(1234, "disconnect")
	if c.marked() {
		t.Fatal("marked by another process or a disconnect")
	}
	rec(1234, "connect")
	if !c.marked() {
		t.Fatal("the marker did not mark")
	}
}
