package main

import "golang.org/x/sys/unix"

// dirFlags open the folder of an output file only to name it in openat
// and unlinkat.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
