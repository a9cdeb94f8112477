package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"corral/netns"
)

// TestAuditFile: the audit log is appended to, created 0600, and only at
// its first event; a missing folder is an error at that write.
func TestAuditFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 {
		f := &auditFile{name: file}
		if i == 0 {
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Fatalf("the log exists before any event: %v", err)
			}
		}
		a := netns.NewAudit(f)
		a.Record(netns.Event{Decision: "deny", Port: i + 1})
		f.Close()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d lines after two opens, want 2 (append): %q", n, b)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	f := &auditFile{name: filepath.Join(t.TempDir(), "no", "such", "dir")}
	if _, err := f.Write([]byte("x\n")); err == nil {
		t.Error("no error for a missing directory")
	}
}
