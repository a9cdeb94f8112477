//go:build !linux

package stage

// StartNativeSignals has no init to forward to here.
func StartNativeSignals() bool { return false }

// StopNativeSignals has nothing to stop here.
func StopNativeSignals() {}

// NativeEnding is never called here (StartNativeSignals fails).
func NativeEnding() int { select {} }
