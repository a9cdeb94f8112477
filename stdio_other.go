//go:build !linux

package corral

import "os"

// netSocket is Linux's concern: off Linux the command runs in the host's
// network anyway.
func netSocket(*os.File) bool { return false }
