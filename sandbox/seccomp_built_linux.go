package sandbox

import (
	"bytes"
	_ "embed"
	"reflect"
	"runtime"
)

// The two seccomp programs corral's table makes (with and without an exec
// allowlist) come compiled into the binary for x86_64: compiling one with
// libseccomp took about 0.5 ms of CPU on every launch, on machines where
// the launch is short of CPU. TestBuiltSeccompCurrent compiles them again
// and fails when these differ; `go test ./sandbox -run
// TestBuiltSeccompCurrent -update` writes them. Other architectures, and
// a table that is not one of the two, are compiled at run time.

//go:embed seccomp_amd64.bpf
var builtDefault []byte

//go:embed seccomp_amd64_restricted.bpf
var builtRestricted []byte

// builtBPF returns the program compiled into the binary for rules, or nil.
func builtBPF(rules []SysRule) []byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	for _, b := range []struct {
		restricted bool
		prog       []byte
	}{{false, builtDefault}, {true, builtRestricted}} {
		if len(b.prog) > 0 && reflect.DeepEqual(rules, seccompFor(b.restricted)) {
			return bytes.Clone(b.prog)
		}
	}
	return nil
}
