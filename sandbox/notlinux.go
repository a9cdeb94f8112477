//go:build !linux

package sandbox

import (
	"corral.dev/corral/sandbox/progindex"
	"errors"
)

// ErrUnsupported means the kernel sandbox is Linux-only.
var ErrUnsupported = errors.New("the kernel sandbox needs Linux")

// HostProgramIndex is empty here: the program index is for Linux's exec
// allowlist.
func HostProgramIndex() progindex.Index { return progindex.Index{Source: "none"} }

// CreateHooksFolders has nothing to do here.
func CreateHooksFolders(f *Facts) ([]string, error) { return nil, nil }

// Held watches nothing here: protected paths are a Linux mount feature.
type Held struct{}

// Hold watches nothing here.
func Hold(paths []string) *Held { return &Held{} }

// Replaced is always empty here.
func (h *Held) Replaced() []string { return nil }

// Files is always empty here.
func (h *Held) Files() []HeldFile { return nil }

// Close does nothing here.
func (h *Held) Close() {}

// RemoveMustNotAppear does nothing off Linux.
func RemoveMustNotAppear([]string, func(string)) []string { return nil }

// RemoveRunTmp does nothing off Linux.
func RemoveRunTmp(string, func(string)) {}

// lockWatch notes nothing off Linux.
type lockWatch struct{}

func watchLocks([]string) *lockWatch   { return nil }
func (*lockWatch) finish(func(string)) {}
