package sandbox

// nsinit_linux.c makes the sandbox's namespaces before the Go runtime
// starts in the init stage; importing C compiles it into corral.

// #cgo CFLAGS: -Wall -Wextra -O2
import "C"
