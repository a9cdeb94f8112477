//go:build linux && !amd64 && !arm64

package seccomp

// builtPrograms is empty where no programs are compiled in: the table is
// compiled at run time.
var builtPrograms []builtProgram
