package sandbox

// nsinit_linux.c makes the sandbox's namespaces before the Go runtime
// starts in the init stage; importing C compiles it into corral.

// #cgo CFLAGS: -Wall -Wextra -O2
// #include "spawn_linux.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// spawnInit starts the init stage from a thread of its own
// (spawn_linux.c) and returns at once; the thread writes the init's pid
// to result and ends when hold reads EOF.
func spawnInit(files []*os.File, result, hold int) error {
	var fds [C.CORRAL_SPAWN_FDS]C.int
	if len(files) != len(fds) {
		return fmt.Errorf("the init takes %d fds, not %d", len(fds), len(files))
	}
	for i, f := range files {
		fds[i] = C.int(f.Fd())
	}
	rc := C.corral_spawn_init(&fds[0], C.int(result), C.int(hold))
	runtime.KeepAlive(files)
	if rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// readSpawned reads what the spawner thread wrote: the init's pid, or the
// errno of its failure.
func readSpawned(r *os.File) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("the thread starting the init ended without a word: %w", err)
	}
	n := int32(binary.NativeEndian.Uint32(b[:]))
	if n <= 0 {
		return 0, syscall.Errno(-n)
	}
	return int(n), nil
}
