package seccomp

import (
	"bytes"
	"encoding/json"
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
	for file, restricted := range map[string]bool{"amd64": false, "amd64_restricted": true} {
		rules := Rules(restricted)
		prog, err := compileBPF(rules)
		if err != nil {
			t.Fatal(err)
		}
		if *updateBuilt {
			table, err := json.Marshal(rules)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file+".bpf", prog, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file+".json", table, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := builtBPF(rules); !bytes.Equal(got, prog) {
			t.Errorf("%s.bpf (%d bytes) is not what the table compiles to (%d bytes), or %s.json is not the table: run go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update", file, len(got), len(prog), file)
		}
	}
	if *updateBuilt {
		return // the binary holds the old files until it is built again
	}
	// Any other table is compiled at run time: one more rule, or one
	// rule changed (as when the table is edited and -update forgotten).
	if builtBPF(append(Rules(false), always("getpid", EPERM, "test"))) != nil {
		t.Errorf("a table that is neither of the two got a compiled-in program")
	}
	changed := Rules(true)
	changed[0].Errno = ENOSYS
	if builtBPF(changed) != nil {
		t.Errorf("a changed table got the program compiled for the old one")
	}
	if !bytes.Equal(builtBPF(Rules(true)), builtRestricted) || !bytes.Equal(builtBPF(Rules(false)), builtDefault) {
		t.Errorf("the two tables do not get their own programs")
	}
}
