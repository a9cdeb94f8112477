package seccomp

import (
	"bytes"
	"encoding/json"
)

// The two seccomp programs corral's table makes (with and without an exec
// allowlist) come compiled into the binary for x86_64 and arm64:
// compiling one with libseccomp took about 0.5 ms of CPU on every launch,
// on machines where the launch is short of CPU. Each is stored with the
// table it was compiled from (as JSON), and is used only for exactly that
// table: a table changed since (and not compiled again) is compiled at
// run time. One file per architecture embeds its own pair
// (builtin_linux_amd64.go, builtin_linux_arm64.go); other architectures
// compile at run time.
//
// `go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update` writes
// this machine's pair. The arm64 pair is written by the arm64 test binary,
// run under qemu-user on an x86_64 machine
// (bash scripts/cross.sh arm64 go test ./sandbox/seccomp -run TestBuiltSeccompCurrent -update -libseccomp-api 3):
// libseccomp on x86_64 cannot write an arm64 program for a syscall it
// knows only by number (open_tree_attr), as the arm64 one does at run
// time. Without -update the test fails when a pair is not the current
// table's, on every architecture.

// builtProgram is one program and the table (JSON) it was compiled from.
type builtProgram struct{ prog, table []byte }

// builtBPF returns the program compiled into the binary for rules, or nil.
func builtBPF(rules []Rule) []byte {
	if len(builtPrograms) == 0 {
		return nil
	}
	table, err := json.Marshal(rules)
	if err != nil {
		return nil
	}
	for _, b := range builtPrograms {
		if len(b.prog) > 0 && bytes.Equal(table, b.table) {
			return bytes.Clone(b.prog)
		}
	}
	return nil
}
