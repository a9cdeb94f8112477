package seccomp

import _ "embed"

// arm64's programs: see builtin_linux.go.
var (
	//go:embed arm64.bpf
	arm64Default []byte
	//go:embed arm64.json
	arm64DefaultTable []byte
	//go:embed arm64_restricted.bpf
	arm64Restricted []byte
	//go:embed arm64_restricted.json
	arm64RestrictedTable []byte

	builtPrograms = []builtProgram{{arm64Default, arm64DefaultTable}, {arm64Restricted, arm64RestrictedTable}}
)
