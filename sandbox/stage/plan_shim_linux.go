//go:build corral_testhooks

package stage

// #include <stdlib.h>
// int corral_parse_shim(const char *buf, size_t len, int only_mounts, char **out, size_t *out_len, size_t *block_off, size_t *block_len);
// extern char corral_ahead_why[];
// static const char *corral_shim_why(void) { return corral_ahead_why; }
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// shimMu serialises parsePlan: the C parser keeps its state in globals.
var shimMu sync.Mutex

// parsePlan parses data as the sandbox's init parses a plan (onlyMounts:
// as a cached mount block, which the init reads from a file) and returns
// what it read, as records grouped by tag (plan_shim_linux.c), and where
// the mount block is in data. It exists for the tests and the fuzz target
// of the C parser, in a corral_testhooks build only.
func parsePlan(data []byte, onlyMounts bool) (parsed []byte, block [2]int, err error) {
	shimMu.Lock()
	defer shimMu.Unlock()
	buf := C.CBytes(data) // the parser keeps pointers into it until it returns
	defer C.free(buf)
	only := C.int(0)
	if onlyMounts {
		only = 1
	}
	var out *C.char
	var outLen, off, n C.size_t
	if C.corral_parse_shim((*C.char)(buf), C.size_t(len(data)), only, &out, &outLen, &off, &n) != 0 {
		return nil, block, errors.New(C.GoString(C.corral_shim_why()))
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(outLen)), [2]int{int(off), int(off + n)}, nil
}
