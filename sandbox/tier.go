package sandbox

import "fmt"

// Tier is how a sandbox is built. The namespaces tier is the full one:
// new user, mount, PID, network, IPC, UTS and cgroup namespaces, a new
// root holding only the grants, and Landlock and seccomp on top. The
// landlock tier makes no namespace, for hosts that refuse user namespaces
// (containers' seccomp profiles, user.max_user_namespaces=0, Ubuntu's
// AppArmor restriction): Landlock alone decides what the command reaches
// on the host's own file system, seccomp keeps it off every socket but
// TCP to corral's proxy, and the run ends every process it started
// through child subreapers. docs/tiers.md compares them.
type Tier string

const (
	// TierAuto is the namespaces tier where the kernel allows it, else
	// the landlock tier.
	TierAuto       Tier = "auto"
	TierNamespaces Tier = "namespaces"
	TierLandlock   Tier = "landlock"
)

// ParseTier reads --tier's value ("" is auto).
func ParseTier(s string) (Tier, error) {
	switch Tier(s) {
	case "", TierAuto:
		return TierAuto, nil
	case TierNamespaces, TierLandlock:
		return Tier(s), nil
	}
	return "", fmt.Errorf("--tier %q: one of auto, namespaces, landlock", s)
}

// TierInfo is the tier a run got and why.
type TierInfo struct {
	Name Tier   `json:"name"`
	Why  string `json:"why,omitempty"`
}
