//go:build !linux

package stage

// StartNativeSignals has no init to forward to here.
func StartNativeSignals() bool { return false }

// NativeFirst has no handlers to ask here.
func NativeFirst() int { return 0 }

// StopNativeSignals has nothing to stop here.
func StopNativeSignals() {}

// NativeEnding is never called here (StartNativeSignals fails).
func NativeEnding() int { select {} }
