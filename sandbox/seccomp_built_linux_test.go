package sandbox

import (
	"bytes"
	"flag"
	"os"
	"runtime"
	"testing"
)

var updateBuilt = flag.Bool("update", false, "write the seccomp programs compiled into the binary")

// TestBuiltSeccompCurrent compiles both tables with libseccomp and checks
// that the programs compiled into the binary are those (with -update, it
// writes them).
func TestBuiltSeccompCurrent(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the compiled-in programs are x86_64's")
	}
	for file, restricted := range map[string]bool{"seccomp_amd64.bpf": false, "seccomp_amd64_restricted.bpf": true} {
		rules := seccompFor(restricted)
		prog, err := compileBPF(rules)
		if err != nil {
			t.Fatal(err)
		}
		if *updateBuilt {
			if err := os.WriteFile(file, prog, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := builtBPF(rules); !bytes.Equal(got, prog) {
			t.Errorf("%s (%d bytes) is not what the table compiles to (%d bytes): run go test ./sandbox -run TestBuiltSeccompCurrent -update", file, len(got), len(prog))
		}
	}
	// Any other table is compiled at run time.
	if builtBPF(append(seccompFor(false), always("getpid", "EPERM", "test"))) != nil {
		t.Errorf("a table that is neither of the two got a compiled-in program")
	}
}
