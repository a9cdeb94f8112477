package sandbox

import (
	"slices"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// homePlan builds the plan of a run whose write grants are writes, with
// the home folder /h holding .bashrc, .config/fish, .ssh/id_rsa and a
// symlinked .zshrc (to dotfiles/zshrc).
func homePlan(t *testing.T, keep []string, writes ...string) *Plan {
	t.Helper()
	return homePlanOf(t, keep, entries(writes...))
}

// homePlanOf is homePlan with the write entries in the order given.
func homePlanOf(t *testing.T, keep []string, writes []policyengine.Entry) *Plan {
	t.Helper()
	perms := policyengine.Permissions{Write: writes, Declared: []string{"t"}}
	facts := fakeFacts([]string{"/h", "/h/.config", "/h/.config/fish", "/h/.ssh", "/h/dotfiles", "/h/repo", "/h/repo/skills/s"},
		[]string{"/h/.bashrc", "/h/.npmrc", "/h/.ssh/config", "/h/dotfiles/zshrc", "/h/repo/pol.yaml", "/h/repo/SKILL.md"}, "true")
	facts.Files["/h/.zshrc"] = FileInfo{Exists: true, Real: "/h/dotfiles/zshrc", Links: []string{"/h/.zshrc"}}
	facts.Home = "/h"
	facts.SSHSecrets = []string{"/h/.ssh/id_rsa"}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/h", Home: "/h", Keep: keep}, facts)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func boundReadOnly(p *Plan, target string) bool {
	m, ok := findMount(p, MountBind, target)
	return ok && m.ReadOnly
}

func quarantined(p *Plan, path string) bool {
	return slices.ContainsFunc(p.Quarantine, func(q Quarantine) bool { return q.Path == path })
}

func TestPlanHomeProtected(t *testing.T) {
	plan := homePlan(t, nil, "/h/**")
	for _, p := range []string{"/h/.bashrc", "/h/.npmrc", "/h/.config/fish", "/h/.ssh", "/h/dotfiles/zshrc"} {
		if !boundReadOnly(plan, p) {
			t.Errorf("%s is not bound read-only", p)
		}
	}
	if m, ok := findMount(plan, MountBind, "/h/.config"); !ok || m.ReadOnly {
		t.Errorf("/h/.config should be pinned (a writable bind onto itself): %+v %v", m, ok)
	}
	for _, p := range []string{"/h/.zlogin", "/h/.config/systemd", "/h/.local/bin", "/h/bin", "/h/.vscode"} {
		if !quarantined(plan, p) {
			t.Errorf("%s (missing) is not planned for quarantine", p)
		}
	}
	if !slices.ContainsFunc(plan.Quarantine, func(q Quarantine) bool { return q.Path == "/h/.zshrc" && q.Real == "/h/dotfiles/zshrc" }) {
		t.Errorf("the symlinked .zshrc is not checked after the run: %+v", plan.Quarantine)
	}
	if m, ok := findMount(plan, MountBind, "/h/.ssh/id_rsa"); !ok || m.Source != "/dev/null" || !m.ReadOnly {
		t.Errorf("the ssh key is not masked: %+v", m)
	}
	if len(plan.Alerts) != 1 {
		t.Errorf("want one alert about the writable home folder, got %q", plan.Alerts)
	}
	// The mask goes on top of the read-only .ssh.
	ssh, key := -1, -1
	for i, m := range plan.Mounts {
		switch m.Target {
		case "/h/.ssh":
			ssh = i
		case "/h/.ssh/id_rsa":
			key = i
		}
	}
	if key < ssh {
		t.Errorf("the key mask (%d) comes before the .ssh bind (%d)", key, ssh)
	}
}

func TestPlanHomeNamedExactly(t *testing.T) {
	plan := homePlan(t, nil, "/h/**", "/h/.npmrc", "/h/.config/fish/**", "/h/.ssh/**")
	for _, p := range []string{"/h/.npmrc", "/h/.config/fish"} {
		if boundReadOnly(plan, p) {
			t.Errorf("%s is named by a grant but bound read-only", p)
		}
	}
	if !boundReadOnly(plan, "/h/.bashrc") {
		t.Error("/h/.bashrc is not protected")
	}
	if _, ok := findMount(plan, MountBind, "/h/.ssh/id_rsa"); ok {
		t.Error("a grant of ~/.ssh itself should show the keys")
	}
}

func TestPlanHomeOutsideRoots(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/w/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/w", "/h"}, []string{"/h/.bashrc"}, "true")
	facts.Home = "/h"
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/w", Home: "/h"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range plan.Quarantine {
		if isUnder(q.Path, "/h") {
			t.Errorf("%s is outside every writable root, nothing to quarantine", q.Path)
		}
	}
	if len(plan.Alerts) != 0 {
		t.Errorf("no alert wanted: %q", plan.Alerts)
	}
}

func TestPlanKeepsSkillsAndPolicies(t *testing.T) {
	plan := homePlan(t, []string{"/h/repo/skills/s", "/h/repo/pol.yaml", "/h/repo", "/h/repo/global.yaml"}, "/h/repo/**")
	for _, p := range []string{"/h/repo/skills/s", "/h/repo/pol.yaml", "/h/repo/SKILL.md"} {
		if !boundReadOnly(plan, p) {
			t.Errorf("%s is not bound read-only", p)
		}
	}
	if boundReadOnly(plan, "/h/repo") {
		t.Error("a skill folder that is the writable root itself must not make the root read-only")
	}
	if !quarantined(plan, "/h/repo/global.yaml") {
		t.Error("a missing policy file inside the root is not planned for quarantine")
	}
	// A grant naming a kept path does not lift it.
	plan = homePlan(t, []string{"/h/repo/skills/s"}, "/h/repo/**", "/h/repo/skills/s/**")
	if !boundReadOnly(plan, "/h/repo/skills/s") {
		t.Error("a skill folder named by a grant must stay read-only")
	}
}

func TestProtectedPathsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range policyengine.ProtectedPaths {
		key := e.Path
		if e.Home {
			key = "~/" + key
		}
		if seen[key] || e.Path == "" || e.Path[0] == '/' || e.Why == "" {
			t.Errorf("bad or repeated entry %+v", e)
		}
		seen[key] = true
	}
}

// TestPlanHomeLinkedFolder: ~/.config is a symlink to a dotfiles folder
// (stow): what it holds is protected where it leads, a missing entry is
// quarantined there, and the link itself is checked after the run.
func TestPlanHomeLinkedFolder(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/h/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/h", "/h/dot", "/h/dot/config", "/h/dot/config/fish"}, nil, "true")
	facts.Files["/h/.config"] = FileInfo{Exists: true, Dir: true, Real: "/h/dot/config", Links: []string{"/h/.config"}}
	facts.Files["/h/.config/fish"] = FileInfo{Exists: true, Dir: true, Real: "/h/dot/config/fish", Links: []string{"/h/.config"}}
	facts.Home = "/h"
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/h", Home: "/h"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	if !boundReadOnly(plan, "/h/dot/config/fish") {
		t.Error("the folder ~/.config/fish leads to is not read-only")
	}
	if !quarantined(plan, "/h/dot/config/systemd") {
		t.Errorf("~/.config/systemd is not planned where it leads: %+v", plan.Quarantine)
	}
	if !slices.ContainsFunc(plan.Quarantine, func(q Quarantine) bool { return q.Path == "/h/.config" && q.Real == "/h/dot/config" }) {
		t.Errorf("the ~/.config link is not checked after the run: %+v", plan.Quarantine)
	}
}

// TestPlanPinsBeforeReadOnly: a folder pinned for one root (~/.config
// for the home) is bound before the read-only binds of every root, so it
// cannot cover one made for another root (~/.config/**) listed first.
func TestPlanPinsBeforeReadOnly(t *testing.T) {
	plan := homePlanOf(t, nil, []policyengine.Entry{{Value: "/h/.config/**"}, {Value: "/h/**"}})
	pin, fish := -1, -1
	for i, m := range plan.Mounts {
		switch {
		case m.Target == "/h/.config" && !m.ReadOnly && strings.Contains(m.Why, "pinned"):
			pin = i
		case m.Target == "/h/.config/fish" && m.ReadOnly:
			fish = i
		}
	}
	if pin < 0 || fish < pin {
		t.Errorf("the pin of /h/.config (%d) must come before the read-only /h/.config/fish (%d)", pin, fish)
	}
}
