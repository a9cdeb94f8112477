//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fs.deny (issue 20, item 3): globs that carve paths out of wider fs
// grants, for read and write, enforced by masks in the namespaces tier;
// a deny the kernel cannot enforce is refused, never left wider.

// denyCheck asks `corral check` about op on each path and fails unless
// it answers want (exit 0 allow, 1 deny).
func denyCheck(t *testing.T, u user, work string, skills []string, op string, want int, paths ...string) {
	t.Helper()
	for _, p := range paths {
		args := []string{"check", "--work-dir", work}
		for _, s := range skills {
			args = append(args, "--skill", s)
		}
		r := u.run(t, runOpts{args: append(args, op, p), dir: work})
		if r.code != want {
			t.Errorf("check %s %s: exit %d, want %d\n%s", op, p, r.code, want, r)
		}
		if want == 1 && !strings.Contains(r.stdout, "fs.deny") {
			t.Errorf("check %s %s: the reason does not name the fs.deny glob:\n%s", op, p, r)
		}
	}
}

// TestDenyInReadGrant: inside a read grant, what a deny glob matches at
// launch reads as denied by every path that reaches it, and the
// neighbours stay readable.
func TestDenyInReadGrant(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		namespacesOnly(t, "masks are mounts")
		attack(t, "fs", "read a file fs.deny carves out of a read grant")
		work := newDir(t, u, "work")
		secret := token("SECRET")
		for _, f := range []string{".env", "sub/.env", "tls/server.pem", "keys/id", "keys/deep/id2"} {
			writeFile(t, filepath.Join(work, f), secret+"\n", 0o644)
		}
		writeFile(t, filepath.Join(work, "readme"), "NEIGHBOUR\n", 0o644)
		writeFile(t, filepath.Join(work, ".envrc"), "NEIGHBOUR2\n", 0o644)
		os.Symlink(".env", filepath.Join(work, "link"))
		os.Symlink("sub", filepath.Join(work, "dirlink"))
		own(t, u, work)
		skills := newDir(t, asSelf, "skills")
		sk := writeSkill(t, skills, "guard", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\", \"**/*.pem\", \"$WORK_DIR/keys/**\"]\n")
		r := runScript(t, u, work, []string{sk}, `
for f in .env sub/.env tls/server.pem keys/id keys/deep/id2 link dirlink/.env sub/../.env ./sub/./.env /proc/self/root`+work+`/.env `+work+`/.env; do
  cat "$f" >/dev/null 2>&1 && echo "READ $f" && cat "$f"
done
ls keys >/dev/null 2>&1 && echo "LISTED keys"
head -c0 .env 2>/dev/null && echo "OPENED .env"
cat readme .envrc
`)
		noSecret(t, r, secret, "a path fs.deny matches")
		for _, s := range []string{"READ ", "LISTED", "OPENED"} {
			if strings.Contains(r.stdout, s) {
				t.Errorf("the sandbox got through: %s\n%s", s, r)
			}
		}
		if !strings.Contains(r.stdout, "NEIGHBOUR\n") || !strings.Contains(r.stdout, "NEIGHBOUR2") {
			t.Errorf("the neighbours are not readable:\n%s", r)
		}
		denyCheck(t, u, work, []string{sk}, "read", 1, work+"/.env", work+"/sub/.env", work+"/tls/server.pem", work+"/keys/id", work+"/keys/deep/id2", work+"/link", work+"/dirlink/.env", work+"/sub/../.env")
		denyCheck(t, u, work, []string{sk}, "read", 0, work+"/readme", work+"/.envrc")
	})
}

// TestDenyInWriteGrant: inside a write grant, a denied file and folder
// that exist at launch can be neither read, written, truncated, moved,
// removed nor linked, and nothing can be made in the denied folder or
// moved onto the denied file; the host's files stay as they were and the
// neighbours stay writable.
func TestDenyInWriteGrant(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		namespacesOnly(t, "masks are mounts")
		attack(t, "fs", "write or make a path fs.deny carves out of a write grant")
		work := newDir(t, u, "work")
		secret := token("SECRET")
		writeFile(t, filepath.Join(work, ".env"), secret+"\n", 0o644)
		writeFile(t, filepath.Join(work, "secrets/key"), secret+"\n", 0o644)
		writeFile(t, filepath.Join(work, "readme"), "NEIGHBOUR\n", 0o644)
		own(t, u, work)
		skills := newDir(t, asSelf, "skills")
		sk := writeSkill(t, skills, "guard", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"$WORK_DIR/.env\", \"$WORK_DIR/secrets/**\"]\n")
		r := runScript(t, u, work, []string{sk}, `
try() { if "$@" >/dev/null 2>&1; then echo "DID $*"; fi; }
f=.env
try cat $f
try chmod 644 $f
try chmod 755 secrets
try cat $f
try sh -c 'echo X >> .env'
try truncate -s0 $f
try mv $f moved
try rm -f $f
try ln $f hard
try cat hard
ln -s $f soft
try cat soft
try cat /proc/self/root`+work+`/.env
try cat secrets/key
try ls secrets
try mv secrets elsewhere
try rmdir secrets
try touch secrets/new
try mkdir secrets/dir
try sh -c 'echo X > secrets/made'
try ln readme secrets/linked
try ln -s readme secrets/sym
try mv readme2 secrets/moved
echo other > other && try mv other .env
try cat .env
echo more >> readme && echo WROTE-NEIGHBOUR
`)
		noSecret(t, r, secret, "a path fs.deny matches")
		if strings.Contains(r.stdout, "DID ") {
			t.Errorf("the sandbox got through:\n%s", r)
		}
		if !strings.Contains(r.stdout, "WROTE-NEIGHBOUR") || readFile(t, filepath.Join(work, "readme")) != "NEIGHBOUR\nmore\n" {
			t.Errorf("the neighbour is not writable:\n%s", r)
		}
		if got := readFile(t, filepath.Join(work, ".env")); got != secret+"\n" {
			t.Errorf("the host's .env changed: %q", got)
		}
		if got := readFile(t, filepath.Join(work, "secrets/key")); got != secret+"\n" {
			t.Errorf("the host's secrets/key changed: %q", got)
		}
		for _, p := range []string{"moved", "hard", "elsewhere", "secrets/new", "secrets/dir", "secrets/made", "secrets/linked", "secrets/sym", "secrets/moved"} {
			if exists(filepath.Join(work, p)) {
				t.Errorf("%s exists on the host after the run", p)
			}
		}
		denyCheck(t, u, work, []string{sk}, "read", 1, work+"/.env", work+"/secrets/key")
		denyCheck(t, u, work, []string{sk}, "write", 1, work+"/.env", work+"/secrets/key", work+"/secrets/new")
		denyCheck(t, u, work, []string{sk}, "write", 0, work+"/readme", work+"/other")
	})
}

// TestDenyRefusedWhereNotEnforceable: a deny that could match a name the
// command makes in a write grant (no mount keeps a name from being
// made), and in the landlock tier any deny that reaches a grant, refuse
// the run with one clear line and exit 125, and check says exec would
// refuse; nothing runs.
func TestDenyRefusedWhereNotEnforceable(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "fs", "make a name fs.deny matches inside a write grant")
	work := newDir(t, asSelf, "work")
	writeFile(t, filepath.Join(work, "sub/.env"), "SECRET\n", 0o644)
	skills := newDir(t, asSelf, "skills")
	cases := []struct {
		name, perms, tier, want, denied string
	}{
		// A deny that could match a name made in a write grant used to
		// be refused in the namespaces tier: the supervisor now makes
		// every new name there (TestDenyNoCreateNamespacesTier).
		{"anywhere", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\"]\n", "namespaces", "", "sub/.env"},
		{"missing-literal", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"$WORK_DIR/.netrc\"]\n", "namespaces", "", ".netrc"},
		{"movable-folder", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"$WORK_DIR/sub/.env\"]\n", "namespaces", "", "sub/.env"},
		{"landlock-read", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\"]\n", "landlock", "the landlock tier cannot carve fs.deny", "sub/.env"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"exec", "--work-dir", work, "--skill", writeSkill(t, skills, c.name, c.perms)}
			if c.tier == "landlock" {
				args = append(args, "--tier", c.tier)
			} else {
				namespacesOnly(t, "the masks and the supervisor together")
			}
			marker := filepath.Join(work, "ran-"+c.name)
			r := asSelf.run(t, runOpts{args: append(args, "--", "touch", marker), dir: work, keepRefusal: true})
			switch {
			case c.want == "" && (r.code != 0 || !exists(marker)):
				t.Errorf("exec: exit %d, want the command run\n%s", r.code, r)
			case c.want != "" && (r.code != 125 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "("+c.name+")")):
				t.Errorf("exec: exit %d, want 125 and one line saying %q and naming the skill\n%s", r.code, c.want, r)
			case c.want != "" && exists(marker):
				t.Errorf("the command ran")
			}
			args[0] = "check"
			for _, op := range []string{"read", "write"} {
				r = asSelf.run(t, runOpts{args: append(args[:len(args):len(args)], op, work+"/"+c.denied), dir: work, keepRefusal: true})
				if r.code != 1 {
					t.Errorf("check %s %s: exit %d, want 1\n%s", op, c.denied, r.code, r)
				}
			}
		})
	}
}

// TestDenyMalformed: a deny glob that is not one is refused with one line
// naming the file, line and field, exit 125.
func TestDenyMalformed(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	skills := newDir(t, asSelf, "skills")
	for i, v := range []string{`"[abc"`, `"relative/.env"`, `"$NOPE/x"`, `"**"`, `"/ws/../etc"`, `{a: b}`, `[1]`} {
		name := "bad" + string(rune('a'+i))
		sk := writeSkill(t, skills, name, "  fs:\n    deny: "+v+"\n")
		for _, cmd := range []string{"exec", "explain", "check"} {
			args := []string{cmd, "--work-dir", work, "--skill", sk}
			switch cmd {
			case "exec":
				args = append(args, "--", "true")
			case "check":
				args = append(args, "read", work+"/x")
			}
			r := asSelf.run(t, runOpts{args: args, dir: work})
			if r.code != 125 || !strings.Contains(r.stderr, "permissions.fs.deny") || !strings.Contains(r.stderr, "SKILL.md:") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("%s with deny %s: exit %d, want 125 and one line naming the field\n%s", cmd, v, r.code, r)
			}
		}
	}
}

// TestDenyExplain: explain lists the deny globs with their skills and the
// masks the plan places.
func TestDenyExplain(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	writeFile(t, filepath.Join(work, ".env"), "x", 0o644)
	skills := newDir(t, asSelf, "skills")
	a := writeSkill(t, skills, "one", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\"]\n")
	b := writeSkill(t, skills, "two", "  fs:\n    deny: [\"**/.env\", \"**/*.pem\"]\n")
	r := asSelf.run(t, runOpts{args: []string{"explain", "--work-dir", work, "--skill", a, "--skill", b, "--tier", "namespaces"}, dir: work})
	if r.code != 0 {
		t.Fatalf("explain: %s", r)
	}
	for _, want := range []string{"fs.deny:", "/**/.env", "from one, two", "/**/*.pem", "from two", "mask     " + work + "/.env ro  (fs.deny /**/.env (one, two))"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain does not say %q:\n%s", want, r.stdout)
		}
	}
}

// TestDenyNoCreateLandlockTier: in the landlock tier, where Landlock
// cannot refuse a name that does not exist, corral's supervisor makes
// every name itself and refuses the ones fs.deny matches, by every call
// that makes one; nothing denied appears on the host, and the neighbours
// are made, written, renamed and linked as usual. check agrees.
func TestDenyNoCreateLandlockTier(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		requireLandlockTier(t)
		attack(t, "fs", "make a name fs.deny matches in the landlock tier")
		work := newDir(t, u, "work")
		writeFile(t, filepath.Join(work, "readme"), "NEIGHBOUR\n", 0o644)
		writeFile(t, filepath.Join(work, "pack/x"), "x\n", 0o644)
		own(t, u, work)
		// A file outside every grant, on the work dir's file system: a
		// link made through a symlink to it (ln -L) would have been
		// checked against the symlink's folder (the review of issue 20).
		outside := newDir(t, asSelf, "outside")
		hidden := token("HIDDEN")
		writeFile(t, filepath.Join(outside, "secret"), hidden+"\n", 0o644)
		skills := newDir(t, asSelf, "skills")
		sk := writeSkill(t, skills, "guard", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\", \"$WORK_DIR/keys/**\"]\n")
		writeFile(t, filepath.Join(work, "attack.sh"), `
try() { if "$@" >/dev/null 2>&1; then echo "DID $*"; fi; }
f=.env
ln -s `+filepath.Join(outside, "secret")+` outlink
try ln -L outlink pulled
cat pulled 2>/dev/null
try sh -c 'echo X > .env'
try sh -c 'echo X >> sub/.env'
try touch $f
try mkdir $f
try mkdir -p a/b/$f
try mkdir keys
try ln -s readme $f
try ln readme $f
try cp readme $f
try mv pack $f
try mv pack keys
try sh -c 'mkdir m && echo s > m/.envx && mv m/.envx m/.env'
try python3 -c 'import os; os.open(".env", os.O_CREAT|os.O_WRONLY)'
try mkfifo $f
echo new > new && echo MADE
mkdir -p d1/d2 && echo MADE-DIRS
echo more >> readme && echo APPENDED
mv new new2 && ln new2 new3 && ln -s new2 new4 && mv pack pack2 && echo MOVED
echo `+attackDone+`
`, 0o644)
		own(t, u, filepath.Join(work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--tier", "landlock", "--work-dir", work, "--skill", sk, "--", "sh", "attack.sh"}, dir: work, keepRefusal: true})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the script did not run to its end:\n%s", r)
		}
		if strings.Contains(r.stdout, "DID ") {
			t.Errorf("the sandbox made a denied name:\n%s", r)
		}
		if strings.Contains(r.stdout, hidden) {
			t.Errorf("a link through a symlink read a file outside the grants:\n%s", r)
		}
		for _, s := range []string{"MADE\n", "MADE-DIRS", "APPENDED", "MOVED"} {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("a neighbour failed (%s):\n%s", s, r)
			}
		}
		filepath.Walk(work, func(p string, _ os.FileInfo, _ error) error {
			if filepath.Base(p) == ".env" || strings.HasPrefix(p, work+"/keys") {
				t.Errorf("%s exists on the host after the run", p)
			}
			return nil
		})
		if got := readFile(t, filepath.Join(work, "readme")); got != "NEIGHBOUR\nmore\n" {
			t.Errorf("readme: %q", got)
		}
		for _, p := range []string{"new2", "new3", "new4", "d1/d2", "pack2/x"} {
			if !exists(filepath.Join(work, p)) {
				t.Errorf("%s is missing on the host", p)
			}
		}
		check := func(op, p string, want int) {
			c := u.run(t, runOpts{args: []string{"check", "--tier", "landlock", "--work-dir", work, "--skill", sk, op, p}, dir: work, keepRefusal: true})
			if c.code != want {
				t.Errorf("check %s %s: exit %d, want %d\n%s", op, p, c.code, want, c)
			}
		}
		check("write", work+"/.env", 1)
		check("write", work+"/d1/.env", 1)
		check("read", work+"/keys/id", 1)
		check("write", work+"/another", 0)
		check("write", work+"/readme", 0)
	})
}

// TestDenyMountCache: masks go through the mount cache like any mount. A
// root built ahead from a cached block keeps them; a masked file the host
// removed fails only the build ahead (the plan's own build goes on); and
// a cached block without a mask is never used for a plan that has one.
func TestDenyMountCache(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		namespacesOnly(t, "the mount cache")
		attack(t, "fs", "a root built ahead of the plan without an fs.deny mask")
		work := newDir(t, u, "work")
		secret := token("SECRET")
		writeFile(t, filepath.Join(work, ".env"), secret+"\n", 0o644)
		own(t, u, work)
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "guard", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\"]\n")
		env := mountCacheEnv(t, u)
		script := "cat .env 2>/dev/null; echo READ-DONE"
		run := func(what string) cacheRun {
			r := cachedRun(t, u, work, []string{sk}, env, script)
			if r.code != 0 || !strings.Contains(r.stdout, "READ-DONE") {
				t.Fatalf("%s: exit %d\n%s", what, r.code, r.result)
			}
			noSecret(t, r.result, secret, what)
			return r
		}
		run("first run")
		if r := run("second run"); r.ahead != "built" || !strings.Contains(r.mounts, work+"/.env ") {
			t.Errorf("second run: ahead %q, want the cached root with the mask:\n%s", r.ahead, r.mounts)
		}
		os.Remove(filepath.Join(work, ".env"))
		if r := run("the masked file gone"); strings.Contains(r.mounts, work+"/.env ") {
			t.Errorf("a mask over a file that is gone:\n%s", r.mounts)
		}
		run("cache without the mask")
		writeFile(t, filepath.Join(work, ".env"), secret+"\n", 0o644)
		own(t, u, filepath.Join(work, ".env"))
		if r := run("the file back"); !strings.Contains(r.mounts, work+"/.env ") {
			t.Errorf("no mask after the file came back:\n%s", r.mounts)
		}
	})
}

// TestDenyNoCreateNamespacesTier: in the namespaces tier, with masks over
// what a deny glob matches at launch and a writable work dir, the
// command can make no name fs.deny matches, in any call or path form
// (relative, absolute, through a symlink, "..", an absolute symlink that
// the host's root would resolve elsewhere), nor move or link a masked
// file or a folder holding one, nor rename over or away a mount; every
// other name is made, git init and commit work, and check agrees.
func TestDenyNoCreateNamespacesTier(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		namespacesOnly(t, "masks and the supervisor in the command's own root")
		attack(t, "fs", "make a name fs.deny matches in the namespaces tier")
		work := newDir(t, u, "work")
		secret := token("SECRET")
		writeFile(t, filepath.Join(work, "readme"), "NEIGHBOUR\n", 0o644)
		writeFile(t, filepath.Join(work, "pack/x"), "x\n", 0o644)
		writeFile(t, filepath.Join(work, "held/.env"), secret+"\n", 0o644)
		writeFile(t, filepath.Join(work, ".env"), secret+"\n", 0o644)
		// The work dir is a repository: its .git/config is bound
		// read-only, a mount the supervisor must not rename.
		if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		own(t, u, work)
		escape := filepath.Join(os.TempDir(), token("corral-escape"))
		t.Cleanup(func() { os.Remove(escape) })
		// Through /proc/self/.. the supervisor once resolved from the
		// host's root and made names there (the review of issue 20).
		escapes := []string{filepath.Join(os.TempDir(), token("corral-proc")), filepath.Join(os.TempDir(), token("corral-devfd")), filepath.Join(os.TempDir(), token("corral-thread"))}
		t.Cleanup(func() {
			for _, e := range escapes {
				os.Remove(e)
			}
		})
		skills := newDir(t, asSelf, "skills")
		sk := writeSkill(t, skills, "guard", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\", \"$WORK_DIR/keys/**\"]\n")
		writeFile(t, filepath.Join(work, "attack.sh"), `
try() { if "$@" >/dev/null 2>&1; then echo "DID $*"; fi; }
f=.env
W=`+work+`
ln -s /tmp tmplink && touch tmplink/`+filepath.Base(escape)+` && echo MADE-IN-SANDBOX-TMP
try mv .git/config moved-config
try mv readme .git/config
try mv .git git2
mkdir sub
try sh -c 'echo X > sub/.env'
try sh -c "echo X > $W/sub/.env"
try sh -c "echo X > $W/sub/../sub/.env"
try touch sub/$f
try touch $W/sub/$f
try mkdir sub/$f
try mkdir -p a/b/$f
try mkdir -p $W/a/c/$f
try mkdir keys
try mkdir $W/keys
try ln -s readme sub/$f
try ln readme sub/$f
try ln readme $W/sub/$f
try cp readme sub/$f
try mv pack sub/$f
try mv pack keys
try mv pack $W/keys
try sh -c 'mkdir m && echo s > m/.envx && mv m/.envx m/.env'
try python3 -c 'import os; os.open("sub/.env", os.O_CREAT|os.O_WRONLY)'
try python3 -c 'import os; os.mknod("sub/.env")'
try python3 -c 'import os; d=os.open("sub", os.O_RDONLY); os.mkdir(".env", dir_fd=d)'
try mkfifo sub/$f
ln -s $W/sub lnk && echo LINKED
try touch lnk/$f
try mkdir lnk/$f
ln -s / rootlink && echo ROOTLINK
try touch rootlink/$W/sub/$f
try sh -c 'cd a && touch ../sub/.env'
try sh -c 'cd a && touch ../../../../../../../../$W/sub/.env'
try mv .env moved
try ln .env hard
try ln -L lnk/../.env hard2
try touch /proc/self/../..`+escapes[0]+`
try touch /dev/fd/../../..`+escapes[1]+`
try touch /proc/thread-self/../../..`+escapes[2]+`
try sh -c "echo X > /proc/self/../../$W/sub/.env"
try mkdir /proc/self/../../$W/keys
try ln /proc/self/../../$W/.env /proc/self/../../$W/procln
ln -s .env envlink
try ln -L envlink followed
cat followed procln 2>/dev/null
try mv held held2
try mv readme .env
try rm .env
cat .env held/.env 2>/dev/null
echo new > new && echo MADE
echo abs > $W/abs && echo MADE-ABS
touch lnk/via-link && echo MADE-VIA-LINK
mkdir -p d1/d2 && echo MADE-DIRS
echo more >> readme && echo APPENDED
mv new new2 && ln new2 new3 && ln -s new2 new4 && mv pack pack2 && echo MOVED
git init -q repo && cd repo && echo c > file && git add file && git -c user.email=a@b -c user.name=n commit -q -m first && echo GIT-COMMITTED && cd ..
tar cf t.tar d1 && mkdir untar && tar xf t.tar -C untar && echo UNTARRED
echo t | tee /dev/fd/2 2>/dev/null >/dev/null && echo TEE-DEVFD
echo `+attackDone+`
`, 0o644)
		own(t, u, filepath.Join(work, "attack.sh"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", sk, "--", "sh", "attack.sh"}, dir: work, keepRefusal: true})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the script did not run to its end:\n%s", r)
		}
		if strings.Contains(r.stdout, "DID ") {
			t.Errorf("the sandbox made or moved a denied name:\n%s", r)
		}
		noSecret(t, r, secret, "the sandbox")
		for _, s := range []string{"LINKED", "ROOTLINK", "MADE\n", "MADE-ABS", "MADE-VIA-LINK", "MADE-DIRS", "APPENDED", "MOVED", "GIT-COMMITTED", "UNTARRED", "TEE-DEVFD"} {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("a neighbour failed (%s):\n%s", s, r)
			}
		}
		filepath.Walk(work, func(p string, _ os.FileInfo, _ error) error {
			if (filepath.Base(p) == ".env" && p != work+"/.env" && p != work+"/held/.env") || strings.HasPrefix(p, work+"/keys") {
				t.Errorf("%s exists on the host after the run", p)
			}
			return nil
		})
		if exists(escape) {
			t.Errorf("an absolute symlink made the supervisor write the host's /tmp: %s", escape)
		}
		for _, e := range escapes {
			if exists(e) {
				t.Errorf("a path through /proc made the supervisor write the host's /tmp: %s", e)
			}
		}
		if !strings.Contains(r.stdout, "MADE-IN-SANDBOX-TMP") {
			t.Errorf("a name in the sandbox's own /tmp through a symlink was not made:\n%s", r)
		}
		if !strings.Contains(readFile(t, filepath.Join(work, ".git/config")), "[core]") || exists(filepath.Join(work, "git2")) {
			t.Errorf(".git (a mount point in the sandbox) was moved or its config replaced")
		}
		for _, p := range []string{".env", "held/.env"} {
			if got := readFile(t, filepath.Join(work, p)); got != secret+"\n" {
				t.Errorf("%s on the host: %q", p, got)
			}
		}
		if got := readFile(t, filepath.Join(work, "readme")); got != "NEIGHBOUR\nmore\n" {
			t.Errorf("readme: %q", got)
		}
		for _, p := range []string{"new2", "new3", "new4", "abs", "sub/via-link", "d1/d2", "pack2/x", "repo/.git/HEAD", "untar/d1/d2"} {
			if !exists(filepath.Join(work, p)) {
				t.Errorf("%s is missing on the host", p)
			}
		}
		check := func(op, p string, want int) {
			c := u.run(t, runOpts{args: []string{"check", "--work-dir", work, "--skill", sk, op, p}, dir: work, keepRefusal: true})
			if c.code != want {
				t.Errorf("check %s %s: exit %d, want %d\n%s", op, p, c.code, want, c)
			}
		}
		check("write", work+"/.env", 1)
		check("write", work+"/d1/.env", 1)
		check("read", work+"/keys/id", 1)
		check("write", work+"/another", 0)
		check("write", work+"/readme", 0)
	})
}

// TestDenyNoCreateWithEgress: fs.deny's creating calls and transparent
// egress's connects share the one seccomp listener a task can have:
// both are supervised in the same run.
func TestDenyNoCreateWithEgress(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "transparent egress (the landlock tier has no network namespace to redirect in)")
	users(t, func(t *testing.T, u user) {
		attack(t, "fs", "make a name fs.deny matches while transparent egress supervises connects")
		o := newOrigin(t)
		allow := fmt.Sprintf("\"api.test:%d\", \"preset:loopback:%d\"", o.port, o.port)
		f := transparentNet(t, u)
		f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "egress", "  fs:\n    read: [\""+f.tools+"/**\"]\n    write: [\"$WORK_DIR/**\"]\n    deny: [\"**/.env\"]\n  network:\n    allow: ["+allow+"]\n")
		r := f.run(t, fmt.Sprintf(`
f=.env
touch $f 2>/dev/null && echo DID-ENV
mkdir -p d/e && touch d/e/ok && echo MADE
curl -q -sS --max-time 10 --noproxy '*' -o /dev/null -w 'CASE direct %%{http_code}\n' http://api.test:%d/direct
`, o.port), "--resolve", "api.test=127.0.0.1")
		if strings.Contains(r.stdout, "DID-ENV") || exists(filepath.Join(f.work, ".env")) {
			t.Errorf("the sandbox made .env:\n%s", r)
		}
		if !strings.Contains(r.stdout, "MADE") || !exists(filepath.Join(f.work, "d/e/ok")) {
			t.Errorf("a neighbour was not made:\n%s", r)
		}
		if c := cases(r.stdout); c["direct"] != "200" {
			t.Errorf("curl direct: %q, want 200\n%s", c["direct"], r)
		}
	})
}
