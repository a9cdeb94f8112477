package usernotif

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// chmodStep is one mode change the child makes; step.Op names the
// syscall: "chmod", "fchmodat", "fchmodat2" or "fchmod".
type chmodStep struct {
	Chdir     string // chdir here first
	Dir       string // open this (O_PATH) as the dirfd; "" is AT_FDCWD
	Open      string // open this and pass its fd (fchmod, AT_EMPTY_PATH)
	OpenFlags int
	Unlink    bool   // unlink Open once it is open
	FD        int    // pass this fd instead (fchmod, dirfd), when not 0
	Path      string // "{fd}" becomes Open's fd
	NullPath  bool
	Mode      uint64
	Flags     uint64
}

// chmodRace exchanges Flip and Other (a folder and a symlink) in one
// thread while another chmods Path Attempts times.
type chmodRace struct {
	Flip, Other, Path string
	Attempts          int
}

// runChmod makes c's syscall and returns its errno (-1: the setup failed).
func runChmod(op string, c chmodStep) int {
	if c.Chdir != "" && os.Chdir(c.Chdir) != nil {
		return -1
	}
	dirfd, fd := unix.AT_FDCWD, -1
	if c.Dir != "" {
		d, err := unix.Open(c.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		defer unix.Close(d)
		dirfd = d
	}
	if c.Open != "" {
		f, err := unix.Open(c.Open, c.OpenFlags|unix.O_CLOEXEC, 0)
		if err != nil || (c.Unlink && os.Remove(c.Open) != nil) {
			return -1
		}
		defer unix.Close(f)
		dirfd, fd = f, f
	}
	if c.FD != 0 {
		dirfd, fd = c.FD, c.FD
	}
	path := strings.ReplaceAll(c.Path, "{fd}", strconv.Itoa(fd))
	return int(chmodSyscall(op, dirfd, fd, path, c))
}

// chmodSyscall is the raw syscall, every argument as given.
func chmodSyscall(op string, dirfd, fd int, path string, c chmodStep) unix.Errno {
	buf := append([]byte(path), 0)
	p := uintptr(unsafe.Pointer(&buf[0]))
	if c.NullPath {
		p = 0
	}
	var e unix.Errno
	switch op {
	case "chmod":
		if sysChmod < 0 { // no chmod here: the same call by fchmodat (dirfd is AT_FDCWD)
			_, _, e = unix.Syscall(unix.SYS_FCHMODAT, uintptr(dirfd), p, uintptr(c.Mode))
		} else {
			nr := int64(sysChmod) // a variable: -1 elsewhere is no uintptr constant
			_, _, e = unix.Syscall(uintptr(nr), p, uintptr(c.Mode), 0)
		}
	case "fchmodat":
		_, _, e = unix.Syscall6(unix.SYS_FCHMODAT, uintptr(dirfd), p, uintptr(c.Mode), 0, 0, 0)
	case "fchmodat2":
		_, _, e = unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(dirfd), p, uintptr(c.Mode), uintptr(c.Flags), 0, 0)
	case "fchmod":
		_, _, e = unix.Syscall(unix.SYS_FCHMOD, uintptr(fd), uintptr(c.Mode), 0)
	}
	runtime.KeepAlive(buf)
	return e
}

// runChmodRace counts the errnos of the chmods while the path flips.
func runChmodRace(r chmodRace) map[int]int {
	errnos := map[int]int{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		runtime.LockOSThread()
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, r.Flip, unix.AT_FDCWD, r.Other, unix.RENAME_EXCHANGE)
		}
	})
	for range r.Attempts {
		errnos[runChmod("chmod", chmodStep{Path: r.Path, Mode: 0o755})]++
	}
	stop.Store(true)
	wg.Wait()
	return errnos
}

// --- parent side ---

// chmodCase is a step and what it must leave: its errno and File's mode.
type chmodCase struct {
	st    step
	errno unix.Errno
	file  string
	mode  os.FileMode // File's permission bits after
}

// tree is the folders of the chmod tests, all real paths: ws is the one
// writable folder; out, ws2 and the rest are not.
type tree struct{ root, ws, out, ws2 string }

func newTree(t *testing.T) tree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{root: root, ws: filepath.Join(root, "ws"), out: filepath.Join(root, "out"), ws2: filepath.Join(root, "ws2")}
	for _, d := range []string{tr.ws, tr.out, tr.ws2} {
		mkdir(t, d)
	}
	return tr
}

func mkdir(t *testing.T, d string) string {
	t.Helper()
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// file makes a file with mode 0600 (whatever the umask).
func file(t *testing.T, p string) string {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func chmodOp(name, op string, c chmodStep) step {
	return step{Name: name, Op: op, Chmod: &c}
}

// runConfig runs spec in a child under a Supervisor of cfg.
func (h *harness) runConfig(t *testing.T, spec childSpec, cfg Config) (childOutput, *Supervisor) {
	t.Helper()
	c := startChild(t, spec)
	cfg.Log = h.log
	s, err := StartConfig(c.listener, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := c.wait(t)
	s.Stop()
	return out, s
}

// allowedChmods must change the mode, by every syscall and path form.
func allowedChmods(t *testing.T, tr tree) []chmodCase {
	ws := tr.ws
	f := func(name string) string { return file(t, filepath.Join(ws, name)) }
	return []chmodCase{
		{chmodOp("absolute", "chmod", chmodStep{Path: f("abs"), Mode: 0o755}), 0, filepath.Join(ws, "abs"), 0o755},
		{chmodOp("relative", "chmod", chmodStep{Chdir: ws, Path: filepath.Base(f("rel")), Mode: 0o750}), 0, filepath.Join(ws, "rel"), 0o750},
		{chmodOp("fchmodat-dirfd", "fchmodat", chmodStep{Dir: ws, Path: filepath.Base(f("at")), Mode: 0o740}), 0, filepath.Join(ws, "at"), 0o740},
		{chmodOp("fchmodat2-dirfd", "fchmodat2", chmodStep{Dir: ws, Path: filepath.Base(f("at2")), Mode: 0o741}), 0, filepath.Join(ws, "at2"), 0o741},
		{chmodOp("fchmod", "fchmod", chmodStep{Open: f("fd"), Mode: 0o705}), 0, filepath.Join(ws, "fd"), 0o705},
		{chmodOp("empty-path", "fchmodat2", chmodStep{Open: f("empty"), OpenFlags: unix.O_PATH, Flags: unix.AT_EMPTY_PATH, Mode: 0o704}), 0, filepath.Join(ws, "empty"), 0o704},
		{chmodOp("proc-self-fd", "chmod", chmodStep{Open: f("proc"), OpenFlags: unix.O_PATH, Path: "/proc/self/fd/{fd}", Mode: 0o701}), 0, filepath.Join(ws, "proc"), 0o701},
		{chmodOp("folder", "chmod", chmodStep{Path: mkdir(t, filepath.Join(ws, "dir")), Mode: 0o711}), 0, filepath.Join(ws, "dir"), 0o711},
		{chmodOp("file-type-bits", "chmod", chmodStep{Path: f("type"), Mode: unix.S_IFREG | 0o640}), 0, filepath.Join(ws, "type"), 0o640},
		{chmodOp("over-16-bits", "chmod", chmodStep{Path: f("wide"), Mode: 1<<16 | 0o644}), 0, filepath.Join(ws, "wide"), 0o644},
		{chmodOp("fchmodat-4th-arg", "fchmodat", chmodStep{Path: f("four"), Flags: unix.AT_SYMLINK_NOFOLLOW, Mode: 0o604}), 0, filepath.Join(ws, "four"), 0o604},
	}
}

// refusedChmods must leave the mode as it was (0600, or 0700 for a folder).
func refusedChmods(t *testing.T, tr tree) []chmodCase {
	ws, secret := tr.ws, file(t, filepath.Join(tr.out, "secret"))
	link := symlink(t, secret, filepath.Join(ws, "link"))
	special, nobody, gone := file(t, filepath.Join(ws, "special")), file(t, filepath.Join(ws, "nobody")), file(t, filepath.Join(ws, "gone"))
	if err := os.Chown(nobody, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	dir := mkdir(t, filepath.Join(ws, "sticky"))
	return []chmodCase{
		{chmodOp("outside", "chmod", chmodStep{Path: secret, Mode: 0o666}), unix.EPERM, secret, 0o600},
		{chmodOp("string-prefix", "chmod", chmodStep{Path: file(t, filepath.Join(tr.ws2, "f")), Mode: 0o666}), unix.EPERM, filepath.Join(tr.ws2, "f"), 0o600},
		{chmodOp("symlink-out", "chmod", chmodStep{Path: link, Mode: 0o666}), unix.EPERM, secret, 0o600},
		{chmodOp("symlink-nofollow", "fchmodat2", chmodStep{Path: link, Flags: unix.AT_SYMLINK_NOFOLLOW, Mode: 0o666}), unix.EOPNOTSUPP, secret, 0o600},
		{chmodOp("dot-dot", "chmod", chmodStep{Chdir: ws, Path: "../out/secret", Mode: 0o666}), unix.EPERM, secret, 0o600},
		{chmodOp("fchmod-outside", "fchmod", chmodStep{Open: secret, Mode: 0o666}), unix.EPERM, secret, 0o600},
		{chmodOp("empty-path-outside", "fchmodat2", chmodStep{Open: secret, Flags: unix.AT_EMPTY_PATH, Mode: 0o666}), unix.EPERM, secret, 0o600},
		{chmodOp("setuid", "chmod", chmodStep{Path: special, Mode: 0o4755}), unix.EPERM, special, 0o600},
		{chmodOp("setgid", "fchmodat", chmodStep{Path: special, Mode: 0o2755}), unix.EPERM, special, 0o600},
		{chmodOp("sticky", "chmod", chmodStep{Path: dir, Mode: 0o1777}), unix.EPERM, dir, 0o700},
		{chmodOp("setuid-fchmod", "fchmod", chmodStep{Open: special, Mode: 0o4700}), unix.EPERM, special, 0o600},
		{chmodOp("other-owner", "chmod", chmodStep{Path: nobody, Mode: 0o666}), unix.EPERM, nobody, 0o600},
		{chmodOp("deleted", "fchmod", chmodStep{Open: gone, Unlink: true, Mode: 0o666}), unix.EPERM, "", 0},
		{chmodOp("bad-flags", "fchmodat2", chmodStep{Path: special, Flags: unix.AT_REMOVEDIR, Mode: 0o644}), unix.EINVAL, special, 0o600},
		{chmodOp("missing", "chmod", chmodStep{Path: filepath.Join(ws, "missing"), Mode: 0o644}), unix.ENOENT, "", 0},
		{chmodOp("empty-path", "chmod", chmodStep{Chdir: ws, Mode: 0o777}), unix.ENOENT, ws, 0o700},
		{chmodOp("null-path", "chmod", chmodStep{NullPath: true, Mode: 0o644}), unix.EFAULT, "", 0},
		{chmodOp("fchmod-o-path", "fchmod", chmodStep{Open: special, OpenFlags: unix.O_PATH, Mode: 0o644}), unix.EBADF, special, 0o600},
		{chmodOp("fchmod-no-fd", "fchmod", chmodStep{FD: 9999, Mode: 0o644}), unix.EBADF, "", 0},
		{chmodOp("dirfd-no-fd", "fchmodat", chmodStep{FD: 9999, Path: "special", Mode: 0o644}), unix.EBADF, special, 0o600},
		{chmodOp("dirfd-not-dir", "fchmodat", chmodStep{Open: special, Path: "x", Mode: 0o644}), unix.ENOTDIR, special, 0o600},
	}
}

// TestChmod runs every mode change in one child and checks each errno
// and, by stat, each file's mode; then the log and Stats.
func TestChmod(t *testing.T) {
	skipUnlessRoot(t)
	h, tr := newHarness(t), newTree(t)
	cases := append(allowedChmods(t, tr), refusedChmods(t, tr)...)
	// With no proxy, a connect is refused too.
	cases = append(cases, chmodCase{st: tcp4("no-proxy", 0, sockaddr4(h.proxy)), errno: unix.EPERM})
	var spec childSpec
	for _, c := range cases {
		spec.Steps = append(spec.Steps, c.st)
	}
	out, s := h.runConfig(t, spec, Config{Writable: []string{tr.ws}})
	if len(out.Steps) != len(cases) {
		t.Fatalf("child ran %d steps, want %d", len(out.Steps), len(cases))
	}
	refused := 0
	for i, c := range cases {
		checkChmod(t, c, unix.Errno(out.Steps[i].Errno))
		if c.errno != 0 {
			refused++
		}
	}
	// The C library may connect on its own in the child (to nscd, say,
	// on a host that runs it): those refusals are logged and counted
	// too, and only they may come on top of the cases'.
	lines := h.logLines()
	extra := 0
	for _, l := range lines {
		if strings.Contains(l, "connect to") {
			extra++
		}
	}
	extra = max(0, extra-1) // the no-proxy case's own
	if a, r := s.Stats(); a != len(cases)-refused || r != refused+extra {
		t.Errorf("Stats = %d, %d; want %d, %d", a, r, len(cases)-refused, refused+extra)
	}
	checkChmodLog(t, lines, refused+extra, tr)
}

func checkChmod(t *testing.T, c chmodCase, errno unix.Errno) {
	t.Helper()
	if errno != c.errno {
		t.Errorf("%s: errno %v, want %v", c.st.Name, errno, c.errno)
	}
	if c.file == "" {
		return
	}
	fi, err := os.Lstat(c.file)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky); got != c.mode {
		t.Errorf("%s: %s has mode %v, want %v", c.st.Name, c.file, got, c.mode)
	}
}

func checkChmodLog(t *testing.T, lines []string, want int, tr tree) {
	t.Helper()
	if len(lines) != want {
		t.Errorf("%d log lines, want one per refusal (%d): %q", len(lines), want, lines)
	}
	all := strings.Join(lines, "\n")
	for _, s := range []string{strconv.Quote(filepath.Join(tr.out, "secret")) + " is not in a writable path", "setuid, setgid and sticky", "owned by uid 65534"} {
		if !strings.Contains(all, s) {
			t.Errorf("log does not say %s: %q", s, lines)
		}
	}
}

// TestChmodTOCTOU exchanges a path component between a folder in the
// writable path and a symlink to a folder out of it while chmodding
// through it: the file outside must keep its mode.
func TestChmodTOCTOU(t *testing.T) {
	skipUnlessRoot(t)
	h, tr := newHarness(t), newTree(t)
	flip := mkdir(t, filepath.Join(tr.ws, "flip"))
	file(t, filepath.Join(flip, "f"))
	secret := file(t, filepath.Join(tr.out, "f"))
	other := symlink(t, tr.out, filepath.Join(tr.ws, "other"))
	r := &chmodRace{Flip: flip, Other: other, Path: filepath.Join(flip, "f"), Attempts: 300}
	out, _ := h.runConfig(t, childSpec{ChmodRace: r}, Config{Writable: []string{tr.ws}})
	t.Logf("race errnos: %v", out.Chmod)
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file outside: %v, %v; want mode 0600", fi.Mode(), err)
	}
	for e, n := range out.Chmod {
		if e != 0 && unix.Errno(e) != unix.EPERM {
			t.Errorf("%d chmods failed with %v", n, unix.Errno(e))
		}
	}
	// Both sides must have been seen, or the flipping proved nothing.
	if out.Chmod[0] == 0 || out.Chmod[int(unix.EPERM)] == 0 {
		t.Errorf("the flips were not observed: %v", out.Chmod)
	}
}

// TestLogCap refuses more than maxLogged times: the log stops at
// maxLogged lines and one saying so, and Stats still counts all.
func TestLogCap(t *testing.T) {
	skipUnlessRoot(t)
	h := newHarness(t)
	var spec childSpec
	for i := range maxLogged + 36 {
		spec.Steps = append(spec.Steps, step{Name: fmt.Sprint(i), Op: "getpriority"})
	}
	_, s := h.run(t, spec)
	lines := h.logLines()
	if len(lines) != maxLogged+1 || lines[maxLogged] != "more refusals not logged" {
		t.Errorf("%d log lines, last %q; want %d and a last saying more were not", len(lines), lines[len(lines)-1], maxLogged+1)
	}
	// A call a signal interrupts is notified again when it restarts (a
	// slow VM's timer does it): more refusals than calls, never fewer.
	if _, r := s.Stats(); r < len(spec.Steps) {
		t.Errorf("refused %d, want at least %d", r, len(spec.Steps))
	}
}

func TestWithin(t *testing.T) {
	roots := []string{"/ws", "/a/file"}
	for p, want := range map[string]bool{
		"/ws": true, "/ws/x": true, "/ws/x/y": true, "/a/file": true,
		"/ws2": false, "/ws2/x": false, "/w": false, "/": false, "/a": false, "/a/file2": false,
		"ws/x": false, "pipe:[7]": false, "": false,
	} {
		if got := within(p, roots); got != want {
			t.Errorf("within(%q) = %v, want %v", p, got, want)
		}
	}
	if !within("/etc", []string{"/"}) || within("anon_inode:[x]", []string{"/"}) {
		t.Error("the root as a writable path")
	}
}

func TestInTarget(t *testing.T) {
	for in, want := range map[string]string{
		"/proc/self/fd/3":        "/proc/42/fd/3",
		"/proc/self":             "/proc/42",
		"/proc/thread-self/fd/3": "/proc/42/fd/3",
		"/proc/selfish":          "/proc/selfish",
		"/proc/1/fd/3":           "/proc/1/fd/3",
		"proc/self/fd/3":         "proc/self/fd/3",
	} {
		if got := inTarget(in, 42); got != want {
			t.Errorf("inTarget(%q) = %q, want %q", in, got, want)
		}
	}
}
