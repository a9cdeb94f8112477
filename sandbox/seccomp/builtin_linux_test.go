package seccomp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"runtime"
	"testing"
)

var updateBuilt = flag.Bool("update", false, "write this architecture's seccomp programs compiled into the binary")

// builtArchs are the architectures with programs compiled in.
var builtArchs = []string{"amd64", "arm64"}

// builtFiles are the files of arch's two programs, by table.
func builtFiles(arch string) map[string]bool {
	return map[string]bool{arch: false, arch + "_restricted": true}
}

// regenerate says how to write arch's programs again.
func regenerate(arch string) string {
	if arch == "amd64" {
		return "go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update (on x86_64)"
	}
	return "bash scripts/cross.sh " + arch + " go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update -libseccomp-api 3"
}

// TestBuiltSeccompCurrent compiles both tables with libseccomp and checks
// that the programs compiled into the binary are those (with -update, it
// writes them); and, on any machine, that every architecture's stored
// programs were compiled from the current table.
func TestBuiltSeccompCurrent(t *testing.T) {
	for _, arch := range builtArchs {
		for file, restricted := range builtFiles(arch) {
			table, err := json.Marshal(Rules(restricted))
			if err != nil {
				t.Fatal(err)
			}
			if arch == runtime.GOARCH && *updateBuilt {
				prog, err := compileBPF(Rules(restricted))
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
			if stored, err := os.ReadFile(file + ".json"); err != nil || !bytes.Equal(stored, table) {
				t.Errorf("%s.json is not the current table (%v): run %s", file, err, regenerate(arch))
			}
		}
	}
	if *updateBuilt {
		return // the binary holds the old files until it is built again
	}
	if len(builtPrograms) == 0 {
		t.Skipf("no programs are compiled in for %s", runtime.GOARCH)
	}
	for file, restricted := range builtFiles(runtime.GOARCH) {
		prog, err := compileBPF(Rules(restricted))
		if err != nil {
			t.Fatal(err)
		}
		if got := builtBPF(Rules(restricted)); !bytes.Equal(got, prog) {
			t.Errorf("%s.bpf (%d bytes) is not what the table compiles to (%d bytes): run %s", file, len(got), len(prog), regenerate(runtime.GOARCH))
		}
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
	if bytes.Equal(builtBPF(Rules(true)), builtBPF(Rules(false))) {
		t.Errorf("the two tables do not get their own programs")
	}
}
