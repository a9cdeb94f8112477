package seccomp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"runtime"
)

// The two seccomp programs corral's table makes (with and without an exec
// allowlist) come compiled into the binary for x86_64: compiling one with
// libseccomp took about 0.5 ms of CPU on every launch, on machines where
// the launch is short of CPU. Each is stored with the table it was
// compiled from (as JSON), and is used only for exactly that table: a
// table changed since (and not compiled again) is compiled at run time.
// `go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update` writes them;
// without -update the test fails when they are not the current table's.
// Other architectures compile at run time.

//go:embed amd64.bpf
var builtDefault []byte

//go:embed amd64.json
var builtDefaultTable []byte

//go:embed amd64_restricted.bpf
var builtRestricted []byte

//go:embed amd64_restricted.json
var builtRestrictedTable []byte

// builtBPF returns the program compiled into the binary for rules, or nil.
func builtBPF(rules []Rule) []byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	table, err := json.Marshal(rules)
	if err != nil {
		return nil
	}
	for _, b := range []struct{ prog, table []byte }{{builtDefault, builtDefaultTable}, {builtRestricted, builtRestrictedTable}} {
		if len(b.prog) > 0 && bytes.Equal(table, b.table) {
			return bytes.Clone(b.prog)
		}
	}
	return nil
}
