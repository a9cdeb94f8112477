package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"corral.dev/corral/netns"
)

// TestAuditFile: the audit log is appended to, created 0600, and a log
// that got no event is removed again; a missing folder is an error at
// the open.
func TestAuditFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	empty, err := openOutput("--audit-log", file, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	empty.Close()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a log that got no event is left behind: %v", err)
	}
	for i := range 2 {
		f, err := openOutput("--audit-log", file, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		a := netns.NewAudit(f)
		a.Record(netns.Event{Decision: "deny", Port: i + 1, URL: "http://x.test/" + strings.Repeat("a", 10000) + "\u009b\u202e"})
		f.Close()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d lines after two opens, want 2 (append): %q", n, b)
	}
	if len(b) > 2*5000 || strings.Contains(string(b), "\u009b") {
		t.Errorf("the URL was not truncated, or a C1 control is raw: %d bytes", len(b))
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := openOutput("--audit-log", filepath.Join(t.TempDir(), "no", "such", "dir"), nil, true); err == nil {
		t.Error("no error for a missing directory")
	}
}

// TestAuditFileCap: past the cap entries are dropped and counted, in one
// last entry.
func TestAuditFileCap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := openOutput("--audit-log", file, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	f.limit, f.agent = 1000, "agent-1"
	a := netns.NewAudit(f)
	for i := range 100 {
		a.Record(netns.Event{Decision: "deny", Port: i + 1, Host: "h.test"})
	}
	f.Close()
	lines := strings.Split(strings.TrimSpace(readString(t, file)), "\n")
	var last auditDropped
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	kept := len(lines) - 1
	if kept == 0 || kept+last.Dropped != 100 || last.Decision != "dropped" || last.Agent != "agent-1" {
		t.Errorf("%d entries kept and %+v, want the rest of 100 counted as dropped", kept, last)
	}
	if fi, _ := os.Stat(file); fi.Size() > 1000+400 {
		t.Errorf("the log grew to %d bytes past a cap of 1000", fi.Size())
	}
}

// TestOutputRefused: the paths openOutput must refuse, and the files it
// must leave alone.
func TestOutputRefused(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "link"))
	os.Link(victim, filepath.Join(dir, "hard"))
	os.Symlink(work, filepath.Join(dir, "to-work"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	roots := []string{work}
	for _, c := range []struct{ name, want string }{
		{"link", "is a symlink"},
		{"hard", "hard links"},
		{"work/report.json", "inside"},
		{"to-work/report.json", "through a symlink"},
		{"fifo", "named pipe"},
		{"work", "inside"},
		{".", "directory"},
	} {
		for _, appendOnly := range []bool{false, true} {
			f, err := openOutput("--report", filepath.Join(dir, c.name), roots, appendOnly)
			if err == nil {
				f.Close()
				t.Errorf("%s was not refused", c.name)
			} else if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--report ") {
				t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
			}
		}
	}
	if s := readString(t, victim); s != "keep" {
		t.Errorf("the victim changed: %q", s)
	}
	if _, err := os.Stat(filepath.Join(work, "report.json")); !os.IsNotExist(err) {
		t.Errorf("a refused report was created in the work dir: %v", err)
	}
	// A report is replaced whole, through the descriptor.
	f, err := openOutput("--report", filepath.Join(dir, "r.json"), roots, false)
	if err != nil {
		t.Fatal(err)
	}
	f.replace([]byte("a long first report\n"))
	f.replace([]byte("{\"s\":\"\u202e\"}\n"))
	f.Close()
	if s := readString(t, filepath.Join(dir, "r.json")); s != `{"s":"\u202e"}`+"\n" {
		t.Errorf("report %q", s)
	}
}

func readString(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The caller's own streams are written through a copy of the descriptor,
// never truncated, even when the stream is a regular file.
func TestOutputCallerStream(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "stdout")
	os.WriteFile(out, []byte("before\n"), 0o644)
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := "/dev/fd/" + strconv.Itoa(int(f.Fd()))
	o, err := openOutput("--report", name, []string{"/dev"}, false)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	o.replace([]byte("{}\n"))
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if s := readString(t, out); s != "before\n{}\n" {
		t.Errorf("the caller's stream holds %q, want the report after what was there", s)
	}
	for _, p := range []string{"/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/dev/fd/7"} {
		if _, ok := callerStream(p); !ok {
			t.Errorf("%s is not taken as a caller's stream", p)
		}
	}
	for _, p := range []string{"/dev/fd/", "/dev/fd/x", "/dev/fd/-1", "/dev/stdoutx", "/tmp/dev/stdout"} {
		if _, ok := callerStream(p); ok {
			t.Errorf("%s is taken as a caller's stream", p)
		}
	}
}
