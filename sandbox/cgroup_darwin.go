package sandbox

import "errors"

// ErrUnsupported means a Linux kernel feature corral would use has no
// macOS counterpart.
var ErrUnsupported = errors.New("macOS has no cgroups")
