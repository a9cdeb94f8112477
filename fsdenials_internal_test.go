package corral

import (
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox/fsaudit"
	"corral.dev/corral/skill"
)

func TestFSDenialGrants(t *testing.T) {
	vars := skill.Variables{WorkDir: "/home/u/ws", Home: "/home/u"}
	for _, c := range []struct {
		blockers []string
		path     string
		access   string
		grant    string
	}{
		{[]string{"fs.read_file"}, "/etc/shadow", "read", `add "/etc/shadow" to permissions.fs.read`},
		{[]string{"fs.read_file"}, "/home/u/.ssh/id_rsa", "read", `add "$HOME/.ssh/id_rsa" to permissions.fs.read`},
		{[]string{"fs.read_dir"}, "/home/u", "list", `add "$HOME/**" to permissions.fs.read`},
		{[]string{"fs.write_file"}, "/home/u/ws/a", "write", `add "$WORK_DIR/a" to permissions.fs.write`},
		{[]string{"fs.make_reg"}, "/home/u/ws/out", "create", `add "$WORK_DIR/out/**" to permissions.fs.write`},
		{[]string{"fs.remove_file"}, "/home/u/ws", "delete", `add "$WORK_DIR/**" to permissions.fs.write`},
		{[]string{"fs.execute", "fs.read_file"}, "/usr/bin/id", "exec", `add "id" to permissions.exec`},
		{[]string{"fs.execute"}, "/opt/x/bin/tool", "exec", `add "/opt/x/bin/tool" to permissions.exec`},
		{[]string{"fs.read_file"}, "/home/uv/x", "read", `add "/home/uv/x" to permissions.fs.read`}, // not under /home/u
	} {
		got := fsDenials([]fsaudit.Denial{{Path: c.path, Blockers: c.blockers, Comm: "p"}}, vars)
		if len(got) != 1 || got[0].Access != c.access || got[0].Grant != c.grant || got[0].Source != "landlock" {
			t.Errorf("%v %s: got %+v, want %s / %s", c.blockers, c.path, got, c.access, c.grant)
		}
	}
	// Rights that are not about files are the proxy's and scoping's.
	if got := fsDenials([]fsaudit.Denial{{Path: "", Blockers: []string{"net.connect_tcp"}}}, vars); len(got) != 0 {
		t.Errorf("a network denial became %+v", got)
	}
}

func TestPreflightFSDenial(t *testing.T) {
	d := Denial{Decision: policyengine.Decision{Reason: `curl is not in the exec list of skills a; to allow it, add "curl" to permissions.exec`}}
	if got := preflightFSDenial("curl", d); got.Access != "exec" || got.Path != "curl" || got.Grant != `add "curl" to permissions.exec` || got.Source != "preflight" {
		t.Errorf("exec: %+v", got)
	}
	d.Reason = `not permitted: /usr/x is outside the fs.write globs of skills default sandbox; to allow it, add "/usr/x" to permissions.fs.write`
	if got := preflightFSDenial("sh", d); got.Access != "write" || got.Path != "/usr/x" || got.Grant != `add "/usr/x" to permissions.fs.write` {
		t.Errorf("redirection: %+v", got)
	}
}
