package sandbox

// The wire format between corral and the sandbox's init, read from the
// header the C side includes (protocol.h), so each fact has one
// definition.

// #include "protocol.h"
// static const int corral_forwarded_signals[] = CORRAL_FORWARDED_SIGNALS;
// static int corral_nforwarded(void) { return sizeof corral_forwarded_signals / sizeof corral_forwarded_signals[0]; }
// static int corral_forwarded_signal(int i) { return corral_forwarded_signals[i]; }
import "C"

import (
	"os"
	"syscall"
)

// The plan's record tags (encodePlan).
const (
	recTrace        = C.CORRAL_REC_TRACE
	recHostname     = C.CORRAL_REC_HOSTNAME
	recDir          = C.CORRAL_REC_DIR
	recPath         = C.CORRAL_REC_PATH
	recArg          = C.CORRAL_REC_ARG
	recEnv          = C.CORRAL_REC_ENV
	recLegacyMounts = C.CORRAL_REC_LEGACY_MOUNTS
	recMountPause   = C.CORRAL_REC_MOUNT_PAUSE
	recMount        = C.CORRAL_REC_MOUNT
	recLandlock     = C.CORRAL_REC_LANDLOCK
	recRule         = C.CORRAL_REC_RULE
	recPortRule     = C.CORRAL_REC_PORT_RULE
	recHeld         = C.CORRAL_REC_HELD
	recProxy        = C.CORRAL_REC_PROXY
)

// mountKinds are the kind fields of mount records.
var mountKinds = map[MountKind]byte{
	MountTmpfs:  C.CORRAL_MOUNT_TMPFS,
	MountProc:   C.CORRAL_MOUNT_PROC,
	MountBind:   C.CORRAL_MOUNT_BIND,
	MountDev:    C.CORRAL_MOUNT_DEV,
	MountSymlnk: C.CORRAL_MOUNT_SYMLINK,
	MountDir:    C.CORRAL_MOUNT_DIR,
	MountCopy:   C.CORRAL_MOUNT_COPY,
	MountFile:   C.CORRAL_MOUNT_FILE,
}

// The letters of a mount record's flags.
const (
	mountFlagRO     = C.CORRAL_MOUNT_FLAG_RO
	mountFlagNoExec = C.CORRAL_MOUNT_FLAG_NOEXEC
	mountFlagDir    = C.CORRAL_MOUNT_FLAG_DIR
)

// forwarded are the signals corral passes on to the command
// (CORRAL_FORWARDED_SIGNALS).
var forwarded = func() []os.Signal {
	out := make([]os.Signal, C.corral_nforwarded())
	for i := range out {
		out[i] = syscall.Signal(C.corral_forwarded_signal(C.int(i)))
	}
	return out
}()
