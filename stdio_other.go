//go:build !linux

package corral

import (
	"io"
	"os"
)

// netSocket is Linux's concern: off Linux the command runs in the host's
// network anyway.
func netSocket(*os.File) bool { return false }

// outputKind passes every stream as it is off Linux: nothing is counted.
func outputKind(*os.File) int { return outputOther }

func sameFile(*os.File, io.Writer) bool { return false }

func fileOutput(*os.File) (int64, bool) { return 0, false }
