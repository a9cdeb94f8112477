package stage

import (
	"slices"
	"testing"
)

// TestProtocolTagsDistinct: the plan's record tags, the mount kinds and the
// mount flag letters come from protocol.h; two records or kinds sharing a
// letter would be read as each other.
func TestProtocolTagsDistinct(t *testing.T) {
	tags := []byte{RecTrace, RecHostname, RecDir, RecPath, RecArg, RecEnv, RecLegacyMounts, RecMountPause,
		RecMount, RecLandlock, RecRule, RecPortRule, RecHeld, RecProxy, RecEgress, RecLandlockLog, RecNotify}
	if len(slices.Compact(slices.Sorted(slices.Values(tags)))) != len(tags) {
		t.Errorf("record tags repeat: %q", tags)
	}
	kinds := []byte{MountTmpfs, MountProc, MountBind, MountDev, MountSymlink, MountDir, MountCopy, MountFile, MountMask}
	if len(slices.Compact(slices.Sorted(slices.Values(kinds)))) != len(kinds) {
		t.Errorf("mount kind letters repeat: %q", kinds)
	}
	flags := []byte{'-', MountFlagRO, MountFlagNoExec, MountFlagDir}
	if len(slices.Compact(slices.Sorted(slices.Values(flags)))) != len(flags) {
		t.Errorf("mount flag letters repeat: %q", flags)
	}
}
