//go:build linux

package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The landlock tier (no namespaces) faces the attacks of the issue that
// made it, three ways: forced with --tier landlock, and chosen by auto
// where a user namespace is refused: by a seccomp filter as Docker's
// default profile refuses them (tests/testdata/nouserns), and by the
// kernel (corral runs inside `unshare -U -r` with
// user.max_user_namespaces=0, as the reproduction does). Each attack counts in its own "tier-landlock/..." class.

type tierMode struct {
	name string
	// wrap returns the runOpts for corral args.
	wrap func(args []string) runOpts
}

var tierModes = []tierMode{
	{"forced", func(args []string) runOpts {
		return runOpts{args: append([]string{args[0], "--tier", "landlock"}, args[1:]...)}
	}},
	{"container", func(args []string) runOpts {
		return runOpts{bin: nousernsBin, args: append([]string{corralBin}, args...)}
	}},
	{"refused", func(args []string) runOpts {
		script := `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`
		bin, _ := exec.LookPath("unshare") // tierCase skips where it is missing
		return runOpts{bin: bin, args: append([]string{"-U", "-r", "sh", "-c", script, "sh", corralBin}, args...)}
	}},
}

// tierCase runs fn for each mode and user.
func tierCase(t *testing.T, fn func(t *testing.T, u user, m tierMode)) {
	t.Helper()
	requireKernel(t, landlockABI >= 6, fmt.Sprintf("the landlock tier needs Landlock ABI 6 (signal scoping), the kernel has %d", landlockABI))
	for _, m := range tierModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if m.name == "refused" {
				if _, err := exec.LookPath("unshare"); err != nil {
					t.Skip("unshare (util-linux) is not installed")
				}
				// unshare -U -r needs the user namespace the host may
				// refuse (the other modes cover that refusal).
				if !isRoot {
					requireKernel(t, userNSErr == "", userNSErr+" (unshare -U -r needs one)")
				}
			}
			users(t, func(t *testing.T, u user) { fn(t, u, m) })
		})
	}
}

// tierExec runs corral exec in mode m.
func tierExec(t *testing.T, u user, m tierMode, work string, skills []string, args ...string) result {
	t.Helper()
	a := []string{"exec", "--work-dir", work}
	for _, s := range skills {
		a = append(a, "--skill", s)
	}
	o := m.wrap(append(a, args...))
	o.dir, o.keepRefusal = work, true
	return u.run(t, o)
}

func tierScript(t *testing.T, u user, m tierMode, work string, skills []string, script string, flags ...string) result {
	t.Helper()
	writeFile(t, filepath.Join(work, "attack.sh"), script+"\necho "+attackDone+"\n", 0o644)
	own(t, u, filepath.Join(work, "attack.sh"))
	r := tierExec(t, u, m, work, skills, append(flags, "--", "sh", "attack.sh")...)
	if !strings.Contains(r.stdout, attackDone) {
		t.Fatalf("the attack script did not run to its end:\n%s", r)
	}
	if !strings.Contains(r.stderr, "landlock tier") {
		t.Fatalf("no word of the landlock tier on stderr:\n%s", r)
	}
	return r
}

// TestTierLandlockFiles: reads and writes outside the grants fail, by
// path, symlink, /proc/self/root and hard link.
func TestTierLandlockFiles(t *testing.T) {
	t.Parallel()
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/filesystem", "read and write outside the grants without namespaces")
		work, outside := newDir(t, u, "work"), newDir(t, u, "outside")
		secret := token("SECRET")
		writeFile(t, filepath.Join(outside, "secret"), secret, 0o644)
		os.Chmod(outside, 0o777)
		own(t, u, outside)
		probe := installProbe(t, work)
		sk := writeSkill(t, newDir(t, u, "skills"), "files", "  fs:\n    write: [\""+work+"/**\"]\n")
		r := tierScript(t, u, m, work, []string{sk}, fmt.Sprintf(`
%[1]s read %[2]s/secret
%[1]s read /proc/self/root%[2]s/secret
ln -s %[2]s/secret link; %[1]s read link
%[1]s link %[2]s/secret hard; %[1]s read hard
%[1]s write %[2]s/planted x
%[1]s write /etc/corral-planted x
%[1]s read %[3]s
%[1]s write %[4]s/inside ok
chmod 0777 %[2]s/secret; chmod 0700 %[2]s
chmod 0755 %[4]s/inside && echo CHMOD-INSIDE-OK
echo x > %[4]s/suid; chmod 4755 %[4]s/suid
ln -s %[2]s/secret %[4]s/outlink; chmod 0777 %[4]s/outlink
git init -q %[4]s/repo && echo GIT-INIT-OK
%[1]s setflags /usr/bin/true
mkdir -p %[4]s/ra %[4]s/rb && echo x > %[4]s/ra/f && %[1]s rename %[4]s/ra/f %[4]s/rb/f
`, probe, outside, "/root/.bashrc", work))
		noSecret(t, r, secret, "a file outside the grants")
		if exists(filepath.Join(outside, "planted")) || exists("/etc/corral-planted") {
			t.Fatalf("a write outside the grants landed:\n%s", r)
		}
		if got := readFile(t, filepath.Join(work, "inside")); got != "ok" {
			t.Fatalf("the granted write did not land (%q):\n%s", got, r)
		}
		// Landlock has no right for a file's mode: corral's supervisor
		// makes the mode changes inside the writable grants only, and
		// never a setuid, setgid or sticky bit.
		for p, want := range map[string]os.FileMode{filepath.Join(outside, "secret"): 0o644, outside: 0o777 | os.ModeDir,
			filepath.Join(work, "inside"): 0o755, filepath.Join(work, "suid"): 0o644} {
			if st, err := os.Stat(p); err != nil || st.Mode()&(os.ModePerm|os.ModeDir|os.ModeSetuid) != want {
				t.Fatalf("%s: mode %v (%v), want %v:\n%s", p, st.Mode(), err, want, r)
			}
		}
		if !strings.Contains(r.stdout, "OK rename") {
			t.Fatalf("moving a file between two folders of the work dir failed:\n%s", r)
		}
		if !strings.Contains(r.stdout, "ERR EPERM setflags") {
			t.Fatalf("file attribute flags could be set through a read-only fd:\n%s", r)
		}
		if !strings.Contains(r.stdout, "CHMOD-INSIDE-OK") || !strings.Contains(r.stdout, "GIT-INIT-OK") {
			t.Fatalf("a mode change inside the grants (git init makes some) failed:\n%s", r)
		}
	})
}

// TestTierLandlockChown: in this tier no owner or group changes. A chown
// to the command's own uid and gid is answered as done and not made, so
// tar -x and cp -a as root work; one to another uid or gid is refused; and
// the answered one changes nothing, not even the group of a file outside
// the grants that the command's uid owns.
func TestTierLandlockChown(t *testing.T) {
	t.Parallel()
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/filesystem", "change a file's owner or group without namespaces")
		work, outside := newDir(t, u, "work"), newDir(t, u, "outside")
		mine := filepath.Join(outside, "mine")
		writeFile(t, mine, "x", 0o644)
		own(t, u, mine)
		// Owned by the command's uid, in a group it is not in (where the
		// tests run as root; an ordinary user cannot give it one).
		os.Lchown(mine, uidOf(u), 100)
		var before unix.Stat_t
		if err := unix.Lstat(mine, &before); err != nil {
			t.Fatal(err)
		}
		sk := writeSkill(t, newDir(t, u, "skills"), "files", "  fs:\n    write: [\""+work+"/**\"]\n")
		r := tierScript(t, u, m, work, []string{sk}, fmt.Sprintf(`
cd %[1]s
echo x > f && chown "$(id -u):$(id -g)" f && echo CHOWN-SELF-OK
mkdir -p src/sub && echo y > src/sub/g && tar -cf a.tar src && mkdir out && tar -xpf a.tar -C out && echo TAR-OK
cp -a src copy && echo CP-OK
chown 12345 f 2>/dev/null || echo CHOWN-OTHER-REFUSED
chgrp 12345 f 2>/dev/null || echo CHGRP-OTHER-REFUSED
chgrp "$(id -g)" %[2]s; chown "$(id -u)" %[2]s
`, work, mine))
		for _, want := range []string{"CHOWN-SELF-OK", "TAR-OK", "CP-OK", "CHOWN-OTHER-REFUSED", "CHGRP-OTHER-REFUSED"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("no %s:\n%s", want, r)
			}
		}
		var st unix.Stat_t
		if err := unix.Lstat(mine, &st); err != nil || st.Uid != before.Uid || st.Gid != before.Gid {
			t.Errorf("the file outside the grants is now %d:%d (%v), want %d:%d as before:\n%s", st.Uid, st.Gid, err, before.Uid, before.Gid, r)
		}
		if err := unix.Lstat(filepath.Join(work, "f"), &st); err != nil || int(st.Uid) != uidOf(u) {
			t.Errorf("f is owned by %d (%v), want %d", st.Uid, err, uidOf(u))
		}
	})
}

// TestTierLandlockExec: a skill's exec list is refused in this tier
// (the dynamic loader can map any readable file), and run with
// --best-effort it still stops programs outside the list directly,
// through a shell and through the loader (system programs outside the
// list are not even readable).
func TestTierLandlockExec(t *testing.T) {
	t.Parallel()
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/exec", "run a program outside the exec list without namespaces")
		work := newDir(t, u, "work")
		sk := writeSkill(t, newDir(t, u, "skills"), "shonly", "  fs:\n    read: [\""+work+"/**\"]\n  exec: [sh]\n")
		r := tierExec(t, u, m, work, []string{sk}, "--", "sh", "-c", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "exec-allowlist") {
			t.Fatalf("an exec list in the landlock tier ran without --best-effort, or without naming why:\n%s", r)
		}
		ldso := "/lib64/ld-linux-x86-64.so.2"
		if _, err := os.Stat(ldso); err != nil {
			ldso = "/lib/ld-linux-aarch64.so.1"
		}
		r = tierScript(t, u, m, work, []string{sk}, fmt.Sprintf(`
/usr/bin/id && echo RAN-DIRECT
sh -c '/usr/bin/id' && echo RAN-SHELL
%s /usr/bin/id && echo RAN-LOADER
`, ldso), "--best-effort")
		for _, ran := range []string{"RAN-DIRECT", "RAN-SHELL", "RAN-LOADER"} {
			if strings.Contains(r.stdout, ran) {
				t.Fatalf("%s: a program outside the exec list ran:\n%s", ran, r)
			}
		}
	})
}

// TestTierLandlockNetwork: an allowed host is fetched through the proxy,
// a denied one gets 403, and nothing else leaves: not the proxy's port on
// another loopback address, not another port, not UDP, not a host UNIX
// socket, not a listening socket.
func TestTierLandlockNetwork(t *testing.T) {
	t.Parallel()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/network", "reach a host outside network.allow without namespaces")
		work := newDir(t, u, "work")
		probe := installProbe(t, work)
		tcp := listenSink(t, "tcp4", "127.0.0.1:0")
		udp := listenSink(t, "udp4", "127.0.0.1:0")
		sockDir := newDir(t, u, "sock")
		unixSink := listenSink(t, "unix", filepath.Join(sockDir, "agent.sock"))
		dgramSink := listenSink(t, "unixgram", filepath.Join(sockDir, "log.sock"))
		sk := writeSkill(t, newDir(t, u, "skills"), "web", fmt.Sprintf("  fs:\n    read: [\"%s/**\", \"%s/**\"]\n  network:\n    allow: [\"ok.test:%d\", \"preset:loopback:%d\"]\n", work, sockDir, port, port))
		r := tierScript(t, u, m, work, []string{sk}, fmt.Sprintf(`
echo "allowed=$(curl -s -w ' %%{http_code}' http://ok.test:%[2]d/)"
echo "denied=$(curl -s -o /dev/null -w '%%{http_code}' http://no.test:1/)"
p=${HTTP_PROXY##*:}
%[1]s tcp 127.0.0.2:$p
%[1]s tcp [::1]:$p
%[1]s tcp %[3]s
%[1]s udp %[4]s
%[1]s connect-unix %[5]s
%[1]s listen-tcp 127.0.0.1
%[1]s bind-tcp 127.0.0.1:0
%[1]s fastopen %[3]s
%[1]s seccomp-listener
%[1]s dgram-pair %[6]s
%[1]s tcp 127.0.0.1:$p && echo PROXY-PORT-OK
`, probe, port, tcp.addr, udp.addr, unixSink.addr, dgramSink.addr), "--resolve", "ok.test=127.0.0.1", "--resolve", "no.test=127.0.0.1")
		if !strings.Contains(r.stdout, "allowed=hello 200") || !strings.Contains(r.stdout, "denied=403") {
			t.Fatalf("the proxy did not fetch the allowed host, or did not refuse the other:\n%s", r)
		}
		if n := strings.Count(r.stdout, "\nOK "); strings.HasPrefix(r.stdout, "OK ") || n != 1 || !strings.Contains(r.stdout, "PROXY-PORT-OK") {
			t.Fatalf("a direct connection worked (only the proxy's address may):\n%s", r)
		}
		for _, want := range []string{"ERR EACCES tcp 127.0.0.2", "ERR EACCES tcp " + tcp.addr, "ERR EPERM udp", "ERR EPERM connect " + unixSink.addr, "ERR EPERM listen without bind", "ERR EPERM bind 127.0.0.1:0", "ERR EPERM fastopen", "ERR EPERM seccomp filter with a listener", "ERR EPERM socketpair"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("want %q:\n%s", want, r)
			}
		}
		for _, s := range []*sink{tcp, udp, unixSink, dgramSink} {
			if n := s.sandboxArrivals(t, 0); n != 0 {
				t.Fatalf("%d probe(s) reached %s %s", n, s.network, s.addr)
			}
		}
	})
}

// TestTierLandlockProcesses: the report names the tier, the command
// cannot signal the host's processes, and what it double-forks does not
// outlive the run.
func TestTierLandlockProcesses(t *testing.T) {
	t.Parallel()
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/processes", "signal the host or outlive the run without namespaces")
		work := newDir(t, u, "work")
		probe := installProbe(t, work)
		host := u.command(t.Context(), runOpts{bin: "/bin/sleep", args: []string{"300"}})
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { host.Process.Kill(); host.Wait() })
		marker := token("tiermark")
		report := filepath.Join(newDir(t, u, "report"), "r.json")
		own(t, u, filepath.Dir(report))
		r := tierScript(t, u, m, work, nil, fmt.Sprintf(`
kill -0 %[1]d && echo SIGNALLED-HOST
kill -STOP $PPID && echo STOPPED-INIT && kill -CONT $PPID
%[2]s ptrace %[1]d
%[2]s process-vm-readv %[1]d
%[2]s caps
%[2]s daemon %[3]s
`, host.Process.Pid, probe, marker), "--report", report)
		if strings.Contains(r.stdout, "SIGNALLED-HOST") || strings.Contains(r.stdout, "STOPPED-INIT") {
			t.Fatalf("the command signalled a host process or the init (which then forwards and kills nothing):\n%s", r)
		}
		for _, want := range []string{"ERR EPERM ptrace", "ERR EPERM process_vm_readv", "OK caps eff=0 prm=0 inh=0 "} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("want %q (no access to host processes, no capabilities):\n%s", want, r)
			}
		}
		if !strings.Contains(r.stdout, " amb=0 nnp=1") || (u == asSelf && isRoot && !strings.Contains(r.stdout, " bnd=0 ")) {
			t.Fatalf("capabilities or no_new_privs left:\n%s", r)
		}
		if !strings.Contains(r.stdout, "OK daemon") {
			t.Fatalf("the daemon did not start, so the test proves nothing:\n%s", r)
		}
		time.Sleep(200 * time.Millisecond)
		if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) > 0 {
			exec.Command("pkill", "-9", "-f", marker).Run()
			t.Fatalf("a double-forked process outlived the run: %s", out)
		}
		var rep struct {
			Tier struct{ Name string } `json:"tier"`
		}
		if err := json.Unmarshal([]byte(readFile(t, report)), &rep); err != nil || rep.Tier.Name != "landlock" {
			t.Fatalf("the report's tier is %q (%v)", rep.Tier.Name, err)
		}
	})
}

// TestTierLandlockIdMapsRefused: where the kernel makes a user namespace
// but refuses its id maps (Ubuntu 23.10+'s AppArmor restriction, which a
// test-hooks build simulates with CORRAL_TEST_IDMAP_REFUSED=1), auto
// starts a landlock tier init instead; --tier namespaces fails closed.
// The command's signals still reach it.
func TestTierLandlockIdMapsRefused(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "auto's own choice, which this test makes it take")
	requireKernel(t, landlockABI >= 6, fmt.Sprintf("the landlock tier needs Landlock ABI 6 (signal scoping), the kernel has %d", landlockABI))
	users(t, func(t *testing.T, u user) {
		attack(t, "tier-landlock/processes", "the user namespace is made but its id maps are refused")
		work := newDir(t, u, "work")
		env := append(defaultEnv(), "CORRAL_TEST_IDMAP_REFUSED=1")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--", "sh", "-c", "cat /etc/shadow; echo RAN"}, dir: work, env: env, keepRefusal: true})
		if !strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "refused its id maps") || !strings.Contains(r.stderr, "/etc/shadow: Permission denied") {
			t.Fatalf("auto did not run the landlock tier after the id maps were refused:\n%s", r)
		}
		r = u.run(t, runOpts{args: []string{"exec", "--tier", "namespaces", "--work-dir", work, "--", "true"}, dir: work, env: env, keepRefusal: true})
		if r.code != 125 || !strings.Contains(r.stderr, "uid_map") {
			t.Fatalf("--tier namespaces did not fail closed:\n%s", r)
		}
		// SIGTERM to corral reaches the command of the restarted init,
		// once it runs (a fixed wait was too short for the CI's emulated
		// VM, where corral had not caught its signals yet).
		cmd := u.command(t.Context(), runOpts{args: []string{"exec", "--work-dir", work, "--", "sh", "-c", "echo READY; exec sleep 60"}, dir: work, env: env})
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			ready <- strings.TrimSpace(line) == "READY"
		}()
		select {
		case ok := <-ready:
			if !ok {
				t.Fatal("the command did not start")
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the command did not start within 60s")
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if cmd.ProcessState.ExitCode() != 143 {
				t.Fatalf("exit %d (%v), want 143 (SIGTERM reached sleep)", cmd.ProcessState.ExitCode(), err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatal("SIGTERM to corral did not end the run")
		}
		// A SIGTERM while the first init is given up and the second
		// starts (a few ms in) went to the init given up, and the
		// command ran on: it must end every run, whenever it comes.
		for i, delay := range []time.Duration{2, 3, 4, 5, 6, 8, 2, 3, 4, 5, 6, 8} {
			cmd := u.command(t.Context(), runOpts{args: []string{"exec", "--work-dir", work, "--", "sleep", "60"}, dir: work, env: env})
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Errorf("run %d: SIGTERM %v after the start did not end the run", i, delay*time.Millisecond)
			}
		}
	})
}

// TestTierLandlockCorralKilled: corral killed with SIGKILL while the
// command runs leaves nothing behind: the shim's parent-death signal
// makes it kill every process below it, double-forked ones too.
func TestTierLandlockCorralKilled(t *testing.T) {
	t.Parallel()
	tierCase(t, func(t *testing.T, u user, m tierMode) {
		attack(t, "tier-landlock/processes", "outlive corral killed with SIGKILL")
		work := newDir(t, u, "work")
		probe := installProbe(t, work)
		marker := token("killedmark")
		writeFile(t, filepath.Join(work, "attack.sh"), fmt.Sprintf("%s daemon %s\nsleep 60\n", probe, marker), 0o644)
		own(t, u, filepath.Join(work, "attack.sh"))
		o := m.wrap([]string{"exec", "--work-dir", work, "--", "sh", "attack.sh"})
		o.dir = work
		cmd := u.command(t.Context(), o)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool { out, _ := exec.Command("pgrep", "-f", "sleep "+marker).Output(); return len(out) > 0 }) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the daemon did not start, so the test proves nothing")
		}
		// setpriv, nouserns, unshare and sh all exec what they run: the
		// process started is corral itself by now.
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if !waitFor(5*time.Second, func() bool { out, _ := exec.Command("pgrep", "-f", marker).Output(); return len(out) == 0 }) {
			exec.Command("pkill", "-9", "-f", marker).Run()
			t.Fatal("a double-forked process outlived corral killed with SIGKILL")
		}
	})
}

// TestKeptSkillThroughSymlink: a skill named through a symlink (a skill
// linked into a project) whose folder lies in the writable work dir stays
// read-only in the namespaces tier and refuses the run in the landlock
// tier: its SKILL.md would grant the next run more.
func TestKeptSkillThroughSymlink(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "rewrite the skill's own SKILL.md, named through a symlink")
		work := newDir(t, u, "work")
		sk := writeSkill(t, filepath.Join(work, "skills"), "linked", "")
		link := filepath.Join(newDir(t, u, "links"), "linked")
		if err := os.Symlink(sk, link); err != nil {
			t.Fatal(err)
		}
		own(t, u, work)
		before := readFile(t, filepath.Join(sk, "SKILL.md"))
		for _, tier := range []string{"namespaces", "landlock"} {
			if tier == "landlock" && landlockABI < 6 {
				continue
			}
			r := u.run(t, runOpts{args: []string{"exec", "--tier", tier, "--work-dir", work, "--skill", link, "--",
				"sh", "-c", "echo 'permissions: {exec: [curl]}' >> skills/linked/SKILL.md"}, dir: work, keepRefusal: true})
			if got := readFile(t, filepath.Join(sk, "SKILL.md")); got != before {
				t.Fatalf("%s tier: the command rewrote its skill through the symlinked path:\n%s", tier, r)
			}
			if tier == "landlock" && (r.code != 125 || !strings.Contains(r.stderr, "no read-only bind")) {
				t.Fatalf("the landlock tier did not refuse a skill inside the writable root:\n%s", r)
			}
		}
	})
}

// TestOtherRepoConfigs: Mercurial's and Jujutsu's repository configs run
// code (hooks, extensions, aliases): what the command writes there, at
// the top of the work dir or deeper, does not stay, in either tier.
func TestOtherRepoConfigs(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "Mercurial and Jujutsu repository configs")
		for _, tier := range []string{"namespaces", "landlock"} {
			if tier == "landlock" && landlockABI < 6 {
				continue
			}
			work := newDir(t, u, "work-"+tier)
			writeFile(t, filepath.Join(work, ".hg", "hgrc"), "[ui]\n", 0o644)
			for _, d := range []string{"sub/.hg", ".jj/repo"} {
				if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			own(t, u, work)
			time.Sleep(20 * time.Millisecond) // older than the run's start
			r := u.run(t, runOpts{args: []string{"exec", "--tier", tier, "--work-dir", work, "--", "sh", "-c",
				"echo '[hooks]' >> .hg/hgrc; echo '[hooks]' > sub/.hg/hgrc; echo '[aliases]' > .jj/repo/config.toml"}, dir: work, keepRefusal: true})
			for _, p := range []string{".hg/hgrc", "sub/.hg/hgrc", ".jj/repo/config.toml"} {
				if b, err := os.ReadFile(filepath.Join(work, p)); err == nil && strings.Contains(string(b), "[hooks]") || strings.Contains(string(b), "[aliases]") {
					t.Errorf("%s tier: %s holds what the command wrote:\n%s", tier, p, r)
				}
			}
		}
	})
}
