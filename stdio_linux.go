package corral

import (
	"os"

	"golang.org/x/sys/unix"
)

// netSocket tells a socket that is not a UNIX one: its connection is in
// the host's network namespace, where the command must not hold it.
func netSocket(f *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	domain, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_DOMAIN)
	return err != nil || domain != unix.AF_UNIX
}
