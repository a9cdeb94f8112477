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
// host's /tmp, /var/tmp and /dev/shm and links into them, symlinks, '..'
// after a symlink, nested git folders, system files, programs through
// symlinked folders such as /bin) under random skill permissions (globs
// narrower than the kernel's rule among them), in a work dir under /tmp
// or under /var/tmp, asks corral check about each and does each through
// corral exec, and fails where they disagree. A read or write is about
// the host's file: check allows it (or says a command could still do it)
// exactly when the sandbox can reach that file (through the real path;
// where check denies, neither the path as written nor the real one may
// reach it). Seeded and reproducible: CORRAL_CHECKPROP_SEED=N replays a
// run, CORRAL_CHECKPROP_CASES=N sets the count (default 150).
func TestCheckProperty(t *testing.T) {
	attack(t, "check", "random file operations: check and exec agree")
	seed, cases := propSeed(t, 150)
	// Half the cases as root, half as nobody, each from its own stream.
	users(t, func(t *testing.T, u user) {
		rng := propRand(seed, u)
		// The same fixture in a work dir under /tmp, where the
		// sandbox's own /tmp is, and under /var/tmp.
		worlds := []*propWorld{newPropWorld(t, u, func(name string) string { return newDir(t, u, name) }),
			newPropWorld(t, u, func(name string) string { return varTmpDir(t, u, name) })}
		deadline := time.Now().Add(90 * time.Second)
		i := 0
		for ; i < (cases+1)/2 && time.Now().Before(deadline); i++ {
			k := rng.IntN(len(worlds))
			w, other := worlds[k], worlds[1-k]
			c := w.randomCase(rng)
			a, msg := w.run(t, c)
			if msg != "" {
				t.Errorf("case %d (seed %d, %s): %s\n  permissions:\n%s", i, seed, u.name, msg, c.perms)
			}
			// The same case in the other world gets the same answer: a
			// work dir under /tmp answers as one under /var/tmp.
			twin := other.twin(c, w)
			if b := other.ask(t, twin); b.Action != a.Action || canDo(b) != canDo(a) {
				t.Errorf("case %d (seed %d, %s): %s %s in %s is %s (%s), in %s %s (%s)\n  permissions:\n%s", i, seed, u.name,
					c.op, c.path, w.work, a.Action, a.Reason, other.work, b.Action, b.Reason, c.perms)
			}
		}
		t.Logf("%d cases", i)
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

// canDo reports whether check says a sandboxed command can do it: an
// allow, or a deny because a glob is narrower than the kernel's rule (a
// write glob like $WORK_DIR/**/*.md), which says the command could still
// do it.
func canDo(a checkAnswer) bool {
	return a.Action == "allow" || strings.Contains(a.Reason, "a sandboxed command could still do it")
}

// full is the case's path, absolute.
func (w *propWorld) full(c propCase) string {
	if filepath.IsAbs(c.path) {
		return c.path
	}
	return w.work + "/" + c.path // not Join: '..' must stay after the link
}

// ask asks check about the case, under a skill of its own.
func (w *propWorld) ask(t *testing.T, c propCase) checkAnswer {
	t.Helper()
	w.n++
	skill := writeSkill(t, w.skills, fmt.Sprintf("prop%d", w.n), c.perms)
	kind, arg := c.op, c.path
	switch c.op {
	case "create":
		kind = "write"
	case "exec":
		arg = w.full(c) + " " + strings.Join(c.argv, " ")
	}
	a := askCheck(t, w.u, w.work, []string{skill}, kind, arg)
	a.skill = skill
	return a
}

// run does one case through check and exec and returns check's answer
// and what disagreed.
func (w *propWorld) run(t *testing.T, c propCase) (checkAnswer, string) {
	t.Helper()
	u := w.u
	full := w.full(c)
	real := realPath(full)
	probe := w.probe
	if c.perms == "" {
		probe = filepath.Join(w.work, "tool") // the default sandbox grants only the work dir
	}
	a := w.ask(t, c)
	skill := a.skill
	allowed := canDo(a)
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
			w.unquarantine(t)
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
		r := u.exec(t, w.work, []string{skill}, append([]string{full}, c.argv...)...)
		reached = strings.Contains(r.stdout, "OK ran")
		detail = r.output()
		// The same class of refusal: not there (127) or not permitted.
		if a.Action == "deny" && a.NotFound != (r.code == 127) {
			return a, fmt.Sprintf("exec %s (real %s): check says deny, not_found=%v (%s), exec exits %d:\n%s", c.path, real, a.NotFound, a.Reason, r.code, detail)
		}
	}
	if allowed != reached {
		return a, fmt.Sprintf("%s %s (real %s): check says %s (%s), exec %s:\n%s", c.op, c.path, real, a.Action, a.Reason, map[bool]string{true: "reached it", false: "did not"}[reached], detail)
	}
	return a, ""
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
