//go:build unix && !linux

package nofollow

import "golang.org/x/sys/unix"

// dirFlag opens a folder to name what is in it (no O_PATH here).
const dirFlag = unix.O_RDONLY
