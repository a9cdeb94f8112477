//go:build linux

package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainOnHostPATH: without an exec list, a toolchain the caller's
// PATH finds in a folder the system baseline can read (Go in
// /usr/local/go/bin) runs in the sandbox by its name, with its tree
// readable, and the folder is on the command's PATH; a folder of the
// caller's PATH outside the baseline is not; an exec list keeps the
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
		path := "PATH=/nonexistent/bin:" + dir + ":/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
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
		if strings.Contains(r.stdout, "/nonexistent") || strings.Contains(r.stdout, ".cargo") {
			t.Errorf("a folder outside the baseline is on the sandbox's PATH:\n%s", r)
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
