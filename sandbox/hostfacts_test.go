//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"corral.dev/corral/policyengine"
)

// These tests run the behaviour of hosts this machine is not (older
// kernels, no user namespaces, cgroup v2 only, no cgroup) at the
// host-facts boundary: Probe's answers are replaced by the facts such a
// host would give, and BuildPlan must enforce, drop or refuse exactly as
// vagrant/EXPECTED.md says. They claim nothing about enforcement by a
// kernel (tests/ and the vagrant matrix do that); they pin the decisions
// corral makes from the facts.

// simHost is one simulated host.
type simHost struct {
	name   string
	abi    int
	llErr  string // LandlockErr
	userNS string // UserNSErr
	noSecc bool   // no seccomp
}

// hostPerms are the permissions every simulated host runs: reads, writes,
// a network rule and an exec allowlist, so every protection is in play.
func hostPerms() policyengine.Permissions {
	return policyengine.Permissions{
		Read: entries("/ws/data/**"), Write: entries("/ws/out/**"),
		Network: entries("api.example.com:443"), Exec: entries("sh", "curl"),
		Declared: []string{"t"}, ExecDeclared: []string{"t"},
	}
}

func (h simHost) facts() *Facts {
	f := fakeFacts([]string{"/ws", "/ws/data", "/ws/out"}, nil, "sh", "curl")
	f.LandlockABI, f.LandlockErr, f.UserNSErr, f.Seccomp = h.abi, h.llErr, h.userNS, !h.noSecc
	return f
}

// Texts of the protections table, as BuildPlan words them.
var (
	needsLL   = "needs Landlock, which is unavailable (see landlock-fs)"
	needsSecc = "needs seccomp, which this kernel lacks"

	noLandlock = "the kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK)"
	llDisabled = "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
	apparmorNS = "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1); run sudo corral setup apparmor to allow them for corral (a profile with the userns rule), or set the sysctl to 0"
	sysctlNS   = "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone is 0"
	maxNS      = "user namespaces are disabled: sysctl user.max_user_namespaces is 0"
)

func refusal(missing ...string) string {
	return "protection unavailable: " + strings.Join(missing, "; ") + " (use --best-effort to run without it)"
}

// landlockRefusal is the refusal of the landlock tier, which a host that
// refuses user namespaces runs.
func landlockRefusal(why string, missing ...string) string {
	return "protection unavailable: in the landlock tier (" + why + "): " + strings.Join(missing, "; ") + " (use --best-effort to run without it)"
}

func TestHostFactsProtections(t *testing.T) {
	all := []string{"namespaces", "landlock-fs", "landlock-net", "landlock-scope", "seccomp", "no-new-privs",
		"capabilities", "network", "private-mounts", "exec-allowlist", "memfd-noexec"}
	landlockAll := []string{"tier", "landlock-fs", "landlock-scope", "seccomp", "no-new-privs", "capabilities", "network",
		"landlock-net", "process-cleanup", "protected-paths", "exec-allowlist", "memfd-noexec"}
	for _, tc := range []struct {
		host    simHost
		dropped []string // protections not enforced; every other one is
		refused string   // the exact fail-closed error, "" when it runs
	}{
		{simHost{name: "this machine: kernel 6.18, Landlock ABI 7", abi: 7}, nil, ""},
		{simHost{name: "kernel 6.12-6.14 (Fedora 42): ABI 6", abi: 6}, nil, ""},
		{simHost{name: "kernel 6.10-6.11 (Fedora 41): ABI 5", abi: 5}, []string{"landlock-scope"}, ""},
		{simHost{name: "kernel 6.7-6.9 (Ubuntu 24.04): ABI 4", abi: 4}, []string{"landlock-scope"}, ""},
		{simHost{name: "kernel 6.2-6.6: ABI 3", abi: 3}, []string{"landlock-net", "landlock-scope"}, ""},
		{simHost{name: "kernel 5.19-6.1 (Debian 12): ABI 2", abi: 2}, []string{"landlock-net", "landlock-scope"}, ""},
		{simHost{name: "kernel 5.13-5.18 (Ubuntu 22.04's 5.15): ABI 1", abi: 1}, []string{"landlock-net", "landlock-scope"}, ""},
		{simHost{name: "kernel without Landlock", llErr: noLandlock},
			[]string{"landlock-fs", "landlock-net", "landlock-scope", "exec-allowlist"},
			refusal("landlock-fs: "+noLandlock, "exec-allowlist: "+needsLL)},
		{simHost{name: "Landlock built in, not in lsm=", llErr: llDisabled},
			[]string{"landlock-fs", "landlock-net", "landlock-scope", "exec-allowlist"},
			refusal("landlock-fs: "+llDisabled, "exec-allowlist: "+needsLL)},
		// Where user namespaces are refused, the landlock tier runs: it
		// refuses an exec allowlist, and needs ABI 6 for signal scoping.
		{simHost{name: "Ubuntu 24.04 as a user: AppArmor restriction", abi: 4, userNS: apparmorNS},
			[]string{"landlock-scope", "exec-allowlist"},
			landlockRefusal(apparmorNS, "landlock-scope: needs Landlock ABI 6, the kernel has 4", "exec-allowlist: "+landlockExecDetail)},
		{simHost{name: "user, kernel.unprivileged_userns_clone=0", abi: 2, userNS: sysctlNS},
			[]string{"landlock-scope", "landlock-net", "exec-allowlist"},
			landlockRefusal(sysctlNS, "landlock-scope: needs Landlock ABI 6, the kernel has 2", "exec-allowlist: "+landlockExecDetail)},
		{simHost{name: "user.max_user_namespaces=0", abi: 7, userNS: maxNS},
			[]string{"exec-allowlist"},
			landlockRefusal(maxNS, "exec-allowlist: "+landlockExecDetail)},
		{simHost{name: "kernel without seccomp", abi: 7, noSecc: true},
			[]string{"seccomp", "memfd-noexec"},
			refusal("seccomp: seccomp filters are unavailable", "memfd-noexec: "+needsSecc)},
	} {
		t.Run(tc.host.name, func(t *testing.T) {
			spec := Spec{Argv: []string{"sh", "-c", "curl -s https://api.example.com/"}, WorkDir: "/ws"}
			plan, err := BuildPlan(hostPerms(), spec, tc.host.facts())
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				if !errors.Is(err, ErrProtection) || err.Error() != tc.refused {
					t.Fatalf("err =\n  %v\nwant\n  %s", err, tc.refused)
				}
				// --best-effort runs and names every dropped protection.
				spec.BestEffort = true
				if plan, err = BuildPlan(hostPerms(), spec, tc.host.facts()); err != nil {
					t.Fatalf("--best-effort refused: %v", err)
				}
			}
			var names, dropped []string
			for _, p := range plan.Protections {
				names = append(names, p.Name)
				if !p.Enforced {
					dropped = append(dropped, p.Name)
					if p.Detail == "" {
						t.Errorf("%s is dropped without a reason", p.Name)
					}
				}
			}
			want := all
			if tc.host.userNS != "" {
				want = landlockAll
			}
			if !slices.Equal(names, want) {
				t.Errorf("protections %v, want %v", names, want)
			}
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tc.dropped)
			}
		})
	}
}

// TestHostFactsLandlockABI checks the Landlock ruleset each ABI gets: the
// handled filesystem rights are exactly the ones that ABI knows (a newer
// kernel gets no right corral does not know), TCP port rules only from
// ABI 4, scoping only from ABI 6, and no rule grants a right the ruleset
// does not handle (the kernel would refuse the rule).
func TestHostFactsLandlockABI(t *testing.T) {
	const (
		abi1 = 0x1fff // execute .. make_sym
		abi2 = abi1 | 1<<13
		abi3 = abi2 | 1<<14
		abi5 = abi3 | 1<<15
	)
	for _, tc := range []struct {
		abi              int
		fs, net, scoped  uint64
		portRules        int
		detailNet, scope string
	}{
		{0, 0, 0, 0, 0, "needs Landlock ABI 4, the kernel has 0", "needs Landlock ABI 6, the kernel has 0"},
		{1, abi1, 0, 0, 0, "needs Landlock ABI 4, the kernel has 1", "needs Landlock ABI 6, the kernel has 1"},
		{2, abi2, 0, 0, 0, "needs Landlock ABI 4, the kernel has 2", "needs Landlock ABI 6, the kernel has 2"},
		{3, abi3, 0, 0, 0, "needs Landlock ABI 4, the kernel has 3", "needs Landlock ABI 6, the kernel has 3"},
		{4, abi3, 3, 0, 1, "", "needs Landlock ABI 6, the kernel has 4"},
		{5, abi5, 3, 0, 1, "", "needs Landlock ABI 6, the kernel has 5"},
		{6, abi5, 3, 3, 1, "", ""},
		{7, abi5, 3, 3, 1, "", ""},
		{9, abi5, 3, 3, 1, "", ""}, // a newer kernel: only the rights corral knows
	} {
		t.Run(fmt.Sprintf("ABI %d", tc.abi), func(t *testing.T) {
			h := simHost{abi: tc.abi}
			if tc.abi == 0 {
				h.llErr = noLandlock
			}
			plan, err := BuildPlan(hostPerms(), Spec{Argv: []string{"sh"}, WorkDir: "/ws", BestEffort: true}, h.facts())
			if err != nil {
				t.Fatal(err)
			}
			ll := plan.Landlock
			if ll.ABI != tc.abi || ll.HandledFS != tc.fs || ll.HandledNet != tc.net || ll.Scoped != tc.scoped {
				t.Errorf("ABI %d, handled fs %#x net %#x, scoped %#x; want ABI %d, %#x, %#x, %#x",
					ll.ABI, ll.HandledFS, ll.HandledNet, ll.Scoped, tc.abi, tc.fs, tc.net, tc.scoped)
			}
			if len(ll.PortRules) != tc.portRules {
				t.Errorf("%d TCP port rules, want %d: %+v", len(ll.PortRules), tc.portRules, ll.PortRules)
			}
			for _, r := range ll.PortRules {
				if r.Port != ProxyPort || r.Access != netConnectTCP {
					t.Errorf("port rule %+v: want connect to the proxy port %d only", r, ProxyPort)
				}
			}
			if tc.abi >= 1 {
				for _, r := range ll.Rules {
					if r.Access&^tc.fs != 0 {
						t.Errorf("rule %s grants %#x, outside the handled %#x (the kernel refuses it)", r.Path, r.Access&^tc.fs, tc.fs)
					}
				}
				// The allowed programs stay executable at every ABI.
				if r, ok := findRule(plan, "/usr/bin/curl"); !ok || r.Access&fsExecute == 0 {
					t.Errorf("curl is not executable at ABI %d: %+v", tc.abi, r)
				}
				// A device never gets ioctl before ABI 5 (the right does
				// not exist) and gets it from ABI 5 on.
				if r, _ := findRule(plan, "/dev/null"); (r.Access&fsIoctlDev != 0) != (tc.abi >= 5) {
					t.Errorf("/dev/null at ABI %d: %s", tc.abi, r.Rights)
				}
			}
			for _, p := range plan.Protections {
				if p.Name == "landlock-net" && tc.detailNet != "" && p.Detail != tc.detailNet {
					t.Errorf("landlock-net: %q, want %q", p.Detail, tc.detailNet)
				}
				if p.Name == "landlock-scope" && tc.scope != "" && p.Detail != tc.scope {
					t.Errorf("landlock-scope: %q, want %q", p.Detail, tc.scope)
				}
			}
		})
	}
}

// TestHostFactsNoNetworkABI1: without network.allow there is no proxy and
// no port rule at any ABI, and the landlock-net row still says why it is
// missing below ABI 4.
func TestHostFactsNoNetworkABI1(t *testing.T) {
	perms := hostPerms()
	perms.Network = nil
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, simHost{abi: 1}.facts())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Proxy != nil || len(plan.Landlock.PortRules) != 0 || plan.Landlock.HandledNet != 0 {
		t.Errorf("proxy %+v, port rules %+v, handled net %#x", plan.Proxy, plan.Landlock.PortRules, plan.Landlock.HandledNet)
	}
	for _, e := range plan.Env {
		if strings.HasPrefix(e, "HTTP_PROXY=") {
			t.Errorf("proxy variable without a proxy: %s", e)
		}
	}
}

// TestHostFactsLandlockQuery maps the Landlock ABI query's answers to the
// facts (probe_linux.go's landlockFacts).
func TestHostFactsLandlockQuery(t *testing.T) {
	for _, tc := range []struct {
		abi     int
		err     error
		wantABI int
		want    string
	}{
		{7, nil, 7, ""},
		{1, nil, 1, ""},
		{0, unix.ENOSYS, 0, noLandlock},
		{0, unix.EOPNOTSUPP, 0, llDisabled},
		{0, unix.EPERM, 0, "Landlock ABI query failed: operation not permitted"},
	} {
		abi, why := landlockFacts(tc.abi, tc.err)
		if abi != tc.wantABI || why != tc.want {
			t.Errorf("landlockFacts(%d, %v) = %d, %q; want %d, %q", tc.abi, tc.err, abi, why, tc.wantABI, tc.want)
		}
	}
}

// TestHostFactsUserNS drives userNSRefusal from fake sysctl trees: each
// sysctl that refuses user namespaces, for root and for a user.
func TestHostFactsUserNS(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sysctls map[string]string // relative to /proc/sys
		uid     int
		want    string
	}{
		{"Debian 12 / Fedora, root", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1"}, 0, ""},
		{"Debian 12, user", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1"}, 1000, ""},
		{"Fedora, user (no Debian sysctl)", map[string]string{"user/max_user_namespaces": "63414"}, 1000, ""},
		{"Ubuntu 24.04, root", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1", "kernel/apparmor_restrict_unprivileged_userns": "1"}, 0, ""},
		{"Ubuntu 24.04, user", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1", "kernel/apparmor_restrict_unprivileged_userns": "1"}, 1000, apparmorNS},
		{"Ubuntu 24.04 with the restriction lifted, user", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1", "kernel/apparmor_restrict_unprivileged_userns": "0"}, 1000, ""},
		{"Ubuntu 22.04, user", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "1"}, 1000, ""},
		{"Debian 10 default, user", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "0"}, 1000, sysctlNS},
		{"Debian 10 default, root", map[string]string{"user/max_user_namespaces": "63414", "kernel/unprivileged_userns_clone": "0"}, 0, ""},
		{"max_user_namespaces 0, root", map[string]string{"user/max_user_namespaces": "0"}, 0, maxNS},
		{"max_user_namespaces 0 wins over AppArmor, user", map[string]string{"user/max_user_namespaces": "0", "kernel/apparmor_restrict_unprivileged_userns": "1"}, 1000, maxNS},
		{"unreadable sysctls", nil, 1000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, value := range tc.sysctls {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, p, value+"\n")
			}
			if got := userNSRefusalIn(dir, tc.uid); got != tc.want {
				t.Errorf("userNSRefusalIn = %q, want %q", got, tc.want)
			}
		})
	}
}

func write(t *testing.T, file, data string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
