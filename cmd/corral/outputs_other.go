//go:build !linux

package main

import "golang.org/x/sys/unix"

// dirFlags open the folder of an output file only to name it in openat
// and unlinkat (no O_PATH here).
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
