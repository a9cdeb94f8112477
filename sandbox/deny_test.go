package sandbox

import (
	"errors"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

func denyPerms(read, write, deny []string) policyengine.Permissions {
	return policyengine.Permissions{Read: entries(read...), Write: entries(write...), Deny: policyengine.NewEntries("guard", deny), Declared: []string{"t", "guard"}}
}

// TestPlanDenyMasks: what a deny glob matches at launch is masked on top
// of every bind, as a file or a folder; where a glob could match a name
// made in a write grant the supervisor makes every name, unless a pinned
// folder mask holds it.
func TestPlanDenyMasks(t *testing.T) {
	facts := fakeFacts([]string{"/ws", "/ws/docs", "/ws/keys", "/ws/a", "/ws/a/keys"}, []string{"/ws/docs/.env"}, "sh")
	facts.Denied = []DeniedPath{{Path: "/ws/docs/.env", Glob: "/**/.env"}, {Path: "/ws/keys", Dir: true, Glob: "/ws/keys/**"}}
	spec := Spec{Argv: []string{"sh"}, WorkDir: "/ws"}
	plan, err := BuildPlan(denyPerms([]string{"/ws/**"}, nil, []string{"/**/.env", "/ws/keys/**"}), spec, facts)
	if err != nil {
		t.Fatal(err)
	}
	last := plan.Mounts[len(plan.Mounts)-2:]
	if last[0].Kind != MountMask || last[0].Target != "/ws/docs/.env" || last[0].Dir || !last[0].ReadOnly ||
		last[1].Kind != MountMask || last[1].Target != "/ws/keys" || !last[1].Dir || !strings.Contains(last[1].Why, "(guard)") {
		t.Errorf("masks are not last, or wrong: %+v", last)
	}
	for _, c := range []struct {
		path string
		kind string
	}{{"/ws/docs/.env", "denied"}, {"/ws/keys/id", "denied"}, {"/ws/docs/readme", "granted"}, {"/ws/.envrc", "granted"}} {
		if a := plan.FileAccess(HostPath{Path: c.path, Real: c.path, Exists: true}, OpRead, ViewHost); a.Kind != c.kind {
			t.Errorf("read %s: %s, want %s", c.path, a, c.kind)
		}
	}

	// In a write grant: the supervisor makes every name (the kernel
	// rules lose their make rights), unless the folder mask is pinned
	// right inside the grant's root; without Landlock, refused.
	write := denyPerms(nil, []string{"/ws/**"}, []string{"/ws/keys/**"})
	if p, err := BuildPlan(write, spec, facts); err != nil || len(p.Notify) != 0 {
		t.Errorf("a pinned folder mask in a write grant: %v, notify %v", err, p.Notify)
	}
	for _, deny := range []string{"/**/.env", "/ws/a/keys/**", "/ws/new/**"} {
		if deny == "/ws/a/keys/**" {
			facts.Denied = []DeniedPath{{Path: "/ws/a/keys", Dir: true, Glob: deny}}
		}
		p, err := BuildPlan(denyPerms(nil, []string{"/ws/**"}, []string{deny}), spec, facts)
		if err != nil {
			t.Errorf("deny %s in a write grant: %v", deny, err)
			continue
		}
		if len(p.Notify) != len(createNotify) || len(p.CreateRules) != len(p.Landlock.Rules) {
			t.Errorf("deny %s in a write grant: notify %v, %d create rules for %d rules", deny, p.Notify, len(p.CreateRules), len(p.Landlock.Rules))
		}
		for _, r := range p.Landlock.Rules {
			if r.Access&makeRights != 0 {
				t.Errorf("deny %s: the kernel rule on %s still makes names: %s", deny, r.Path, r.Rights)
			}
		}
		if a := p.FileAccess(HostPath{Path: "/ws/new.txt", Real: "/ws/new.txt"}, OpWrite, ViewHost); !a.Allowed {
			t.Errorf("deny %s: a new file in the write grant: %s", deny, a)
		}
	}
	noLandlock := fakeFacts([]string{"/ws"}, nil, "sh")
	noLandlock.LandlockABI, noLandlock.LandlockErr = 0, "no Landlock"
	spec.BestEffort = true
	_, err = BuildPlan(denyPerms(nil, []string{"/ws/**"}, []string{"/**/.env"}), spec, noLandlock)
	if !errors.Is(err, ErrUnsafeGrant) || !strings.Contains(err.Error(), "without Landlock corral cannot keep the command from making a name") {
		t.Errorf("without Landlock: %v", err)
	}
	spec.BestEffort = false

	// The walk stopped short, or too many matches: refused.
	facts.DenyCut = []string{"/ws: more than 200000 entries in the granted trees"}
	if _, err := BuildPlan(denyPerms([]string{"/ws/**"}, nil, []string{"/**/.env"}), spec, facts); err == nil || !strings.Contains(err.Error(), "stopped at /ws") {
		t.Errorf("a cut walk: %v", err)
	}
	facts.DenyCut = nil
	facts.Denied = nil
	for i := range maxDenyMasks + 1 {
		p := "/ws/docs/" + strings.Repeat("x", i+1) + ".pem"
		facts.Files[p] = FileInfo{Exists: true, Real: p}
		facts.Denied = append(facts.Denied, DeniedPath{Path: p, Glob: "/**/*.pem"})
	}
	if _, err := BuildPlan(denyPerms([]string{"/ws/**"}, nil, []string{"/**/*.pem"}), spec, facts); err == nil || !strings.Contains(err.Error(), "more than the 512 masks") {
		t.Errorf("too many masks: %v", err)
	}
}

// TestPlanDenyLandlockTier: a match at launch is refused; a deny that
// could match a name made in a write grant takes the make rights out of
// the kernel rules, keeps them for the supervisor and notifies the calls
// that make a name.
func TestPlanDenyLandlockTier(t *testing.T) {
	facts := fakeFacts([]string{"/ws"}, nil, "sh")
	spec := Spec{Argv: []string{"sh"}, WorkDir: "/ws", Tier: TierLandlock, RunTmp: "/tmp/corral-run-1"}
	plan, err := BuildPlan(denyPerms(nil, []string{"/ws/**"}, []string{"/**/.env"}), spec, facts)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Notify) != len(createNotify) || len(plan.CreateRules) != len(plan.Landlock.Rules) {
		t.Fatalf("notify %v, %d create rules for %d rules", plan.Notify, len(plan.CreateRules), len(plan.Landlock.Rules))
	}
	ws, _ := findRule(plan, "/ws")
	if ws.Access&makeRights != 0 {
		t.Errorf("the kernel rule on /ws still makes names: %s", ws.Rights)
	}
	if a := plan.FileAccess(HostPath{Path: "/ws/new", Real: "/ws/new"}, OpWrite, ViewHost); !a.Allowed {
		t.Errorf("a new file in the write grant: %s", a)
	}
	if a := plan.FileAccess(HostPath{Path: "/ws/x/.env", Real: "/ws/x/.env"}, OpWrite, ViewHost); a.Allowed || a.Kind != "denied" {
		t.Errorf("a denied new file: %s", a)
	}
	facts.Denied = []DeniedPath{{Path: "/ws/.env", Glob: "/**/.env"}}
	if _, err := BuildPlan(denyPerms([]string{"/ws/**"}, nil, []string{"/**/.env"}), spec, facts); err == nil || !strings.Contains(err.Error(), "the landlock tier cannot carve") {
		t.Errorf("a match at launch: %v", err)
	}
	// Without deny globs nothing changes.
	plain, err := BuildPlan(denyPerms(nil, []string{"/ws/**"}, nil), spec, fakeFacts([]string{"/ws"}, nil, "sh"))
	if err != nil || len(plain.Notify) != 0 || len(plain.CreateRules) != 0 {
		t.Errorf("no deny: %v %v", err, plain.Notify)
	}
}
