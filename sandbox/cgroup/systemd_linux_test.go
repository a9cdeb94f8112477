package cgroup

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMemoryWatchOutlivesCgroup stands a folder of plain files in for a
// user scope: the OOM kill and the peak written while the "scope" exists
// are what Usage reports after systemd has removed it.
func TestMemoryWatchOutlivesCgroup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
	write("memory.peak", "4096\n")
	c := &Group{Version: 2, memDir: dir, dirs: []string{dir}, inScope: true, watch: watchMemory(dir)}
	if c.watch == nil {
		t.Fatal("watchMemory: no inotify watch on a plain file")
	}
	defer c.Remove()

	write("memory.peak", "134217728\n")
	write("memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.watch.mu.Lock()
		seen := c.watch.ooms
		c.watch.mu.Unlock()
		if seen == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change of memory.events was not read within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	peak, ooms := c.Usage()
	if ooms != 1 || peak != 134217728 {
		t.Errorf("Usage after the scope is gone = %d bytes, %d OOM kills; want 134217728, 1", peak, ooms)
	}
}
