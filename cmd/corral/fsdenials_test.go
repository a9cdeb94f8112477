package main

import (
	"fmt"
	"strings"
	"testing"

	"corral.dev/corral"
)

// TestFSDenialSummary: at most 20 lines and a count, the preflight's own
// refusals left out (the exit line names them), names escaped.
func TestFSDenialSummary(t *testing.T) {
	r := &corral.Result{FSDenialsMore: 7}
	r.FSDenials = append(r.FSDenials, corral.FSDenial{Path: "id", Access: "exec", Grant: `add "id" to permissions.exec`, Source: "preflight"})
	for i := range 30 {
		r.FSDenials = append(r.FSDenials, corral.FSDenial{Path: fmt.Sprintf("/x/f%d\x1b[2J", i), Access: "read", Program: "cat\x07", Grant: "g", Source: "landlock"})
	}
	s := fsDenialSummary(r)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 22 || !strings.HasPrefix(lines[0], "corral: the sandbox refused 37 file access(es)") || !strings.Contains(lines[21], "and 17 more") {
		t.Fatalf("summary:\n%s", s)
	}
	if strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, `  read "/x/f0\x1b[2J" ("cat\a"): g`) {
		t.Errorf("not escaped:\n%q", s)
	}
	if strings.Contains(s, "exec id") {
		t.Errorf("the preflight's refusal is in the summary:\n%s", s)
	}
	if got := fsDenialSummary(&corral.Result{FSDenials: r.FSDenials[:1]}); got != "" {
		t.Errorf("only the preflight's: %q", got)
	}
}
