//go:build !linux

package netns

import (
	"net/netip"

	"corral.dev/corral/policyengine"
)

// SystemHostAddrs answers policyengine.HostAddrs from the addresses of
// the machine's interfaces, read at each check.
func SystemHostAddrs() policyengine.HostAddrs { return interfaceAddrs{} }

type interfaceAddrs struct{}

// IsHost reports whether a is assigned to one of this machine's
// interfaces; when it cannot tell, it answers true (fail closed).
func (interfaceAddrs) IsHost(a netip.Addr) bool {
	return isLocalAddr(a.WithZone("").Unmap())
}
