package stage

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

// The plan's record tags (sandbox's encodePlan writes them).
const (
	RecTrace        = C.CORRAL_REC_TRACE
	RecHostname     = C.CORRAL_REC_HOSTNAME
	RecDir          = C.CORRAL_REC_DIR
	RecPath         = C.CORRAL_REC_PATH
	RecArg          = C.CORRAL_REC_ARG
	RecEnv          = C.CORRAL_REC_ENV
	RecLegacyMounts = C.CORRAL_REC_LEGACY_MOUNTS
	RecMountPause   = C.CORRAL_REC_MOUNT_PAUSE
	RecMount        = C.CORRAL_REC_MOUNT
	RecLandlock     = C.CORRAL_REC_LANDLOCK
	RecRule         = C.CORRAL_REC_RULE
	RecPortRule     = C.CORRAL_REC_PORT_RULE
	RecHeld         = C.CORRAL_REC_HELD
	RecProxy        = C.CORRAL_REC_PROXY
	RecEgress       = C.CORRAL_REC_EGRESS
	RecLandlockLog  = C.CORRAL_REC_LANDLOCK_LOG
	RecNotify       = C.CORRAL_REC_NOTIFY
)

// The tiers an init runs in (spawned: argv[2]).
const (
	TierAuto       = C.CORRAL_TIER_AUTO
	TierNamespaces = C.CORRAL_TIER_NAMESPACES
	TierLandlock   = C.CORRAL_TIER_LANDLOCK
)

// The kind field of a mount record.
const (
	MountTmpfs   = C.CORRAL_MOUNT_TMPFS
	MountProc    = C.CORRAL_MOUNT_PROC
	MountBind    = C.CORRAL_MOUNT_BIND
	MountDev     = C.CORRAL_MOUNT_DEV
	MountSymlink = C.CORRAL_MOUNT_SYMLINK
	MountDir     = C.CORRAL_MOUNT_DIR
	MountCopy    = C.CORRAL_MOUNT_COPY
	MountFile    = C.CORRAL_MOUNT_FILE
	MountMask    = C.CORRAL_MOUNT_MASK
)

// The letters of a mount record's flags.
const (
	MountFlagRO     = C.CORRAL_MOUNT_FLAG_RO
	MountFlagNoExec = C.CORRAL_MOUNT_FLAG_NOEXEC
	MountFlagDir    = C.CORRAL_MOUNT_FLAG_DIR
)

// Forwarded are the signals corral passes on to the command
// (CORRAL_FORWARDED_SIGNALS).
var Forwarded = func() []os.Signal {
	out := make([]os.Signal, C.corral_nforwarded())
	for i := range out {
		out[i] = syscall.Signal(C.corral_forwarded_signal(C.int(i)))
	}
	return out
}()
