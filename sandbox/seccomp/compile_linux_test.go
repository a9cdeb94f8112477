package seccomp

import (
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// TestSeccompTableCompiles checks every rule names a syscall this
// architecture knows (a typo would silently refuse nothing) and that the
// table compiles to a BPF program.
func TestSeccompTableCompiles(t *testing.T) {
	known := map[string]bool{"open_tree_attr": true, "uselib": true, "lookup_dcookie": true, "fchmodat2": true, "setxattrat": true, "removexattrat": true}
	for _, r := range Table() {
		if _, err := libseccomp.GetSyscallFromName(r.Syscall); err != nil && !known[r.Syscall] {
			t.Errorf("%s: %v", r.Syscall, err)
		}
		if r.Why == "" {
			t.Errorf("%s has no reason", r.Syscall)
		}
	}
	prog, err := compileBPF(Table())
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) < 8*len(Table()) {
		t.Errorf("program of %d bytes for %d rules", len(prog), len(Table()))
	}
}
