//go:build linux

package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCheckProperty generates random file operations (read, write, create
// and run, on paths inside and outside grants, protected paths, the
// host's /tmp and /var/tmp, symlinks, '..' after a symlink, nested git
// folders, system files) under random skill permissions, asks corral
// check about each and does each through corral exec, and fails where
// they disagree. A read or write is about the host's file: check allows
// it exactly when the sandbox can reach that file (through the real path;
// where check denies, neither the path as written nor the real one may
// reach it). Seeded and reproducible: CORRAL_CHECKPROP_SEED=N replays a
// run, CORRAL_CHECKPROP_CASES=N sets the count (default 150).
func TestCheckProperty(t *testing.T) {
	attack(t, "check", "random file operations: check and exec agree")
	seed, cases := propSeed(t, 150)
	// Half the cases as root, half as nobody, each from its own stream.
	users(t, func(t *testing.T, u user) {
		rng := propRand(seed, u)
		w := newPropWorld(t, u)
		deadline := time.Now().Add(90 * time.Second)
		for i := 0; i < (cases+1)/2 && time.Now().Before(deadline); i++ {
			c := w.randomCase(rng)
			if msg := w.run(t, c); msg != "" {
				t.Errorf("case %d (seed %d, %s): %s\n  permissions:\n%s", i, seed, u.name, msg, c.perms)
			}
		}
	})
}

// propSeed is the property tests' seed (CORRAL_CHECKPROP_SEED, else
// the clock) and case count (CORRAL_CHECKPROP_CASES, else cases).
func propSeed(t *testing.T, cases int) (uint64, int) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CORRAL_CHECKPROP_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CORRAL_CHECKPROP_SEED: %v", err)
		}
	}
	if s := os.Getenv("CORRAL_CHECKPROP_CASES"); s != "" {
		cases, _ = strconv.Atoi(s)
	}
	t.Logf("seed %d (replay with CORRAL_CHECKPROP_SEED=%d)", seed, seed)
	return seed, cases
}

// propRand is u's own stream of the seed.
func propRand(seed uint64, u user) *rand.Rand {
	if u.unpriv {
		seed = ^seed
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// propWorld is the fixture every case runs in.
type propWorld struct {
	u                            user
	skills                       string // one skill per case in it
	n                            int
	work, outside, pbin, probe   string
	tmpFile, varTmpFile, tmpTool string
	// content is each existing file's original content, by real path.
	content map[string]string
}

func newPropWorld(t *testing.T, u user) *propWorld {
	w := &propWorld{u: u, content: map[string]string{}}
	w.work = newDir(t, u, "work")
	w.outside = newDir(t, u, "outside")
	w.pbin = newDir(t, u, "pbin")
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
	for _, p := range []string{"a.txt", "sub/b.txt", "data/d.txt", ".bashrc", ".profile", ".git/hooks/pre-commit"} {
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
	t.Cleanup(func() { os.Remove(w.tmpFile); os.Remove(w.tmpTool); os.Remove(w.varTmpFile) })
	own(t, u, w.work, w.outside, w.pbin, w.tmpFile, w.tmpTool, w.varTmpFile)
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
	} {
		if err := os.Symlink(target, filepath.Join(w.work, link)); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// propCase is one operation under one permission set.
type propCase struct {
	op    string // read, write, create, exec
	path  string // as asked: relative to the work dir, or absolute
	perms string // the permissions block ("" for the default sandbox)
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
			"a.txt/../a.txt", "nosuch/../a.txt", "l-loop/x", "sub/inner/../b.txt",
			filepath.Join(w.outside, "s.txt"), filepath.Join(w.outside, "sub", "x.txt"), w.tmpFile, w.varTmpFile,
			"/etc/passwd", "/etc/hosts", "/usr/lib/os-release", "/usr/bin/true"})
	case "create":
		c.path = pick([]string{"new.txt", "sub/new.txt", "out/new.txt", "data/new.txt", ".git/hooks/post-merge",
			"sub/inner/.git/hooks/pre-commit", ".zshrc", "l-hooks/pre-push", "l-new", "l-sub/../new2.txt",
			filepath.Join(w.outside, "sub", "new.txt"), filepath.Join(os.TempDir(), token("corral-prop-new")),
			"/var/tmp/" + token("corral-prop-new")})
	case "exec":
		c.path = pick([]string{"tool", "sub/probe", "l-tool", filepath.Join(w.outside, "probe"), w.tmpTool, "nothere"})
	}
	if rng.IntN(6) == 0 {
		return c // the default sandbox
	}
	var read, write []string
	for _, g := range []string{"$WORK_DIR/**", "$WORK_DIR/sub/**", "$WORK_DIR/a.txt", w.outside + "/**", w.outside + "/s.txt"} {
		if rng.IntN(3) == 0 {
			read = append(read, strconv.Quote(g))
		}
	}
	for _, g := range []string{"$WORK_DIR/**", "$WORK_DIR/sub/**", "$WORK_DIR/out/**", w.outside + "/sub/**"} {
		if rng.IntN(3) == 0 {
			write = append(write, strconv.Quote(g))
		}
	}
	read = append(read, strconv.Quote(w.pbin+"/**")) // where the probe runs from
	c.perms = "  fs:\n    read: [" + strings.Join(read, ", ") + "]\n    write: [" + strings.Join(write, ", ") + "]\n"
	if rng.IntN(2) == 0 {
		exec := []string{w.probe}
		for _, p := range []string{filepath.Join(w.work, "tool"), filepath.Join(w.outside, "probe"), filepath.Join(w.work, "sub", "probe")} {
			if rng.IntN(2) == 0 {
				exec = append(exec, p)
			}
		}
		c.perms += "  exec: [" + strings.Join(exec, ", ") + "]\n"
	}
	return c
}

// run does one case through check and exec and returns what disagreed.
func (w *propWorld) run(t *testing.T, c propCase) string {
	t.Helper()
	u := w.u
	w.n++
	skill := writeSkill(t, w.skills, fmt.Sprintf("prop%d", w.n), c.perms)
	full := c.path
	if !filepath.IsAbs(full) {
		full = w.work + "/" + c.path // not Join: '..' must stay after the link
	}
	real := realPath(full)
	kind := c.op
	if kind == "create" {
		kind = "write"
	}
	arg := c.path
	if c.op == "exec" {
		arg = full + " echo ran"
	}
	probe := w.probe
	if c.perms == "" {
		probe = filepath.Join(w.work, "tool") // the default sandbox grants only the work dir
	}
	a := askCheck(t, u, w.work, []string{skill}, kind, arg)
	allowed := a.Action == "allow"
	var reached bool
	var detail string
	switch c.op {
	case "read":
		want := w.content[real]
		r := u.exec(t, w.work, []string{skill}, probe, "read", full)
		var r2 result
		if real != "" {
			r2 = u.exec(t, w.work, []string{skill}, probe, "read", real)
		}
		reached = want != "" && (strings.Contains(r.stdout, want) || strings.Contains(r2.stdout, want))
		if allowed {
			reached = want != "" && strings.Contains(r2.stdout, want)
		}
		detail = r.stdout + r2.stdout
	case "write", "create":
		// Each write starts from the fixture as check saw it: a file
		// the first one created would be bound read-only in the second.
		restore := func() {
			if orig, ok := w.content[real]; ok {
				// Only a file the case changed is written back, in
				// place (its mode and owner kept): the fixture includes
				// host files such as /usr/bin/true and /etc/passwd,
				// which a correct sandbox never lets a case change.
				if cur, err := os.ReadFile(real); err != nil || string(cur) != orig {
					if err := os.WriteFile(real, []byte(orig), 0); err != nil {
						t.Errorf("restoring %s: %v", real, err)
					}
				}
			} else if st, err := os.Lstat(real); err == nil && st.Mode().IsRegular() {
				os.Remove(real) // made by the case (never a link of the fixture)
			}
		}
		tok1, tok2 := token("w1"), token("w2")
		var r2 result
		var b, b2 []byte
		if real != "" {
			r2 = u.exec(t, w.work, []string{skill}, probe, "write", real, tok2)
			b2, _ = os.ReadFile(real)
			restore()
		}
		r := u.exec(t, w.work, []string{skill}, probe, "write", full, tok1)
		if real != "" {
			b, _ = os.ReadFile(real)
			restore()
		}
		reached = string(b) == tok1 || string(b2) == tok2
		if allowed {
			reached = string(b2) == tok2
			// A grant that covers a folder which is not there (out/
			// under $WORK_DIR/**) lets the command make it: creating a
			// file in it fails with ENOENT, which is no refusal. (exec
			// makes the folder only for a grant of it as a whole, such
			// as $WORK_DIR/out/**.)
			if _, err := os.Stat(filepath.Dir(real)); !reached && real != "" && os.IsNotExist(err) &&
				strings.Contains(r2.stdout, "ERR ENOENT") && !strings.Contains(r2.stdout+r.stdout, "EACCES") {
				reached = true
			}
		}
		detail = r.stdout + r2.stdout
	case "exec":
		r := u.exec(t, w.work, []string{skill}, full, "echo", "ran")
		reached = strings.Contains(r.stdout, "OK ran")
		detail = r.output()
	}
	if allowed != reached {
		return fmt.Sprintf("%s %s (real %s): check says %s (%s), exec %s:\n%s", c.op, c.path, real, a.Action, a.Reason, map[bool]string{true: "reached it", false: "did not"}[reached], detail)
	}
	return ""
}

// realPath resolves p with the kernel: its folder is opened as written
// (O_PATH) and named by /proc/self/fd, and a symlink as the last
// component is followed as O_CREAT does, also a dangling one; a missing
// folder is kept as written. "" when the kernel cannot resolve the folder
// (a loop, '..' after a file or after a missing folder).
func realPath(p string) string {
	for hops := 0; hops < 40; hops++ {
		i := strings.LastIndexByte(p, '/')
		dir, base := p[:i], p[i+1:]
		if dir == "" {
			dir = "/"
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && base != ".." && !strings.Contains(dir, "/../") && !strings.HasSuffix(dir, "/..") {
			// A missing folder (out/, which exec makes for a grant of
			// it as a whole, or the command may make): the real path
			// of its parent, and the rest as written.
			parent := realPath(dir)
			if parent == "" {
				return ""
			}
			return filepath.Join(parent, base)
		}
		if err != nil {
			return ""
		}
		real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		unix.Close(fd)
		if err != nil {
			return ""
		}
		switch base {
		case "", ".":
			return real
		case "..":
			return filepath.Dir(real)
		}
		p = filepath.Join(real, base)
		target, err := os.Readlink(p)
		if err != nil {
			return p // not a symlink, or missing
		}
		if !filepath.IsAbs(target) {
			target = real + "/" + target
		}
		p = target
	}
	return ""
}
