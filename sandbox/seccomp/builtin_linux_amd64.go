package seccomp

import _ "embed"

// x86_64's programs: see builtin_linux.go.
var (
	//go:embed amd64.bpf
	amd64Default []byte
	//go:embed amd64.json
	amd64DefaultTable []byte
	//go:embed amd64_restricted.bpf
	amd64Restricted []byte
	//go:embed amd64_restricted.json
	amd64RestrictedTable []byte

	builtPrograms = []builtProgram{{amd64Default, amd64DefaultTable}, {amd64Restricted, amd64RestrictedTable}}
)
