//go:build !linux

package sandbox

// TryUserNS: only Linux has user namespaces.
func TryUserNS() error { return ErrUnsupported }
