package agentpolicy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"corral.dev/corral/policyengine"
)

const capSource = "policy " + projectLabel

// skillPerms is a skill's merged permissions: every list from skill "s".
type skillPerms struct {
	read, write, network, exec, env []string
}

func (s skillPerms) build() policyengine.Permissions {
	p := policyengine.Permissions{
		Read:     policyengine.NewEntries("s", s.read),
		Write:    policyengine.NewEntries("s", s.write),
		Network:  policyengine.NewEntries("s", s.network),
		Exec:     policyengine.NewEntries("s", s.exec),
		Env:      policyengine.NewEntries("s", s.env),
		Declared: []string{"s"},
	}
	if s.exec != nil {
		p.ExecDeclared = []string{"s"}
	}
	return p
}

// wantValues compares a list's values, in any order.
func wantValues(t *testing.T, what string, got []policyengine.Entry, want []string) {
	t.Helper()
	g := slices.Sorted(slices.Values(policyengine.Values(got)))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s: %q, want %q", what, g, w)
	}
}

// wantNotes checks that each want is a substring of some note, and that
// there are exactly len(want) notes.
func wantNotes(t *testing.T, what string, notes, want []string) {
	t.Helper()
	if len(notes) != len(want) {
		t.Errorf("%s: notes %q, want %d like %q", what, notes, len(want), want)
		return
	}
	for _, w := range want {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, w) }) {
			t.Errorf("%s: no note contains %q in %q", what, w, notes)
		}
	}
}

// TestNarrowFS: fs entries inside a cap stay, wider ones become the cap,
// disjoint ones go; globs whose containment cannot be told go too. Read
// entries are narrowed against the read and write caps, write entries
// against the write caps; a skill's write entries count as reads.
func TestNarrowFS(t *testing.T) {
	e := project(t, "caps:\n  fs:\n    read: ['~/docs/**']\n    write: ['$WORK_DIR/**']\n")
	for _, tt := range []struct {
		name         string
		read, write  []string
		wantR, wantW []string
		notes        []string
	}{
		{"inside", []string{"/work/src/**", "/home/u/docs/a.md"}, []string{"/work/out/**"},
			[]string{"/work/src/**", "/home/u/docs/a.md", "/work/out/**"}, []string{"/work/out/**"}, nil},
		{"equal", []string{"/home/u/docs/**"}, []string{"/work/**"},
			[]string{"/home/u/docs/**", "/work/**"}, []string{"/work/**"}, nil},
		{"wider", []string{"/home/**"}, []string{"/work/**"},
			[]string{"/home/u/docs/**", "/work/**"}, []string{"/work/**"}, []string{"/home/** narrowed to /home/u/docs/** (" + capSource + ")"}},
		// A write grant implies read, so the written-to cap is readable too.
		{"wider write", nil, []string{"/**"},
			[]string{"/home/u/docs/**", "/work/**"}, []string{"/work/**"},
			[]string{"/** narrowed to /home/u/docs/**, /work/** (" + capSource + ")", "/** narrowed to /work/** (" + capSource + ")"}},
		{"disjoint", []string{"/opt/**", "/etc/hosts"}, []string{"/var/tmp/**"},
			nil, nil,
			[]string{"/opt/** dropped: outside the caps of " + capSource, "/etc/hosts dropped", "/var/tmp/** dropped", "/var/tmp/** dropped"}},
		{"pattern inside a subtree cap", []string{"/work/*/x", "/home/u/docs/*.md", "/work/**/*.go"}, nil,
			[]string{"/work/*/x", "/home/u/docs/*.md", "/work/**/*.go"}, nil, nil},
		{"write outside the write caps is still read", nil, []string{"/home/u/docs/**"},
			[]string{"/home/u/docs/**"}, nil, []string{"/home/u/docs/** dropped"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := e.Narrow(skillPerms{read: tt.read, write: tt.write}.build())
			wantValues(t, "read", got.Read, tt.wantR)
			wantValues(t, "write", got.Write, tt.wantW)
			wantNotes(t, "notes", notes, tt.notes)
		})
	}
}

// TestNarrowFSNonSubtree: where neither glob is a subtree, only a literal
// path inside the cap or the very same glob is kept.
func TestNarrowFSNonSubtree(t *testing.T) {
	e := project(t, "caps:\n  fs:\n    read: ['$WORK_DIR/*.md']\n")
	for _, tt := range []struct {
		read, want []string
		notes      []string
	}{
		{[]string{"/work/README.md", "/work/a.txt"}, []string{"/work/README.md"}, []string{"/work/a.txt dropped"}},
		{[]string{"/work/*.md"}, []string{"/work/*.md"}, nil},
		{[]string{"/work/doc*.md"}, nil, []string{"/work/doc*.md dropped"}},
		{[]string{"/work/**"}, []string{"/work/*.md"}, []string{"/work/** narrowed to /work/*.md"}},
		{[]string{"/**"}, []string{"/work/*.md"}, []string{"/** narrowed to /work/*.md"}},
		{[]string{"/work/*"}, nil, []string{"/work/* dropped"}},
	} {
		got, notes := e.Narrow(skillPerms{read: tt.read}.build())
		wantValues(t, strings.Join(tt.read, " "), got.Read, tt.want)
		wantNotes(t, strings.Join(tt.read, " "), notes, tt.notes)
	}
}

// TestNarrowFSSources: a narrowed entry records the skill and the policy.
func TestNarrowFSSources(t *testing.T) {
	e := project(t, "caps:\n  fs:\n    read: ['$WORK_DIR/**']\n")
	got, _ := e.Narrow(skillPerms{read: []string{"/**", "/work/a"}}.build())
	for _, x := range got.Read {
		want := []string{"s"}
		if x.Value == "/work/**" {
			want = []string{capSource, "s"} // sources are kept sorted, as Merge keeps them
		}
		if !slices.Equal(x.From, want) {
			t.Errorf("%s from %q, want %q", x.Value, x.From, want)
		}
	}
}

// TestNarrowNetwork: host patterns by Covers, presets included.
func TestNarrowNetwork(t *testing.T) {
	e := project(t, "caps:\n  network: ['*.example.com:443', 'api.other.net:443', 'preset:loopback:8080', '10.0.0.5:5432']\n")
	for _, tt := range []struct {
		skill, want []string
		notes       []string
	}{
		{[]string{"api.example.com:443", "a.b.example.com:443", "*.x.example.com:443"},
			[]string{"api.example.com:443", "a.b.example.com:443", "*.x.example.com:443"}, nil},
		{[]string{"*:443"}, []string{"*.example.com:443", "api.other.net:443"},
			[]string{"*:443 narrowed to *.example.com:443, api.other.net:443 (" + capSource + ")"}},
		{[]string{"*:*"}, []string{"*.example.com:443", "api.other.net:443"}, []string{"*:* narrowed to"}},
		{[]string{"api.example.com:*"}, nil, []string{"api.example.com:* dropped"}},
		{[]string{"api.other.net:*"}, []string{"api.other.net:443"}, []string{"api.other.net:* narrowed to api.other.net:443"}},
		{[]string{"example.com:443", "evil.net:443", "api.example.com:80"}, nil,
			[]string{"example.com:443 dropped", "evil.net:443 dropped: outside the network caps of " + capSource, "api.example.com:80 dropped"}},
		{[]string{"preset:loopback"}, []string{"preset:loopback:8080"}, []string{"preset:loopback narrowed to preset:loopback:8080"}},
		{[]string{"127.0.0.1:8080", "[::1]:8080", "10.0.0.5:5432"}, []string{"127.0.0.1:8080", "[::1]:8080", "10.0.0.5:5432"}, nil},
		{[]string{"preset:private_network:5432"}, []string{"10.0.0.5:5432"}, []string{"narrowed to 10.0.0.5:5432"}},
		{[]string{"127.0.0.1:443", "preset:cloud_metadata"}, nil, []string{"127.0.0.1:443 dropped", "preset:cloud_metadata dropped"}},
		{[]string{"*:443", "api.example.com:443"}, []string{"*.example.com:443", "api.other.net:443", "api.example.com:443"}, []string{"*:443 narrowed"}},
	} {
		got, notes := e.Narrow(skillPerms{network: tt.skill}.build())
		wantValues(t, strings.Join(tt.skill, " "), got.Network, tt.want)
		wantNotes(t, strings.Join(tt.skill, " "), notes, tt.notes)
	}
}

// TestNarrowExec: exec lists intersect; a cap alone restricts exec when no
// skill declared one; a skill list the cap empties runs nothing.
func TestNarrowExec(t *testing.T) {
	e := project(t, "caps:\n  exec: [git, ls]\n")

	got, notes := e.Narrow(skillPerms{exec: []string{"git", "curl"}}.build())
	wantValues(t, "intersected", got.Exec, []string{"git"})
	wantNotes(t, "intersected", notes, []string{"exec curl dropped: outside the caps of " + capSource})
	if !slices.Equal(got.ExecDeclared, []string{"s"}) {
		t.Errorf("ExecDeclared %q", got.ExecDeclared)
	}

	got, notes = e.Narrow(skillPerms{read: []string{"/work/**"}}.build())
	wantValues(t, "cap alone", got.Exec, []string{"git", "ls"})
	wantNotes(t, "cap alone", notes, []string{"exec: only git, ls (" + capSource + ")"})
	if !got.ExecRestricted() {
		t.Error("cap alone: exec not restricted")
	}
	eng, err := policyengine.New(got, policyengine.Options{WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	wantDecision(t, "cap alone: git", eng.CheckExec("git status"), policyengine.Allow, "-", "")
	wantDecision(t, "cap alone: curl", eng.CheckExec("curl x"), policyengine.Deny, "-", "")

	got, _ = e.Narrow(skillPerms{exec: []string{"curl"}}.build())
	if len(got.Exec) != 0 || !got.ExecRestricted() {
		t.Errorf("emptied: exec %q, restricted %v; want none and restricted", policyengine.Values(got.Exec), got.ExecRestricted())
	}
	eng, err = policyengine.New(got, policyengine.Options{WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	wantDecision(t, "emptied: git", eng.CheckExec("git status"), policyengine.Deny, "-", "")
}

// TestNarrowEnv: env names outside the caps go; the default variables
// always pass.
func TestNarrowEnv(t *testing.T) {
	e := project(t, "caps:\n  env: ['AWS_*', 'GITHUB_TOKEN']\n")
	got, notes := e.Narrow(skillPerms{env: []string{"AWS_REGION", "AWS_*", "GITHUB_TOKEN", "SECRET", "LC_ALL", "GITHUB_*"}}.build())
	wantValues(t, "env", got.Env, []string{"AWS_REGION", "AWS_*", "GITHUB_TOKEN", "LC_ALL"})
	wantNotes(t, "env", notes, []string{"env SECRET dropped: outside the caps of " + capSource, "env GITHUB_* dropped"})
}

// TestNarrowLimits: each limit becomes the smaller of skill and cap; an
// unset skill limit takes the cap.
func TestNarrowLimits(t *testing.T) {
	e := project(t, "caps:\n  limits: {memory: 512Mi, pids: 64, timeout: 10m}\n")
	for _, tt := range []struct {
		name     string
		mem      int64
		pids     int
		timeout  time.Duration
		wMem     int64
		wPids    int
		wTimeout time.Duration
		fromCap  bool
	}{
		{"unset", 0, 0, 0, 512 << 20, 64, 10 * time.Minute, true},
		{"larger", 1 << 30, 1000, time.Hour, 512 << 20, 64, 10 * time.Minute, true},
		{"smaller", 256 << 20, 10, time.Minute, 256 << 20, 10, time.Minute, false},
	} {
		p := skillPerms{}.build()
		p.Limits.Memory = policyengine.Limit[int64]{Value: tt.mem, From: []string{"s"}}
		p.Limits.Pids = policyengine.Limit[int]{Value: tt.pids, From: []string{"s"}}
		p.Limits.Timeout = policyengine.Limit[time.Duration]{Value: tt.timeout, From: []string{"s"}}
		got, _ := e.Narrow(p)
		l := got.Limits
		if l.Memory.Value != tt.wMem || l.Pids.Value != tt.wPids || l.Timeout.Value != tt.wTimeout {
			t.Errorf("%s: %d %d %s, want %d %d %s", tt.name, l.Memory.Value, l.Pids.Value, l.Timeout.Value, tt.wMem, tt.wPids, tt.wTimeout)
		}
		wantFrom := []string{"s"}
		if tt.fromCap {
			wantFrom = []string{capSource}
		}
		for what, from := range map[string][]string{"memory": l.Memory.From, "pids": l.Pids.From, "timeout": l.Timeout.From} {
			if !slices.Equal(from, wantFrom) {
				t.Errorf("%s: %s from %q, want %q", tt.name, what, from, wantFrom)
			}
		}
	}
}

// TestNarrowLayers: every layer narrows in turn; the smallest limit wins.
func TestNarrowLayers(t *testing.T) {
	e := evaluator(t, nil,
		Layer{Name: "global", Source: "g.yaml", Policy: mustParse(t, "caps:\n  fs: {read: ['/work/**']}\n  limits: {pids: 10, memory: 1Gi}\n")},
		Layer{Name: "project", Source: "p.yaml", Policy: mustParse(t, "caps:\n  fs: {read: ['/work/src/**']}\n  limits: {pids: 20, memory: 256Mi}\n")},
	)
	got, notes := e.Narrow(skillPerms{read: []string{"/**"}}.build())
	wantValues(t, "read", got.Read, []string{"/work/src/**"})
	wantNotes(t, "notes", notes, []string{"/** narrowed to /work/** (policy global (g.yaml))", "/work/** narrowed to /work/src/** (" + capSource + ")"})
	if got.Limits.Pids.Value != 10 || got.Limits.Memory.Value != 256<<20 {
		t.Errorf("limits: pids %d, memory %d", got.Limits.Pids.Value, got.Limits.Memory.Value)
	}
}

// TestNarrowNoCaps: without caps, or with caps on other dimensions, the
// permissions come back unchanged and no note is made.
func TestNarrowNoCaps(t *testing.T) {
	in := skillPerms{read: []string{"/**"}, write: []string{"/work/**"}, network: []string{"*:443"}, exec: []string{"curl"}, env: []string{"SECRET"}}
	for _, src := range []string{"version: 1\n", "caps: {}\n", "url: {default: allow}\n"} {
		got, notes := project(t, src).Narrow(in.build())
		for what, pair := range map[string][2][]policyengine.Entry{
			"read": {got.Read, in.build().Read}, "write": {got.Write, in.build().Write}, "network": {got.Network, in.build().Network},
			"exec": {got.Exec, in.build().Exec}, "env": {got.Env, in.build().Env},
		} {
			wantValues(t, src+what, pair[0], policyengine.Values(pair[1]))
		}
		wantNotes(t, src, notes, nil)
	}
}

// TestNarrowIdempotent: narrowing what was narrowed changes nothing more
// (the read list may gain the write entries, which were readable anyway).
func TestNarrowIdempotent(t *testing.T) {
	e := project(t, capsPolicy+"  exec: [git]\n")
	once, _ := e.Narrow(skillPerms{read: []string{"/**"}, write: []string{"/**"}, network: []string{"*:*"}, env: []string{"AWS_X", "SECRET"}}.build())
	twice, notes := e.Narrow(once)
	wantNotes(t, "second narrowing", notes, nil)
	readable := func(p policyengine.Permissions) []string {
		return slices.Compact(slices.Sorted(slices.Values(append(policyengine.Values(p.Read), policyengine.Values(p.Write)...))))
	}
	if a, b := readable(once), readable(twice); !slices.Equal(a, b) {
		t.Errorf("readable: %q, then %q", a, b)
	}
	for what, pair := range map[string][2][]policyengine.Entry{
		"write": {once.Write, twice.Write}, "network": {once.Network, twice.Network},
		"exec": {once.Exec, twice.Exec}, "env": {once.Env, twice.Env},
	} {
		wantValues(t, what, pair[1], policyengine.Values(pair[0]))
	}
}

// TestNarrowSeveralCaps guards a fixed bug: narrowGlobs stops at the first cap
// that relates to the entry, in the caps' order, so
//
//   - an entry wider than several caps is narrowed to the first only: a
//     skill asking for "/**" under caps ["$WORK_DIR/**", "~/docs/**"]
//     loses ~/docs (the network dimension keeps every narrower cap);
//   - an entry inside a later cap is narrowed to an earlier, smaller one:
//     "$WORK_DIR/**" under read caps ["$WORK_DIR/*.md"] and write caps
//     ["$WORK_DIR/**"] becomes "$WORK_DIR/*.md".
func TestNarrowSeveralCaps(t *testing.T) {
	e := project(t, "caps:\n  fs:\n    read: ['$WORK_DIR/**', '~/docs/**']\n")
	got, _ := e.Narrow(skillPerms{read: []string{"/**"}}.build())
	wantValues(t, "wider than two caps", got.Read, []string{"/work/**", "/home/u/docs/**"})

	e = project(t, "caps:\n  fs:\n    read: ['$WORK_DIR/*.md']\n    write: ['$WORK_DIR/**']\n")
	got, notes := e.Narrow(skillPerms{read: []string{"/work/**"}}.build())
	wantValues(t, "inside the second cap", got.Read, []string{"/work/**"})
	wantNotes(t, "inside the second cap", notes, nil)
}

// TestNarrowKeepsInvariants guards a fixed bug: Narrow's fs lists break the
// invariants Permissions documents ("every list is sorted by Value and
// holds each value once"): a narrowed entry lands beside the same value,
// the list is in input order, and merging read with write repeats a
// source in From. Merge, which walks sorted lists, then goes wrong.
func TestNarrowKeepsInvariants(t *testing.T) {
	e := project(t, "caps:\n  fs:\n    read: ['$WORK_DIR/**', '~/docs/**']\n    write: ['$WORK_DIR/out/**']\n")
	got, _ := e.Narrow(skillPerms{read: []string{"/**", "/home/u/docs/**", "/work/**", "/work/src/*.go"}, write: []string{"/work/**", "/work/out/a"}}.build())
	for what, list := range map[string][]policyengine.Entry{"read": got.Read, "write": got.Write} {
		values := policyengine.Values(list)
		if !slices.IsSorted(values) || len(slices.Compact(slices.Clone(values))) != len(values) {
			t.Errorf("%s: %q is not sorted and unique", what, values)
		}
		for _, x := range list {
			if len(slices.Compact(slices.Sorted(slices.Values(x.From)))) != len(x.From) {
				t.Errorf("%s: %s from %q repeats a source", what, x.Value, x.From)
			}
		}
	}
}
