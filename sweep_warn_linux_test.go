//go:build linux

package corral

import (
	"path/filepath"
	"testing"
)

// TestSweepWarnsOnce: what the sweep cannot check is one warning, given
// to Spec.Warn and kept in the Result once (Run's warn keeps it).
func TestSweepWarnsOnce(t *testing.T) {
	r := &Result{}
	var warned []string
	warn := keepWarnings(r, func(s string) { warned = append(warned, s) })
	// A write root whose parent is gone cannot be opened.
	root := filepath.Join(t.TempDir(), "gone", "root")
	sweepAfter(r, []string{root}, nil, "", sweepStart(), false, warn, nil)
	if len(warned) != 1 || len(r.Warnings) != 1 {
		t.Errorf("warned %q, the Result has %q: want one warning, once in each", warned, r.Warnings)
	}
}
