//go:build !linux

package sandbox

// HostProgramIndex is empty here: the program index is for Linux's exec
// allowlist.
func HostProgramIndex() ProgramIndex { return ProgramIndex{Source: "none"} }

// CreateHooksFolders has nothing to do here.
func CreateHooksFolders(f *Facts) ([]string, error) { return nil, nil }
