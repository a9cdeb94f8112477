//go:build linux

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestToolchainOnHostPATH: without an exec list, a toolchain the caller's
// PATH finds in a folder the system baseline can read (Go in
// /usr/local/go/bin) runs in the sandbox by its name, with its tree
// readable, and the folder is on the command's PATH; a missing folder of
// the caller's PATH is not; an exec list that does not name go keeps the
// sandbox's own PATH (issue 28, item 2).
func TestToolchainOnHostPATH(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on this PATH")
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	dir := filepath.Dir(goBin)
	if dir == "/usr/bin" || dir == "/bin" || dir == "/usr/local/bin" {
		t.Skip("go is in the sandbox's own PATH here (" + dir + "): nothing to add")
	}
	if !strings.HasPrefix(dir, "/usr/") {
		t.Skip("go is outside the system baseline here (" + dir + ")")
	}
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		skills := newDir(t, u, "skills")
		plain := writeSkill(t, skills, "plain", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		listed := writeSkill(t, skills, "listed", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh]\n")
		path := "PATH=/nonexistent/bin:" + dir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		env := []string{path, "LANG=C.UTF-8", "HOME=" + baseDir}
		run := func(sk string, argv ...string) result {
			args := append([]string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--"}, argv...)
			return u.run(t, runOpts{args: args, dir: work, env: env})
		}
		if r := run(plain, "go", "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "go version") {
			t.Errorf("go by its name:\n%s", r)
		}
		r := run(plain, "sh", "-c", `echo "PATH=$PATH"; go list -f '{{.Dir}}' runtime`)
		if r.code != 0 || !strings.Contains(r.stdout, ":"+dir+"\n") || !strings.Contains(r.stdout, "/src/runtime") {
			t.Errorf("the sandbox's PATH should end with %s, and GOROOT be readable:\n%s", dir, r)
		}
		if strings.Contains(r.stdout, "/nonexistent") {
			t.Errorf("a missing folder is on the sandbox's PATH:\n%s", r)
		}
		c := u.run(t, runOpts{args: []string{"check", "--skill", plain, "--work-dir", work, "exec", "go version"}, dir: work, env: env})
		if c.code != 0 {
			t.Errorf("check exec go version:\n%s", c)
		}
		if r := run(listed, "sh", "-c", `echo "PATH=$PATH"`); r.code != 0 || strings.Contains(r.stdout, dir) {
			t.Errorf("with an exec list the PATH is the sandbox's own:\n%s", r)
		}
	})
}

// toolchainBase is a folder outside the ones the sandbox hides (/tmp) in
// which a test can install a toolchain the other test user can read too.
func toolchainBase(t *testing.T) string {
	t.Helper()
	base := "/opt"
	if !isRoot {
		base = os.Getenv("HOME")
	}
	if base == "" || strings.HasPrefix(base, "/tmp") {
		t.Skip("no folder outside /tmp to install a toolchain in")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Skipf("cannot make %s: %v", base, err)
	}
	d, err := os.MkdirTemp(base, "corral-e2e-toolchain-")
	if err != nil {
		t.Skipf("cannot make a folder in %s: %v", base, err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestToolchainOutsideBaseline: a folder of the caller's PATH outside the
// system baseline (an nvm node, a Go in /opt) runs in the sandbox by its
// program's name, with and without an exec list, with the tree around its
// bin folder readable and executable (a helper in its lib runs) but never
// writable, and never the tree's etc, conf or var (a global npmrc may
// hold a token, a service's socket lives in var/run), nor what fs.deny
// carves out; a folder inside the work dir, or a link to a file there, is
// not a toolchain: under an exec list its program is not found (issue 28,
// item 2).
func TestToolchainOutsideBaseline(t *testing.T) {
	base := toolchainBase(t)
	tc := filepath.Join(base, "versions", "v1")
	writeFile(t, filepath.Join(tc, "bin", "tctool"), "#!/bin/sh\necho tool ran\ncat "+tc+"/lib/data.txt\n"+tc+"/lib/helpers/helper\n", 0o755)
	writeFile(t, filepath.Join(tc, "lib", "helpers", "helper"), "#!/bin/sh\necho helper ran\n", 0o755)
	writeFile(t, filepath.Join(tc, "lib", "data.txt"), "tree data\n", 0o644)
	writeFile(t, filepath.Join(tc, "etc", "npmrc"), "//registry.example/:_authToken=SECRET-TOKEN\n", 0o644)
	writeFile(t, filepath.Join(tc, "conf", "users.xml"), "password=SECRET-TOKEN\n", 0o644)
	if err := os.MkdirAll(filepath.Join(tc, "var", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	users(t, func(t *testing.T, u user) {
		// A service's socket in the tree (linuxbrew's var, /opt/x/var/run).
		sock := listenSink(t, "unix", filepath.Join(tc, "var", "run", "ctl-"+u.name+".sock"))
		sock.control(t, "connect-unix")
		work := newDir(t, u, "work")
		writeFile(t, filepath.Join(work, "tools", "bin", "worktool"), "#!/bin/sh\necho PWNED\n", 0o755)
		writeFile(t, filepath.Join(work, "evil"), "#!/bin/sh\necho PWNED\n", 0o755)
		installProbe(t, work)
		own(t, u, work)
		// A folder of the caller's PATH outside the work dir whose
		// program is a link to a file the command may rewrite.
		links := filepath.Join(base, "links-"+u.name)
		if err := os.MkdirAll(links, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(work, "evil"), filepath.Join(links, "linktool")); err != nil {
			t.Fatal(err)
		}
		// A folder on the PATH not named bin could be anything (a home
		// folder, ~/.ssh): nothing in it is given.
		odd := filepath.Join(base, "odd-"+u.name)
		writeFile(t, filepath.Join(odd, "id_ed25519"), "SECRET-TOKEN\n", 0o644)
		skills := newDir(t, u, "skills")
		plain := writeSkill(t, skills, "plain", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		listed := writeSkill(t, skills, "listed", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [tctool, worktool, linktool, sh, cat]\n")
		denied := writeSkill(t, skills, "denied", "  fs:\n    write: [\"$WORK_DIR/**\"]\n    deny: [\""+tc+"/lib/**\"]\n")
		env := []string{"PATH=/usr/local/bin:/usr/bin:/bin:" + filepath.Join(work, "tools", "bin") + ":" + links + ":" + filepath.Join(tc, "bin"), "LANG=C.UTF-8", "HOME=" + baseDir}
		env[0] += ":" + odd
		run := func(sk string, argv ...string) result {
			args := append([]string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--"}, argv...)
			return u.run(t, runOpts{args: args, dir: work, env: env})
		}
		attack(t, "filesystem", "read a folder of the caller's PATH that is not a folder of programs")
		if r := run(plain, "cat", filepath.Join(odd, "id_ed25519")); strings.Contains(r.stdout, "SECRET-TOKEN") {
			t.Errorf("%s, on the caller's PATH, is readable:\n%s", odd, r)
		}
		attack(t, "filesystem", "reach a UNIX socket in a toolchain's tree")
		if r := run(plain, "./probe", "connect-unix", sock.addr); strings.Contains(r.stdout, "OK") || sock.sandboxArrivals(t, 1) != 0 {
			t.Errorf("the sandbox reached %s:\n%s", sock.addr, r)
		}
		attack(t, "filesystem", "read a toolchain's tree that fs.deny carves out")
		if r := run(denied, "cat", tc+"/lib/data.txt"); strings.Contains(r.stdout, "tree data") {
			t.Errorf("fs.deny of %s/lib/** did not hold in the toolchain's tree:\n%s", tc, r)
		}
		for _, sk := range []string{plain, listed} {
			name := filepath.Base(sk)
			attack(t, "filesystem", "a toolchain's tree opens its etc or is writable ("+name+")")
			if r := run(sk, "tctool"); r.code != 0 || !strings.Contains(r.stdout, "tool ran\ntree data\nhelper ran\n") {
				t.Errorf("%s: the toolchain's program by its name, its data and its helper should run:\n%s", name, r)
			}
			if r := run(sk, "sh", "-c", `echo "PATH=$PATH"`); !strings.Contains(r.stdout, ":"+filepath.Join(tc, "bin")+"\n") {
				t.Errorf("%s: the sandbox's PATH should end with the toolchain's bin:\n%s", name, r)
			}
			for _, secret := range []string{"etc/npmrc", "conf/users.xml"} {
				if r := run(sk, "cat", tc+"/"+secret); strings.Contains(r.stdout, "SECRET-TOKEN") || r.code == 0 {
					t.Errorf("%s: the toolchain's %s is readable:\n%s", name, secret, r)
				}
			}
			// Through a variable: the preflight refuses a literal write
			// target outside the grants before anything runs.
			r := run(sk, "sh", "-c", `d=$1; echo x >> "$d/lib/data.txt"; echo y > "$d/lib/new"`, "sh", tc)
			if b, _ := os.ReadFile(filepath.Join(tc, "lib", "data.txt")); string(b) != "tree data\n" || exists(filepath.Join(tc, "lib", "new")) {
				t.Errorf("%s: the toolchain's tree is writable (data.txt %q):\n%s", name, b, r)
			}
		}
		// A PATH folder that is a link to the toolchain's bin (SDKMAN's
		// java/current/bin): the sandbox's PATH names the real folder.
		current := filepath.Join(base, "current-"+u.name)
		if err := os.Symlink(filepath.Join(tc, "bin"), current); err != nil {
			t.Fatal(err)
		}
		for _, sk := range []string{plain, listed} {
			linked := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:" + current}, env[1:]...)
			r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--", "sh", "-c", "tctool"}, dir: work, env: linked})
			if r.code != 0 || !strings.Contains(r.stdout, "helper ran") {
				t.Errorf("%s: a toolchain on the PATH through a symlinked folder:\n%s", filepath.Base(sk), r)
			}
		}
		attack(t, "exec", "a program in the work dir found on the caller's PATH runs under an exec list")
		for _, prog := range []string{"worktool", "linktool"} {
			if r := run(listed, prog); r.code != 127 || strings.Contains(r.stdout, "PWNED") {
				t.Errorf("%s, in the work dir, ran as a toolchain's: exit %d, want 127\n%s", prog, r.code, r)
			}
		}
	})
}

// TestToolchainGoBuildUnderExecList: with exec: [go] and Go outside the
// sandbox's own PATH folders (/usr/local/go/bin), go build and go vet run:
// the compiler, linker and vet in GOROOT/pkg/tool are the toolchain's own,
// also where a read grant above GOROOT is bound noexec.
func TestToolchainGoBuildUnderExecList(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on this PATH")
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	dir := filepath.Dir(goBin)
	if dir == "/usr/bin" || dir == "/bin" {
		t.Skip("go is Debian's here (" + dir + "): its tree is the system's")
	}
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		writeFile(t, filepath.Join(work, "go.mod"), "module example.com/hello\n\ngo 1.21\n", 0o644)
		writeFile(t, filepath.Join(work, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n", 0o644)
		own(t, u, work)
		skills := newDir(t, u, "skills")
		sk := writeSkill(t, skills, "gobuild", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [go, sh]\n")
		env := []string{"PATH=/usr/local/bin:/usr/bin:/bin:" + dir, "LANG=C.UTF-8", "HOME=" + baseDir, "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0"}
		envRule := writeSkill(t, skills, "goenv", "  env: [GOFLAGS, CGO_ENABLED]\n")
		r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--skill", envRule, "--", "sh", "-c", "go vet ./... && go build -o hello . && echo built"},
			dir: work, env: env, timeout: 5 * time.Minute})
		if r.code != 0 || !strings.Contains(r.stdout, "built") {
			t.Fatalf("go vet and go build under exec: [go]:\n%s", r)
		}
		if out, err := exec.Command(filepath.Join(work, "hello")).Output(); err != nil || string(out) != "hello from go\n" {
			t.Errorf("the built program: %q, %v", out, err)
		}
		if !strings.HasPrefix(dir, "/usr/local/") {
			return
		}
		// A read grant above the tree is bound noexec with an exec
		// list: the toolchain's tree is bound again on top of it.
		wide := writeSkill(t, skills, "readlocal", "  fs:\n    read: [\"/usr/local/**\"]\n")
		r = u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--skill", envRule, "--skill", wide, "--", "go", "build", "-o", "hello2", "."},
			dir: work, env: env, timeout: 5 * time.Minute})
		if r.code != 0 {
			t.Errorf("go build under exec: [go] and a read grant of /usr/local/**:\n%s", r)
		}
	})
}
