package sandbox

import (
	"testing"

	"corral.dev/corral/policyengine"
)

// TestFileAccess answers file questions from a plan built on fake facts:
// each answer names what in the plan decided.
func TestFileAccess(t *testing.T) {
	perms := policyengine.Permissions{
		Read: entries("/ws/**", "/srv/data/**"), Write: entries("/ws/**", "/tmp/job/**"),
		Declared: []string{"t"},
	}
	facts := fakeFacts([]string{"/ws", "/ws/.git", "/ws/.git/hooks", "/srv", "/srv/data", "/tmp/job", "/etc"},
		[]string{"/ws/.git/config", "/ws/a.txt", "/srv/data/d", "/etc/passwd", "/etc/hosts", "/etc/ld.so.cache"})
	facts.Files["/ws/.git/commondir"] = FileInfo{Real: "/ws/.git/commondir"} // probed: missing
	plan, err := BuildPlan(perms, Spec{WorkDir: "/ws", BestEffort: true}, facts)
	if err != nil {
		t.Fatal(err)
	}
	file := func(p string) HostPath { return HostPath{Path: p, Real: p, Exists: true} }
	missing := func(p string) HostPath { return HostPath{Path: p, Real: p} }
	tests := []struct {
		h       HostPath
		op      FileOp
		view    View
		allowed bool
		kind    string
	}{
		{file("/ws/a.txt"), OpWrite, ViewHost, true, "granted"},
		{missing("/ws/new.txt"), OpWrite, ViewHost, true, "granted"},
		{file("/ws/.git/config"), OpWrite, ViewHost, false, "protected"},
		{file("/ws/.git/config"), OpRead, ViewHost, true, "granted"},
		{missing("/ws/.git/hooks/pre-commit"), OpWrite, ViewHost, false, "protected"},
		{missing("/ws/.git/commondir"), OpWrite, ViewHost, false, "removed"},
		{missing("/ws/.zshrc"), OpWrite, ViewHost, false, "quarantined"},
		{missing("/ws/.vscode/tasks.json"), OpWrite, ViewHost, false, "quarantined"},
		{missing("/ws/.zshrc"), OpRead, ViewHost, true, "granted"},
		{file("/srv/data/d"), OpRead, ViewHost, true, "granted"},
		{file("/srv/data/d"), OpWrite, ViewHost, false, "read-only"},
		{file("/srv/other"), OpRead, ViewHost, false, "ungranted"},
		{missing("/tmp/x"), OpWrite, ViewHost, false, "private"},
		{missing("/tmp/x"), OpWrite, ViewSandbox, true, "granted"},
		{missing("/tmp/job/out"), OpWrite, ViewHost, true, "granted"},
		{file("/proc/1/environ"), OpRead, ViewHost, false, "private"},
		{file("/run/docker.sock"), OpRead, ViewHost, false, "hidden"},
		{file("/etc/passwd"), OpRead, ViewHost, false, "replaced"},
		{file("/etc/passwd"), OpRead, ViewSandbox, true, "granted"},
		{file("/etc/ld.so.cache"), OpRead, ViewHost, true, "granted"},
		{file("/etc/ld.so.cache"), OpWrite, ViewHost, false, "read-only"},
		{missing("/ws/tool"), OpExec, ViewHost, false, "missing"},
		{HostPath{Path: "/ws/l", Real: "/srv/data/d", Exists: true, Links: []string{"/ws/l"}}, OpExec, ViewHost, true, "granted"},
		{HostPath{Path: "/srv/l/d", Real: "/srv/data/d", Exists: true, Links: []string{"/srv/l"}}, OpExec, ViewHost, false, "ungranted"},
		{HostPath{Path: "/srv/l/d", Real: "/srv/data/d", Exists: true, Links: []string{"/srv/l"}}, OpRead, ViewHost, true, "granted"},
		// A merged-/usr host: the plan makes /bin -> /usr/bin again, so
		// a program through it runs as exec runs it (issue 27, item 4).
		{HostPath{Path: "/bin/sh", Real: "/usr/bin/sh", Exists: true, Links: []string{"/bin"}}, OpExec, ViewHost, true, "granted"},
		{HostPath{Path: "/bin/sh", Real: "/usr/bin/sh", Exists: true, Links: []string{"/bin"}}, OpRead, ViewSandbox, true, "granted"},
	}
	for _, tt := range tests {
		a := plan.FileAccess(tt.h, tt.op, tt.view)
		if a.Allowed != tt.allowed || a.Kind != tt.kind {
			t.Errorf("%s %s (%s view) = %v, want %v %s", tt.op, tt.h.Path, tt.view, a, tt.allowed, tt.kind)
		}
		if !a.Allowed && a.Reason == "" {
			t.Errorf("%s %s: a deny without a reason", tt.op, tt.h.Path)
		}
	}
	// With an exec allowlist a write grant is noexec, and the programs in
	// /usr that it does not list cannot even be read.
	perms.Exec, perms.ExecDeclared = entries("sh"), []string{"t"}
	plan, err = BuildPlan(perms, Spec{WorkDir: "/ws", BestEffort: true}, fakeFacts([]string{"/ws"}, []string{"/ws/tool"}, "sh", "true"))
	if err != nil {
		t.Fatal(err)
	}
	if a := plan.FileAccess(file("/ws/tool"), OpExec, ViewHost); a.Allowed || a.Kind != "noexec" {
		t.Errorf("exec of a file in a write grant with an exec allowlist = %v, want noexec", a)
	}
	if a := plan.FileAccess(file("/usr/bin/true"), OpRead, ViewHost); a.Allowed || a.Kind != "landlock" {
		t.Errorf("read of a program the allowlist leaves out = %v, want landlock", a)
	}
	if a := plan.FileAccess(file("/usr/bin/sh"), OpExec, ViewHost); !a.Allowed {
		t.Errorf("exec of the allowed sh = %v", a)
	}
	binSh := HostPath{Path: "/bin/sh", Real: "/usr/bin/sh", Exists: true, Links: []string{"/bin"}}
	if a := plan.FileAccess(binSh, OpExec, ViewHost); !a.Allowed {
		t.Errorf("exec of the allowed sh through the /bin link = %v", a)
	}
	binTrue := HostPath{Path: "/bin/true", Real: "/usr/bin/true", Exists: true, Links: []string{"/bin"}}
	if a := plan.FileAccess(binTrue, OpExec, ViewHost); a.Allowed || a.Kind != "landlock" {
		t.Errorf("exec of true, which the allowlist leaves out, through the /bin link = %v, want landlock", a)
	}
}
