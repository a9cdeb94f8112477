package skill

import (
	"path/filepath"
	"reflect"
	"testing"

	"corral.dev/corral/policyengine"
)

var testVars = Variables{WorkDir: "/ws", DataDir: "/data", Home: "/home/u", TmpDir: "/tmp"}

func loadShared(t *testing.T, names ...string) []*Skill {
	t.Helper()
	var out []*Skill
	for _, n := range names {
		s, err := Load(filepath.Join(sharedSkills, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func mustMerge(t *testing.T, skills []*Skill) policyengine.Permissions {
	t.Helper()
	p, err := Merge(skills, testVars)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMergeExpandsVariables(t *testing.T) {
	skills := loadShared(t, "python-data")
	p := mustMerge(t, skills)
	dir := skills[0].Dir
	wantRead := []string{"/ws/data/**", dir + "/**"}
	if got := policyengine.Values(p.Read); !sameSet(got, wantRead) {
		t.Errorf("read = %v, want %v", got, wantRead)
	}
	wantWrite := []string{"/data/python-data/**", "/ws/out/**"}
	if got := policyengine.Values(p.Write); !reflect.DeepEqual(got, wantWrite) {
		t.Errorf("write = %v, want %v", got, wantWrite)
	}
	if p.Limits.Memory.Value != 256<<20 || p.Limits.Pids.Value != 64 {
		t.Errorf("limits = %+v", p.Limits)
	}
	if !p.ExecRestricted() || p.IsDefault() {
		t.Errorf("exec restricted %v, default %v", p.ExecRestricted(), p.IsDefault())
	}
}

func TestMergeIsCommutativeAndIdempotent(t *testing.T) {
	names := []string{"api-a", "api-b", "plain", "python-data", "repo-review", "web-fetch"}
	all := loadShared(t, names...)
	for i := range all {
		for j := range all {
			a, b := all[i:i+1], all[j:j+1]
			ab := mustMerge(t, append(append([]*Skill{}, a...), b...))
			ba := mustMerge(t, append(append([]*Skill{}, b...), a...))
			if !reflect.DeepEqual(ab, ba) {
				t.Errorf("merge(%s, %s) != merge(%s, %s)", names[i], names[j], names[j], names[i])
			}
			pa := mustMerge(t, a)
			if aa := pa.Merge(pa); !reflect.DeepEqual(aa, pa) {
				t.Errorf("merge(%s, %s) != %s", names[i], names[i], names[i])
			}
		}
	}
	// Associativity over the whole set: one fold equals another order.
	fwd := mustMerge(t, all)
	rev := make([]*Skill, len(all))
	for i, s := range all {
		rev[len(all)-1-i] = s
	}
	if !reflect.DeepEqual(fwd, mustMerge(t, rev)) {
		t.Error("merging all skills depends on order")
	}
}

func TestMergeUnionAndSources(t *testing.T) {
	p := mustMerge(t, loadShared(t, "api-a", "api-b", "web-fetch"))
	want := []policyengine.Entry{
		{Value: "curl", From: []string{"api-a", "web-fetch"}},
		{Value: "python3", From: []string{"api-b"}},
		{Value: "sh", From: []string{"web-fetch"}},
	}
	if !reflect.DeepEqual(p.Exec, want) {
		t.Errorf("exec = %+v, want %+v", p.Exec, want)
	}
	if got := policyengine.Values(p.Network); !reflect.DeepEqual(got, []string{"*:443", "*:80", "api.a.com:443", "api.b.com:443"}) {
		t.Errorf("network = %v", got)
	}
}

func TestMergeLimitsTakeMaximum(t *testing.T) {
	a := &Skill{Name: "a", Permissions: &Permissions{Limits: Limits{Memory: 256 << 20, Pids: 10}}}
	b := &Skill{Name: "b", Permissions: &Permissions{Limits: Limits{Memory: 128 << 20, Pids: 10}}}
	p := mustMerge(t, []*Skill{a, b})
	if p.Limits.Memory.Value != 256<<20 || !reflect.DeepEqual(p.Limits.Memory.From, []string{"a"}) {
		t.Errorf("memory = %+v", p.Limits.Memory)
	}
	if !reflect.DeepEqual(p.Limits.Pids.From, []string{"a", "b"}) {
		t.Errorf("pids = %+v", p.Limits.Pids)
	}
}

func TestNoPermissionsIsDefault(t *testing.T) {
	p := mustMerge(t, loadShared(t, "plain"))
	if !p.IsDefault() || p.ExecRestricted() {
		t.Errorf("plain: default %v, exec restricted %v", p.IsDefault(), p.ExecRestricted())
	}
	if !mustMerge(t, nil).IsDefault() {
		t.Error("no skills is not the default sandbox")
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
