//go:build linux

package tests

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// propWorld is the fixture every case of TestCheckProperty runs in.
type propWorld struct {
	u                            user
	skills                       string // one skill per case in it
	n                            int
	work, outside, pbin, probe   string
	tmpFile, varTmpFile, tmpTool string
	shmFile                      string // a file in the host's /dev/shm
	// content is each existing file's original content, by real path.
	content map[string]string
}

// newPropWorld makes the fixture in folders mk makes (under /tmp or
// /var/tmp).
func newPropWorld(t *testing.T, u user, mk func(name string) string) *propWorld {
	w := &propWorld{u: u, content: map[string]string{}}
	w.work = mk("work")
	w.outside = mk("outside")
	w.pbin = mk("pbin")
	w.skills = newDir(t, u, "skills")
	w.probe = installProbe(t, w.pbin)
	file := func(p string) {
		tok := token("content")
		writeFile(t, p, tok, 0o644)
		w.content[p] = tok
	}
	gitRepo(t, w.work, false)
	gitRepo(t, filepath.Join(w.work, "vendor", "lib"), false)
	gitRepo(t, filepath.Join(w.work, "sub", "inner"), true)
	for _, p := range []string{"a.txt", "sub/b.txt", "data/d.txt", ".bashrc", ".profile", ".git/hooks/pre-commit", "notes.md", "sub/notes.md"} {
		file(filepath.Join(w.work, p))
	}
	for _, p := range []string{".git/config", "vendor/lib/.git/config", "sub/inner/.git/config"} {
		w.content[filepath.Join(w.work, p)] = readFile(t, filepath.Join(w.work, p))
	}
	file(filepath.Join(w.outside, "s.txt"))
	file(filepath.Join(w.outside, "sub", "x.txt"))
	installProbe(t, w.work)
	if err := os.Rename(filepath.Join(w.work, "probe"), filepath.Join(w.work, "tool")); err != nil {
		t.Fatal(err)
	}
	installProbe(t, filepath.Join(w.work, "sub"))
	installProbe(t, w.outside)
	w.tmpFile = filepath.Join(os.TempDir(), token("corral-prop"))
	file(w.tmpFile)
	w.tmpTool = filepath.Join(os.TempDir(), token("corral-prop-tool"))
	writeFile(t, w.tmpTool, readFile(t, probeBin), 0o755)
	w.varTmpFile = filepath.Join("/var/tmp", token("corral-prop"))
	file(w.varTmpFile)
	w.shmFile = filepath.Join("/dev/shm", token("corral-prop"))
	file(w.shmFile)
	t.Cleanup(func() { os.Remove(w.tmpFile); os.Remove(w.tmpTool); os.Remove(w.varTmpFile); os.Remove(w.shmFile) })
	own(t, u, w.work, w.outside, w.pbin, w.tmpFile, w.tmpTool, w.varTmpFile, w.shmFile)
	for _, p := range []string{"/etc/passwd", "/etc/hosts", "/usr/lib/os-release", "/usr/bin/true"} {
		if b, err := os.ReadFile(p); err == nil {
			w.content[realPath(p)] = string(b)
		}
	}
	for link, target := range map[string]string{
		"l-a": "a.txt", "l-secret": filepath.Join(w.outside, "s.txt"), "l-git": ".git/config",
		"l-hooks": ".git/hooks", "l-tmp": w.tmpFile, "l-out": w.outside, "l-sub": "sub",
		"l-new": filepath.Join(w.outside, "sub", "made.txt"), "l-tool": "tool",
		"l-loop": "l-loop2", "l-loop2": "l-loop",
		"l-shm": w.shmFile, "l-shm-new": filepath.Join("/dev/shm", token("corral-prop-new")),
		"l-echo": "/bin/echo", "l-tmptool": w.tmpTool,
	} {
		if err := os.Symlink(target, filepath.Join(w.work, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(w.pbin, filepath.Join(w.outside, "l-pbin")); err != nil {
		t.Fatal(err)
	}
	return w
}

// propCase is one operation under one permission set.
type propCase struct {
	op    string   // read, write, create, exec
	path  string   // as asked: relative to the work dir, or absolute
	argv  []string // exec: the arguments, which make the program print "OK ran"
	perms string   // the permissions block ("" for the default sandbox)
}

func (w *propWorld) randomCase(rng *rand.Rand) propCase {
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	var c propCase
	c.op = pick([]string{"read", "read", "write", "create", "exec"})
	switch c.op {
	case "read", "write":
		c.path = pick([]string{"a.txt", "sub/b.txt", "data/d.txt", ".bashrc", ".profile", ".git/config",
			".git/hooks/pre-commit", "vendor/lib/.git/config", "sub/inner/.git/config", "l-a", "l-secret",
			"l-git", "l-tmp", "l-out/s.txt", "l-sub/../a.txt", "sub/../a.txt", "l-out/sub/../s.txt",
			"a.txt/../a.txt", "nosuch/../a.txt", "l-loop/x", "sub/inner/../b.txt", "notes.md", "sub/notes.md",
			"l-shm", w.shmFile,
			filepath.Join(w.outside, "s.txt"), filepath.Join(w.outside, "sub", "x.txt"), w.tmpFile, w.varTmpFile,
			"/etc/passwd", "/etc/hosts", "/usr/lib/os-release", "/usr/bin/true"})
	case "create":
		c.path = pick([]string{"new.txt", "sub/new.txt", "out/new.txt", "data/new.txt", ".git/hooks/post-merge",
			"sub/inner/.git/hooks/pre-commit", ".zshrc", "l-hooks/pre-push", "l-new", "l-sub/../new2.txt",
			"hack.sh", "sub/new.md", "l-shm-new", filepath.Join("/dev/shm", token("corral-prop-new")),
			filepath.Join(w.outside, "sub", "new.txt"), filepath.Join(os.TempDir(), token("corral-prop-new")),
			"/var/tmp/" + token("corral-prop-new")})
	case "exec":
		c.path = pick([]string{"tool", "sub/probe", "l-tool", "l-sub/probe", filepath.Join(w.outside, "probe"),
			filepath.Join(w.outside, "l-pbin", "probe"), w.tmpTool, "l-tmptool", "nothere",
			"/bin/echo", "/usr/bin/echo", "l-echo"})
		c.argv = []string{"echo", "ran"}
		if strings.HasSuffix(c.path, "echo") {
			c.argv = []string{"OK", "ran"}
		}
	}
	if rng.IntN(6) == 0 {
		return c // the default sandbox
	}
	var read, write []string
	for _, g := range []string{"$WORK_DIR/**", "$WORK_DIR/sub/**", "$WORK_DIR/a.txt", "$WORK_DIR/*.txt", "$WORK_DIR/**/*.md",
		w.outside + "/**", w.outside + "/s.txt"} {
		if rng.IntN(3) == 0 {
			read = append(read, strconv.Quote(g))
		}
	}
	for _, g := range []string{"$WORK_DIR/**", "$WORK_DIR/sub/**", "$WORK_DIR/out/**", "$WORK_DIR/**/*.md", w.outside + "/sub/**"} {
		if rng.IntN(3) == 0 {
			write = append(write, strconv.Quote(g))
		}
	}
	read = append(read, strconv.Quote(w.pbin+"/**")) // where the probe runs from
	c.perms = "  fs:\n    read: [" + strings.Join(read, ", ") + "]\n    write: [" + strings.Join(write, ", ") + "]\n"
	// The landlock tier refuses a run with an exec list (which would
	// end the subtest as held): it gets none.
	if rng.IntN(2) == 0 && e2eTier != "landlock" {
		exec := []string{w.probe}
		for _, p := range []string{filepath.Join(w.work, "tool"), filepath.Join(w.outside, "probe"), filepath.Join(w.work, "sub", "probe"), "echo"} {
			if rng.IntN(2) == 0 {
				exec = append(exec, p)
			}
		}
		c.perms += "  exec: [" + strings.Join(exec, ", ") + "]\n"
	}
	return c
}

// unquarantine puts back what the git sweep quarantined in the work dir
// after a write (the landlock tier sweeps what the command changed in a
// git folder or start-up file, and all of a hooks folder that gained a
// hook), so the next case starts from the fixture.
func (w *propWorld) unquarantine(t *testing.T) {
	t.Helper()
	filepath.WalkDir(w.work, func(p string, d os.DirEntry, err error) error {
		i := strings.LastIndex(p, ".corral-quarantined-")
		if err != nil || i < 0 {
			return nil
		}
		orig := p[:i]
		os.RemoveAll(orig) // what the command left there, if anything
		if err := os.Rename(p, orig); err != nil {
			t.Errorf("restoring the quarantined %s: %v", orig, err)
		}
		if d.Type().IsRegular() {
			os.Chmod(orig, 0o644)
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
}

// twin is c, made in world from, as it reads in w: the same relative
// paths, and w's folders and host files for from's.
func (w *propWorld) twin(c propCase, from *propWorld) propCase {
	r := strings.NewReplacer(from.work, w.work, from.outside, w.outside, from.pbin, w.pbin,
		from.tmpFile, w.tmpFile, from.tmpTool, w.tmpTool, from.varTmpFile, w.varTmpFile, from.shmFile, w.shmFile)
	c.path, c.perms = r.Replace(c.path), r.Replace(c.perms)
	return c
}
