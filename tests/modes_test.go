//go:build linux

package tests

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	corral "corral.dev/corral"
)

// The attacks of issue 27 items 1 and 2: nothing the command leaves in a
// writable folder carries a set-id bit or file capabilities, and no
// folder other users must not change is left open to them (docs/modes.md).

// setIDFiles lists the regular files under dir with a setuid or setgid
// bit or file capabilities, as the host sees them after the run.
func setIDFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			out = append(out, fmt.Sprintf("%s (mode %o)", p, st.Mode&0o7777))
		}
		if n, err := unix.Lgetxattr(p, "security.capability", nil); err == nil && n > 0 {
			out = append(out, p+" (file capabilities)")
		}
		return nil
	})
	return out
}

// reportOf runs corral exec with --report in a folder of u's and returns
// the result and the report.
func reportOf(t *testing.T, u user, work string, skills []string, script string) (result, corral.Result) {
	t.Helper()
	out := newDir(t, u, "report")
	file := filepath.Join(out, "report.json")
	args := []string{"exec", "--work-dir", work, "--report", file}
	for _, s := range skills {
		args = append(args, "--skill", s)
	}
	r := u.run(t, runOpts{args: append(args, "--", "sh", "-c", script), dir: work})
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, r)
	}
	return r, checkReport(t, string(data))
}

// TestSetIDRefusedAtTheCall makes every call that can set a mode try the
// setuid and setgid bits, each its own raw syscall (the probe): seccomp
// refuses each, in both tiers, and no such file is left.
func TestSetIDRefusedAtTheCall(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "leave a set-id file through each call that sets a mode")
		f := newFS(t, u)
		writeFile(t, filepath.Join(f.work, "f"), "x", 0o755)
		own(t, u, filepath.Join(f.work, "f"))
		var script strings.Builder
		type want struct{ call, errno string }
		var wants []want
		for _, mode := range []string{"4755", "2755", "6711", "4000"} {
			for _, call := range []string{"fchmodat", "fchmod", "fchmodat2", "open", "tmpfile", "openat2", "mknod"} {
				target := "f"
				switch call {
				case "open", "openat2", "mknod":
					target = "new-" + call + "-" + mode
				case "tmpfile":
					target = "."
				}
				fmt.Fprintf(&script, "./probe mode %s %s %s\n", call, target, mode)
				errno := "EPERM"
				if call == "openat2" {
					errno = "ENOSYS" // its mode is in a struct: callers fall back to openat
				}
				wants = append(wants, want{call + " " + mode, errno})
			}
		}
		// The ordinary modes still work through the same calls.
		script.WriteString("./probe mode fchmodat f 755\n./probe mode open plain 644\n./probe mode fchmodat2 f 700\n./probe mode mkdir dir 6777\n")
		r := runScript(t, u, f.work, nil, script.String())
		lines := probeLines(r.stdout)
		if len(lines) != len(wants)+4 {
			t.Fatalf("want %d probe lines:\n%s", len(wants)+4, r)
		}
		for i, w := range wants {
			if !strings.HasPrefix(lines[i], "ERR "+w.errno+" ") {
				t.Errorf("%s: want %s, got %q", w.call, w.errno, lines[i])
			}
		}
		for _, l := range lines[len(wants):] {
			// fchmodat2 is Linux 6.6's: older kernels do not know it.
			if !strings.HasPrefix(l, "OK ") && !strings.HasPrefix(l, "ERR ENOSYS fchmodat2 ") {
				t.Errorf("an ordinary mode was refused: %q\n%s", l, r)
			}
		}
		// mkdir keeps no set-id bit of its mode: the kernel's own rule.
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(f.work, "dir"), &st); err != nil || st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			t.Errorf("mkdir 6777 made a folder with mode %o (%v)", st.Mode&0o7777, err)
		}
		if left := setIDFiles(t, f.work); len(left) > 0 {
			t.Errorf("set-id files left after the run: %v\n%s", left, r)
		}
	})
}

// TestSetIDTools tries what tools do to keep or set modes: chmod, install
// -m, cp -p and -a of a setuid program, tar -xp of an archive with set-id
// members, rsync -p, Python's os.open, and a copy of /bin/sh made setuid as in the
// issue. None leaves a set-id file; ordinary modes (chmod +x, umask,
// git's 0644 and 0755) keep working.
func TestSetIDTools(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "leave a set-id file through chmod, install, cp, tar and python")
		f := newFS(t, u)
		archive := filepath.Join(newDir(t, asSelf, "archive"), "setid.tar")
		src := newDir(t, asSelf, "tarsrc")
		writeFile(t, filepath.Join(src, "suid"), "#!/bin/sh\n", 0o755)
		writeFile(t, filepath.Join(src, "sgid"), "#!/bin/sh\n", 0o755)
		os.Chmod(filepath.Join(src, "suid"), 0o4755)
		os.Chmod(filepath.Join(src, "sgid"), 0o2755)
		if out, err := runHost("tar", "-C", src, "-cf", archive, "suid", "sgid"); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cp /bin/sh tool; chmod 6755 tool; chmod u+s tool; chmod g+s tool
install -m 4755 /bin/true installed
cp -p /usr/bin/su su-p; cp -a /usr/bin/su su-a
mkdir x; tar -C x -xpf %s
if command -v rsync >/dev/null; then rsync -p /usr/bin/su rsynced; else echo no-rsync; fi
python3 -c 'import os; os.close(os.open("py", os.O_CREAT|os.O_WRONLY, 0o4755))'
mkdir -m 2775 shared
printf '#!/bin/sh\necho ran\n' > s.sh; chmod +x s.sh; ./s.sh
umask 077; echo p > private; stat -c 'private %%a' private
git init -q repo && cd repo && echo a > a && git add a && git -c user.name=a -c user.email=a@b.test commit -qm a && echo committed
`, archive))
		if strings.Contains(r.stdout, "no-rsync") {
			t.Log("rsync is not installed (scripts/test.sh installs it): rsync -p not tried")
		}
		for _, want := range []string{"ran", "private 600", "committed"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("ordinary work failed, no %q:\n%s", want, r)
			}
		}
		if left := setIDFiles(t, f.work); len(left) > 0 {
			t.Errorf("set-id files left after the run: %v\n%s", left, r)
		}
	})
}

// capabilityXattr is a version 2 file capability (CAP_NET_RAW permitted
// and effective), as setcap writes it.
func capabilityXattr() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|1) // VFS_CAP_REVISION_2, effective
	binary.LittleEndian.PutUint32(b[4:], 1<<13)        // CAP_NET_RAW
	return b
}

// TestSetIDSweep attacks the sweep behind seccomp: a set-id file already
// in the work dir (the user's) given another name or place by the command
// (ln, mv) is changed by the run, which the calls that set modes never
// see. After the run the sweep has taken its bits off (and an
// executable's file capabilities, as root), and says so in the report; a
// set-id file the command did not touch keeps its bits.
func TestSetIDSweep(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "keep a set-id file by linking or moving one already there")
		f := newFS(t, u)
		modes := map[string]uint32{"suid": 0o4755, "sgid": 0o2755, "keep/untouched": 0o4755}
		for name := range modes {
			p := filepath.Join(f.work, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			writeFile(t, p, "#!/bin/sh\n", 0o755)
		}
		capfile := filepath.Join(f.work, "capped")
		writeFile(t, capfile, "#!/bin/sh\n", 0o755)
		own(t, u, f.work) // chown clears set-id bits: they are set after
		for name, mode := range modes {
			if err := unix.Chmod(filepath.Join(f.work, name), mode); err != nil {
				t.Fatal(err)
			}
		}
		hasCaps := unix.Lsetxattr(capfile, "security.capability", capabilityXattr(), 0) == nil
		// A write through a shared mapping keeps the bits (write(2) would
		// take them off) and changes no folder.
		rewritten := filepath.Join(f.work, "keep", "rewritten")
		writeFile(t, rewritten, "#!/bin/sh\n", 0o755)
		own(t, u, rewritten)
		unix.Chmod(rewritten, 0o4755)
		time.Sleep(20 * time.Millisecond) // past the coarse clock's tick
		_, rep := reportOf(t, u, f.work, nil, `ln suid linked; mkdir d; mv sgid d/moved; ln capped capped2; touch new
python3 -c 'import mmap; f = open("keep/rewritten", "r+b"); m = mmap.mmap(f.fileno(), 0); m[0:2] = b"#!"; m.flush()'`)
		var rst unix.Stat_t
		if unix.Lstat(rewritten, &rst) != nil || rst.Mode&unix.S_ISUID != 0 {
			t.Errorf("a set-id file rewritten through a shared mapping kept mode %o", rst.Mode&0o7777)
		}
		for _, p := range []string{"linked", "suid", "d/moved"} {
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(f.work, p), &st); err != nil {
				t.Errorf("%s: %v", p, err)
			} else if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
				t.Errorf("%s kept mode %o after the command changed it", p, st.Mode&0o7777)
			}
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(f.work, "keep/untouched"), &st) != nil || st.Mode&unix.S_ISUID == 0 {
			t.Errorf("a set-id file the command did not touch lost its bit (mode %o)", st.Mode&0o7777)
		}
		if hasCaps && !u.unpriv {
			// As root the capabilities come off. (A user has no
			// CAP_SETFCAP to remove them, nor a way to link a file
			// with them it does not own: corral says so.)
			if n, err := unix.Lgetxattr(capfile, "security.capability", nil); err == nil && n > 0 {
				t.Errorf("a file with capabilities keeps them under a name the command gave it")
			}
		}
		if !exists(capfile) {
			t.Errorf("the user's own file %s is gone", capfile)
		}
		found := map[string]bool{}
		for _, m := range rep.Reset {
			found[strings.TrimPrefix(m.Path, f.work+"/")] = true
		}
		for _, q := range rep.Quarantined {
			found[strings.TrimPrefix(q.Path, f.work+"/")] = true
		}
		if !(found["linked"] || found["suid"]) || !found["d/moved"] {
			t.Errorf("the report does not say what the sweep reset: %+v %+v", rep.Reset, rep.Quarantined)
		}
	})
}

// modeOf is path's permission and set-id bits, as the host sees them.
func modeOf(t *testing.T, path string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Errorf("%s: %v", path, err)
		return 0
	}
	return st.Mode & 0o7777
}

// TestOpenedFolders makes the folders other users must not change
// writable for them: the work dir's top, its git folder, a git folder
// deeper than the launch search, their hooks folders, a protected path,
// repositories made with umask 0. After
// the run none is group- or other-writable that was not so at launch,
// the report says what corral set back, and a git folder the user made
// group-writable before the run (umask 002) stays so after git ran in it.
// ACLs cannot be added at all (seccomp: EOPNOTSUPP).
func TestOpenedFolders(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "open git folders, hooks and the work dir to other users")
		f := newFS(t, u)
		w := f.work
		hostGitSetup(t, w, "init", "-q")
		hostGitSetup(t, filepath.Join(w, "a/b/c/deep"), "init", "-q")
		hostGitSetup(t, filepath.Join(w, "upg"), "init", "-q")
		os.Chmod(filepath.Join(w, "upg/.git"), 0o775) // a umask 002 system's: the user's own
		writeFile(t, filepath.Join(w, ".envrc"), "export A=1\n", 0o644)
		own(t, u, w)
		script := `
chmod 0777 . .git .git/hooks .envrc 2>/dev/null
chmod 0777 a/b/c/deep/.git a/b/c/deep/.git/hooks
chmod 0666 a/b/c/deep/.git/config
(umask 0; git init -q fresh; mkdir -p made/.git/hooks)
git -C upg -c user.name=a -c user.email=a@b.test commit -q --allow-empty -m x && echo upg-commit
./probe xattr .git system.posix_acl_access x
./probe xattr .git user.corral x
`
		r, rep := reportOf(t, u, w, nil, script)
		quarantined := map[string]bool{}
		for _, q := range rep.Quarantined {
			quarantined[strings.TrimPrefix(q.Path, w+"/")] = true
		}
		for _, p := range []string{".", ".git", ".git/hooks", ".envrc", "a/b/c/deep/.git", "a/b/c/deep/.git/hooks",
			"fresh/.git", "fresh/.git/hooks", "fresh/.git/config"} {
			if quarantined[p] && !exists(filepath.Join(w, p)) {
				continue // the landlock tier's sweep moves a changed .envrc aside
			}
			if m := modeOf(t, filepath.Join(w, p)); m&0o022 != 0 {
				t.Errorf("%s is left with mode %o: other users can change it", p, m)
			}
		}
		if m := modeOf(t, filepath.Join(w, "upg/.git")); m != 0o775 {
			t.Errorf("a git folder the user made group-writable has mode %o after git ran in it (775 before)", m)
		}
		if !strings.Contains(r.stdout, "upg-commit") {
			t.Errorf("git commit failed:\n%s", r)
		}
		for _, l := range probeLines(r.stdout) {
			if !strings.HasPrefix(l, "ERR ENOTSUP ") { // EOPNOTSUPP's name
				t.Errorf("an extended attribute was set: %q", l)
			}
		}
		reset := map[string]bool{}
		for _, m := range rep.Reset {
			reset[strings.TrimPrefix(strings.TrimPrefix(m.Path, w), "/")] = true
		}
		for _, p := range []string{"", ".git", "a/b/c/deep/.git", "a/b/c/deep/.git/hooks", "fresh/.git"} {
			if !reset[p] {
				t.Errorf("the report's reset does not name %q: %+v", p, rep.Reset)
			}
		}
	})
}

// TestOpenedHome opens a home folder inside the work dir to other users
// (the namespaces tier binds it as the host's; the landlock tier refuses
// the run, since the global policy file would be writable): corral takes
// the right back after the run.
func TestOpenedHome(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "open the home folder to other users")
		f := newFS(t, u)
		home := filepath.Join(f.work, "home")
		os.MkdirAll(home, 0o755)
		own(t, u, home)
		out := newDir(t, u, "report")
		file := filepath.Join(out, "report.json")
		env := append(defaultEnv()[:2:2], "HOME="+home)
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--report", file, "--", "chmod", "0777", home}, dir: f.work, env: env})
		if m := modeOf(t, home); m&0o022 != 0 {
			t.Errorf("the home folder is left with mode %o:\n%s", m, r)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("no report: %v\n%s", err, r)
		}
		if rep := checkReport(t, string(data)); len(rep.Reset) != 1 || rep.Reset[0].Path != home {
			t.Errorf("the report does not say corral set the home folder back: %+v", rep.Reset)
		}
	})
}

// TestWriteGrantsNosuid: in the namespaces tier the work dir, as every
// mount of the sandbox's root, is mounted nosuid, the second layer for a
// set-id file inside the sandbox.
func TestWriteGrantsNosuid(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		namespacesOnly(t, "mounts")
		attack(t, "privilege", "run a set-id file from a write grant inside the sandbox")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `awk -v w="$PWD" '$5 == w { print "opts", $6 }' /proc/self/mountinfo`)
		opts := strings.Fields(strings.ReplaceAll(r.stdout, ",", " "))
		if len(opts) < 2 || opts[0] != "opts" {
			t.Fatalf("no mount at the work dir:\n%s", r)
		}
		if !strings.Contains(r.stdout, "nosuid") {
			t.Errorf("the work dir is not mounted nosuid: %s", r.stdout)
		}
	})
}
