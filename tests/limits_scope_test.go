//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// userManager is the private socket of this user's systemd manager, or ""
// with the reason there is none.
func userManager() (sock, why string) {
	if isRoot {
		return "", "runs as an ordinary user with a systemd user manager (the VM matrix's user run); root's runs make their cgroup directly"
	}
	sock = fmt.Sprintf("/run/user/%d/systemd/private", os.Getuid())
	if _, err := os.Stat(sock); err != nil {
		return "", fmt.Sprintf("no systemd user manager for uid %d (%v)", os.Getuid(), err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		return "", "the host is not cgroup v2 only"
	}
	return sock, ""
}

// TestLimitUserScope: an ordinary user on a cgroup v2 host with systemd
// gets the default caps without flags, through a transient scope of their
// user manager, and the command cannot lift them: not by talking to the
// user manager or the system bus (even with the runtime folder granted for
// reading), not by writing its cgroup's files.
func TestLimitUserScope(t *testing.T) {
	t.Parallel()
	sock, why := userManager()
	if sock == "" {
		t.Skip(why)
	}
	requireSandbox(t)
	attack(t, "resources", "lift the user scope's memory cap through systemd or cgroupfs")
	runtime := filepath.Dir(filepath.Dir(sock))
	skills := t.TempDir()
	sk := writeSkill(t, skills, "runtime-reader", "  fs:\n    read: [\"$WORK_DIR/**\", \""+runtime+"/**\", \"/run/dbus/**\", \"/sys/fs/cgroup/**\"]\n")
	work := newDir(t, asSelf, "work")
	report := filepath.Join(t.TempDir(), "report.json")
	script := `
for s in ` + sock + ` ` + runtime + `/bus /run/dbus/system_bus_socket; do
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("CONNECTED", sys.argv[1])' "$s" 2>/dev/null
done
for f in memory.max memory.swap.max pids.max cgroup.procs; do
	echo max > /sys/fs/cgroup/$f 2>/dev/null && echo "WROTE $f"
done
echo ` + attackDone + `
python3 -c 'bytearray(600 << 20); print("ALLOCATED")'
`
	writeFile(t, filepath.Join(work, "attack.sh"), script, 0o644)
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", sk, "--report", report, "--", "sh", "attack.sh"}, dir: work})
	if !strings.Contains(r.stdout, attackDone) {
		t.Fatalf("the attack script did not run to its end:\n%s", r)
	}
	for _, bad := range []string{"CONNECTED", "WROTE", "ALLOCATED"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the command got past its scope (%s):\n%s", bad, r)
		}
	}
	if r.code != 137 {
		t.Errorf("exit %d, want 137 (the default 512 MiB cap):\n%s", r.code, r)
	}
	var rep struct {
		Cgroup    string `json:"cgroup"`
		OOMKilled bool   `json:"oom_killed"`
	}
	data, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("no report (%v):\n%s", err, data)
	}
	if want := fmt.Sprintf("/user@%d.service/", os.Getuid()); !strings.Contains(rep.Cgroup, want) || !strings.HasSuffix(rep.Cgroup, ".scope") {
		t.Errorf("the run's cgroup is %q, want a scope under %s", rep.Cgroup, want)
	}
	if !rep.OOMKilled {
		t.Errorf("the report does not say the command was OOM-killed: %s", data)
	}
}

// TestNetworkServiceSocketsUnderRun: a skill that grants a folder inside
// /run (where the systemd managers, D-Bus and container engines keep their
// sockets) does not get it: connecting to a UNIX socket needs nothing a
// read-only mount or Landlock refuses, and those sockets start programs
// outside the sandbox. Directly, through a symlink in the work dir, and as
// check answers it.
func TestNetworkServiceSocketsUnderRun(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "network", "connect to a host service's UNIX socket inside a granted folder of /run")
		dir, err := os.MkdirTemp("/run", "corral-e2e-svc-")
		if err != nil {
			t.Skipf("cannot make a folder in /run to hold a service socket: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o755)
		sock := filepath.Join(dir, "private")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		os.Chmod(sock, 0o777)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("SERVICE-ANSWERED\n"))
				c.Close()
			}
		}()
		work := newDir(t, u, "work")
		if err := os.Symlink(dir, filepath.Join(work, "svc")); err != nil {
			t.Fatal(err)
		}
		skills := newDir(t, u, "skills")
		sk := writeSkill(t, skills, "run-reader", "  fs:\n    read: [\"$WORK_DIR/**\", \""+dir+"/**\"]\n")
		r := runScript(t, u, work, []string{sk}, `
for s in `+sock+` svc/private; do
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("CONNECTED", sys.argv[1], s.recv(100))' "$s" 2>/dev/null
done`)
		if strings.Contains(r.stdout, "CONNECTED") || strings.Contains(r.stdout, "SERVICE-ANSWERED") {
			t.Errorf("the command reached a service socket in /run:\n%s", r)
		}
		e := u.run(t, runOpts{args: []string{"explain", "--work-dir", work, "--skill", sk}, dir: work})
		if !strings.Contains(e.output(), "holds the host's service sockets") {
			t.Errorf("explain does not say the grant inside /run was dropped:\n%s", e)
		}
		c := u.run(t, runOpts{args: []string{"check", "--work-dir", work, "--skill", sk, "read", sock}, dir: work})
		if c.code == 0 || !strings.Contains(c.output(), "service sockets") {
			t.Errorf("check read %s: exit %d, want a denial naming the service sockets:\n%s", sock, c.code, c)
		}
	})
}
