package skill

import (
	"reflect"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

const budgetSkill = `---
name: x
description: d
permissions:
  network:
    allow: ["api.example.com:443"]
    budget:
      each: {requests: 100, sent: 10m}
      hosts:
        "API.example.com.:443": {requests: 20, sent: 1.5m}
        "*.example.org:*": {sent: 64k}
      total: {sent: 1000}
---
`

func TestBudgetDecode(t *testing.T) {
	s, err := Load(writeSkill(t, budgetSkill))
	if err != nil {
		t.Fatal(err)
	}
	p := mustMerge(t, []*Skill{s})
	want := []policyengine.Budget{{
		From:  "x",
		Each:  policyengine.Cap{Requests: 100, Sent: 10 << 20},
		Total: policyengine.Cap{Sent: 1000},
		Hosts: []policyengine.HostCap{
			{Pattern: "*.example.org:*", Cap: policyengine.Cap{Sent: 64 << 10}},
			{Pattern: "api.example.com:443", Cap: policyengine.Cap{Requests: 20, Sent: 3 << 19}},
		},
	}}
	if !reflect.DeepEqual(p.Budgets, want) {
		t.Errorf("budgets %+v, want %+v", p.Budgets, want)
	}
}

func TestBudgetErrors(t *testing.T) {
	for _, tt := range []struct{ budget, want string }{
		{"each: {requests: 0}", ":7: permissions.network.budget.each.requests: 0 is out of range"},
		{"each: {requests: many}", "permissions.network.budget.each.requests: must be a whole number"},
		{"each: {sent: -5}", "permissions.network.budget.each.sent: \"-5\" is not a size"},
		{"each: {sent: 10q}", "permissions.network.budget.each.sent"},
		{"each: {}", "permissions.network.budget.each: caps nothing"},
		{"each: {bytes: 5}", "permissions.network.budget.each.bytes: unknown field"},
		{"total: 5", "permissions.network.budget.total: must be a mapping"},
		{"hosts: [a]", "permissions.network.budget.hosts: must be a mapping of host patterns"},
		{"hosts: {nope: {requests: 1}}", "permissions.network.budget.hosts.nope: host pattern \"nope\": missing port"},
		{"hosts: {'a.com:1': {requests: 1}, 'A.com:1': {requests: 2}}", "defined twice (as a.com:1)"},
		{"per_host: {requests: 1}", "permissions.network.budget.per_host: unknown field (known fields here: each, hosts, total)"},
	} {
		text := "---\nname: x\ndescription: d\npermissions:\n  network:\n    budget:\n      " + tt.budget + "\n---\n"
		_, err := Load(writeSkill(t, text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.budget, err, tt.want)
		}
	}
}

// Budgets merge by keeping every skill's: a larger budget in one skill
// never lifts another's cap, and the merge stays commutative and
// idempotent.
func TestMergeKeepsEveryBudget(t *testing.T) {
	a := &Skill{Name: "a", Permissions: &Permissions{Budget: policyengine.Budget{Each: policyengine.Cap{Sent: 1 << 20}}}}
	b := &Skill{Name: "b", Permissions: &Permissions{Budget: policyengine.Budget{Each: policyengine.Cap{Sent: 1 << 30}, Total: policyengine.Cap{Requests: 5}}}}
	c := &Skill{Name: "c", Permissions: &Permissions{}}
	ab, ba := mustMerge(t, []*Skill{a, b, c}), mustMerge(t, []*Skill{c, b, a})
	if !reflect.DeepEqual(ab, ba) {
		t.Fatalf("merge depends on order: %+v vs %+v", ab.Budgets, ba.Budgets)
	}
	if len(ab.Budgets) != 2 || ab.Budgets[0].From != "a" || ab.Budgets[0].Each.Sent != 1<<20 || ab.Budgets[1].From != "b" {
		t.Fatalf("budgets %+v, want a's and b's, each as declared", ab.Budgets)
	}
	if again := ab.Merge(ab); !reflect.DeepEqual(again, ab) {
		t.Errorf("merge is not idempotent: %+v", again.Budgets)
	}
	if n := mustMerge(t, []*Skill{c}).Budgets; n != nil {
		t.Errorf("a skill without a budget adds %+v", n)
	}
}
