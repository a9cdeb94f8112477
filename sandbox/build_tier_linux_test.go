package sandbox

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// TestPlanLandlockTier: the landlock tier's plan mounts nothing, gives
// the run its own TMPDIR (and HOME when no grant covers it), grants only
// the machine files of /proc, points the proxy at corral's listener and
// handles TCP with no port granted.
func TestPlanLandlockTier(t *testing.T) {
	perms := hostPerms()
	perms.Exec, perms.ExecDeclared = nil, nil
	facts := fakeFacts([]string{"/ws", "/ws/data", "/ws/out", "/home/u"}, nil, "sh")
	proxy := netip.MustParseAddrPort("127.0.0.1:41234")
	spec := Spec{Argv: []string{"sh"}, WorkDir: "/ws", Env: []string{"HOME=/home/u"}, Tier: TierLandlock, RunTmp: "/tmp/corral-run-1", HostProxy: proxy}
	plan, err := BuildPlan(perms, spec, facts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Tier.Name != TierLandlock || len(plan.Mounts) != 0 || len(plan.Landlock.PortRules) != 0 {
		t.Fatalf("tier %v, %d mounts, %d port rules: want the landlock tier, none, none", plan.Tier, len(plan.Mounts), len(plan.Landlock.PortRules))
	}
	if plan.Landlock.HandledNet&netConnectTCP == 0 {
		t.Error("TCP connect is not handled: a direct connect would not be refused by Landlock")
	}
	var paths []string
	for _, r := range plan.Landlock.Rules {
		paths = append(paths, r.Path)
		if r.Path == "/proc" || r.Path == "/tmp" || r.Path == "/dev/shm" {
			t.Errorf("rule for %s (%s) in the landlock tier", r.Path, r.From)
		}
	}
	for _, want := range []string{"/tmp/corral-run-1", "/proc/cpuinfo", "/ws/out"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no rule for %s: %v", want, paths)
		}
	}
	for _, want := range []string{"TMPDIR=/tmp/corral-run-1", "HOME=/tmp/corral-run-1", "HTTP_PROXY=http://127.0.0.1:41234"} {
		if !slices.Contains(plan.Env, want) {
			t.Errorf("env lacks %s: %v", want, plan.Env)
		}
	}
	// A grant covering HOME keeps it.
	perms.Read = append(perms.Read, entries("/home/u/**")...)
	if plan, err = BuildPlan(perms, spec, facts); err != nil || !slices.Contains(plan.Env, "HOME=/home/u") {
		t.Errorf("HOME under a grant was replaced (%v): %v", err, plan.Env)
	}
}

// TestPlanLandlockTierRefuses: what the tier cannot keep from the command
// refuses the run, naming the tier: an exec list, a skill folder inside a
// writable root, a grant reaching a private ssh key; --best-effort runs.
func TestPlanLandlockTierRefuses(t *testing.T) {
	base := Spec{Argv: []string{"sh"}, WorkDir: "/ws", Tier: TierLandlock, RunTmp: "/tmp/r"}
	for _, tc := range []struct {
		name  string
		edit  func(*Spec, *Facts) Spec
		perms func() policyengine.Permissions
		want  string
	}{
		{"exec list", func(s *Spec, f *Facts) Spec { return *s }, hostPermsWithExec, "exec-allowlist"},
		{"skill inside a writable root", func(s *Spec, f *Facts) Spec {
			f.Files["/ws/out/skill"] = FileInfo{Exists: true, Dir: true, Real: "/ws/out/skill"}
			c := *s
			c.Keep = []string{"/ws/out/skill"}
			return c
		}, hostPermsNoExec, "no read-only bind"},
		{"private ssh key in a grant", func(s *Spec, f *Facts) Spec {
			f.Home = "/ws/out"
			f.Files["/ws/out/.ssh"] = FileInfo{Exists: true, Dir: true, Real: "/ws/out/.ssh"}
			f.Files["/ws/out/.ssh/id_ed25519"] = FileInfo{Exists: true, Real: "/ws/out/.ssh/id_ed25519"}
			f.SSHSecrets = []string{"/ws/out/.ssh/id_ed25519"}
			return *s
		}, hostPermsNoExec, "private ssh key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := fakeFacts([]string{"/ws", "/ws/data", "/ws/out"}, nil, "sh", "curl")
			spec := tc.edit(&base, facts)
			_, err := BuildPlan(tc.perms(), spec, facts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !(errors.Is(err, ErrProtection) || errors.Is(err, ErrUnsafeGrant)) {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.want)
			}
			if tc.want == "exec-allowlist" {
				spec.BestEffort = true
				if _, err := BuildPlan(tc.perms(), spec, facts); err != nil {
					t.Fatalf("--best-effort refused: %v", err)
				}
			}
		})
	}
}

func hostPermsWithExec() policyengine.Permissions { return hostPerms() }

func hostPermsNoExec() policyengine.Permissions {
	p := hostPerms()
	p.Exec, p.ExecDeclared = nil, nil
	return p
}
