package corral

import "golang.org/x/sys/unix"

const getTermios, setTermios = unix.TIOCGETA, unix.TIOCSETA

// withoutTTOU runs f; a background corral on macOS may be stopped by
// SIGTTOU while it sets the terminal back.
func withoutTTOU(f func()) { f() }
