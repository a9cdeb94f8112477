package policyengine

import (
	"strings"
	"testing"
)

// TestSandboxOwnPlaces: the system baseline's /tmp/** and /proc/** are
// the sandbox's own files. They never grant the host's file, and inside
// the sandbox they do not reach below a grant's folder, so a work dir
// under /tmp answers as one under /var/tmp (issue 27, item 4).
func TestSandboxOwnPlaces(t *testing.T) {
	for _, work := range []string{"/tmp/ws", "/var/tmp/ws"} {
		p := Permissions{
			Write:        NewEntries("md", []string{work + "/**/*.md"}),
			Exec:         NewEntries("md", []string{"/tmp/tool", "sh"}),
			Declared:     []string{"md"},
			ExecDeclared: []string{"md"},
		}
		e, err := New(p, Options{WorkDir: work})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			kind, path string
			want       Action
			says       string
		}{
			{"read", "secret.txt", Deny, "outside the fs.read globs"},
			{"write", "hack.sh", Deny, "outside the fs.write globs"},
			{"write", "notes.md", Allow, "**/*.md"},
			{"write", "sub/notes.md", Allow, "**/*.md"},
			{"read", "notes.md", Allow, "**/*.md"},
			{"read-inside", "secret.txt", Deny, "outside the fs.read globs"},
			{"write-inside", "hack.sh", Deny, "outside the fs.write globs"},
			{"write-inside", "notes.md", Allow, "**/*.md"},
			// The host's /tmp and /proc: never by the baseline.
			{"write", "/tmp/x", Deny, "the sandbox's own /tmp, not the host's"},
			{"read", "/tmp/x", Deny, "the sandbox's own /tmp, not the host's"},
			{"read", "/proc/self/environ", Deny, "the sandbox's own /proc"},
			{"read", "/dev/stdin", Deny, "the sandbox's own /dev/stdin"},
			{"write", "/dev/fd/1", Deny, "the sandbox's own /dev/fd"},
			// The sandbox's own ones, as the command sees them.
			{"write-inside", "/tmp/x", Allow, "/tmp/**"},
			{"read-inside", "/proc/self/status", Allow, "/proc/**"},
			{"write-inside", "/dev/fd/1", Allow, "/dev/fd/**"},
			// A program the exec list names is the host's file there.
			{"write-inside", "/tmp/tool", Deny, "outside the fs.write globs"},
			// The rest of the baseline is the host's files in both views.
			{"read", "/usr/bin/ls", Allow, "/usr/**"},
			{"write", "/dev/null", Allow, "/dev/null"},
			{"read-inside", "/etc/shadow", Deny, "outside the fs.read globs"},
		} {
			var d Decision
			switch tt.kind {
			case "read":
				d = e.CheckRead(tt.path)
			case "write":
				d = e.CheckWrite(tt.path)
			case "read-inside":
				d = e.CheckReadInside(tt.path)
			case "write-inside":
				d = e.CheckWriteInside(tt.path)
			}
			if d.Action != tt.want || !strings.Contains(d.Reason, tt.says) {
				t.Errorf("work dir %s: %s %s = %s (%s), want %s saying %q", work, tt.kind, tt.path, d.Action, d.Reason, tt.want, tt.says)
			}
		}
		// The preflight reads redirections as the command sees them.
		for _, tt := range []struct {
			line string
			want Action
		}{
			{"echo x > hack.sh", Deny},
			{"echo x > notes.md", Allow},
			{"sh -c 'echo x > hack.sh'", Deny},
			{"echo x > /tmp/scratch", Allow},
			{"echo x > /tmp/tool", Deny},
			{"sh -c 'cat < secret.txt'", Deny},
			{"echo x 2>/dev/null >/dev/stdout", Allow},
		} {
			if d := e.CheckExec(tt.line); d.Action != tt.want {
				t.Errorf("work dir %s: exec %q = %s (%s), want %s", work, tt.line, d.Action, d.Reason, tt.want)
			}
		}
	}
}
