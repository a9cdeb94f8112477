package usernotif

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// --- child side ---

// createStep is one call that may make a name: Op is the syscall's name
// ("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknodat",
// "symlink", "symlinkat", "link", "linkat", "rename", "renameat2").
type createStep struct {
	Op    string
	Chdir string // chdir here first
	Dir   string // opened as the dirfd (both dirfds); "" is AT_FDCWD
	Path  string // the new name
	Old   string // link and rename: the old name; symlink: the target
	Flags uint64
	Mode  uint64
}

// createRace flips one byte of Path's buffer between Good and Bad in one
// thread while another opens it with O_CREAT Attempts times.
type createRace struct {
	Dir, Good, Bad string // Good and Bad: names of the same length in Dir
	Attempts       int
}

// makeRightsAll is every make right, handled with no rule: the child can
// make no name anywhere by itself.
const makeRightsAll = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
	unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM

// noNames restricts the child's thread with a Landlock ruleset that
// handles the make rights and grants them nowhere, as corral does for a
// run with fs.deny in the landlock tier. childMain locks its goroutine to
// that thread first, and every step and the race's opens run there
// (AllThreadsSyscall is refused where cgo is linked in).
func noNames() error {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: makeRightsAll}
	// The first field is all an ABI 1 kernel knows.
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if e != 0 {
		return &osError{"landlock_create_ruleset", e}
	}
	defer unix.Close(int(fd))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &osError{"prctl(PR_SET_NO_NEW_PRIVS)", err}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return &osError{"landlock_restrict_self", e}
	}
	// No capability either, as the sandbox's command: the supervisor,
	// which holds none while it makes names, may then read this thread.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// createSyscalls are the calls the child's filter notifies with Create.
func createSyscalls() []uint32 {
	var out []uint32
	for _, nr := range []int64{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_SYMLINKAT,
		unix.SYS_LINKAT, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, sysOpen, sysCreat, sysMkdir, sysMknod, sysSymlink, sysLink, sysRename} {
		if nr >= 0 {
			out = append(out, uint32(nr))
		}
	}
	return out
}

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	return uintptr(unsafe.Pointer(&b[0]))
}

// runCreate makes c's syscall and returns its errno (-1: the setup
// failed). An fd it opens is closed.
func runCreate(c createStep) int {
	if c.Chdir != "" && os.Chdir(c.Chdir) != nil {
		return -1
	}
	dirfd := unix.AT_FDCWD
	if c.Dir != "" {
		d, err := unix.Open(c.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		defer unix.Close(d)
		dirfd = d
	}
	dfd := uintptr(dirfd)
	p, old := cstr(c.Path), cstr(c.Old)
	var r uintptr
	var e unix.Errno
	legacy := func(nr int64, a ...uintptr) {
		if nr < 0 { // not on this architecture
			e = unix.ENOSYS
			return
		}
		a = append(a, 0, 0, 0)
		r, _, e = unix.Syscall(uintptr(nr), a[0], a[1], a[2])
	}
	switch c.Op {
	case "open":
		legacy(sysOpen, p, uintptr(c.Flags), uintptr(c.Mode))
	case "creat":
		legacy(sysCreat, p, uintptr(c.Mode))
	case "mkdir":
		legacy(sysMkdir, p, uintptr(c.Mode))
	case "symlink":
		legacy(sysSymlink, old, p)
	case "link":
		legacy(sysLink, old, p)
	case "rename":
		legacy(sysRename, old, p)
	case "openat":
		r, _, e = unix.Syscall6(unix.SYS_OPENAT, dfd, p, uintptr(c.Flags), uintptr(c.Mode), 0, 0)
	case "openat2":
		how := unix.OpenHow{Flags: c.Flags, Mode: c.Mode}
		r, _, e = unix.Syscall6(unix.SYS_OPENAT2, dfd, p, uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	case "mkdirat":
		_, _, e = unix.Syscall(unix.SYS_MKDIRAT, dfd, p, uintptr(c.Mode))
	case "mknodat":
		_, _, e = unix.Syscall6(unix.SYS_MKNODAT, dfd, p, uintptr(c.Mode), 0, 0, 0)
	case "symlinkat":
		_, _, e = unix.Syscall(unix.SYS_SYMLINKAT, old, dfd, p)
	case "linkat":
		_, _, e = unix.Syscall6(unix.SYS_LINKAT, dfd, old, dfd, p, uintptr(c.Flags), 0)
	case "renameat2":
		_, _, e = unix.Syscall6(unix.SYS_RENAMEAT2, dfd, old, dfd, p, uintptr(c.Flags), 0)
	default:
		return -1
	}
	if e == 0 && (c.Op == "open" || c.Op == "creat" || c.Op == "openat" || c.Op == "openat2") {
		unix.Close(int(r))
	}
	return int(e)
}

// runCreateRace counts the errnos of the opens while the name flips.
func runCreateRace(r createRace) map[int]int {
	buf := append([]byte(filepath.Join(r.Dir, r.Good)), 0)
	i := len(buf) - 1 - len(r.Good) // where the names differ from
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for n := 0; !stop.Load(); n++ {
			name := r.Good
			if n%2 == 1 {
				name = r.Bad
			}
			copy(buf[i:], name)
		}
	}()
	out := map[int]int{}
	for range r.Attempts {
		at := unix.AT_FDCWD
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(at), uintptr(unsafe.Pointer(&buf[0])), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		out[int(e)]++
	}
	stop.Store(true)
	wg.Wait()
	runtime.KeepAlive(buf)
	return out
}

// --- parent side ---

// createTree: ws is writable (the make rights of a write grant), out is
// not; secret is the folder the deny func carves out, as .env anywhere.
type createTree struct{ root, ws, out, existing, pack string }

func newCreateTree(t *testing.T) createTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := createTree{root: root, ws: mkdir(t, filepath.Join(root, "ws")), out: mkdir(t, filepath.Join(root, "out"))}
	tr.existing = file(t, filepath.Join(tr.ws, "existing"))
	file(t, filepath.Join(tr.ws, "a"))
	file(t, filepath.Join(tr.ws, "b"))
	file(t, filepath.Join(tr.ws, "c"))
	tr.pack = mkdir(t, filepath.Join(tr.ws, "pack"))
	file(t, filepath.Join(tr.pack, "key"))
	mkdir(t, filepath.Join(tr.ws, "plain"))
	file(t, filepath.Join(tr.ws, "plain", "f"))
	symlink(t, mkdir(t, filepath.Join(tr.out, "sub")), filepath.Join(tr.ws, "up"))
	return tr
}

// createConfig allows what a write grant of ws allows and denies .env
// anywhere and everything in ws/secret.
func (tr createTree) config() Config {
	const all = unix.LANDLOCK_ACCESS_FS_REFER<<1 - 1 // ABI 2's rights
	return Config{Writable: []string{tr.ws}, Create: &CreatePolicy{
		Rules:   []Rule{{Path: tr.ws, Access: all}},
		Handled: all,
		Deny: func(p string) (string, bool) {
			switch {
			case filepath.Base(p) == ".env":
				return "/**/.env", true
			case p == filepath.Join(tr.ws, "secret") || strings.HasPrefix(p, filepath.Join(tr.ws, "secret")+"/"):
				return tr.ws + "/secret/**", true
			}
			return "", false
		},
	}}
}

type createCase struct {
	name  string
	st    createStep
	errno unix.Errno
	made  string // must exist afterwards ("": nothing to look at)
	never string // must not exist afterwards
}

func createCases(tr createTree) []createCase {
	ws, out := tr.ws, tr.out
	const wr = unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC
	j := filepath.Join
	cases := []createCase{
		{"openat new", createStep{Op: "openat", Path: j(ws, "new"), Flags: wr, Mode: 0o640}, 0, j(ws, "new"), ""},
		{"openat denied", createStep{Op: "openat", Path: j(ws, ".env"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"openat denied by dirfd", createStep{Op: "openat", Dir: ws, Path: "plain/.env", Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, "plain/.env")},
		{"openat denied relative", createStep{Op: "openat", Chdir: j(ws, "plain"), Path: "../.env", Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"openat denied through /proc/self/cwd", createStep{Op: "openat", Chdir: ws, Path: "/proc/self/cwd/.env", Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"openat denied folder", createStep{Op: "openat", Path: j(ws, "secret"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, "secret")},
		{"openat O_EXCL denied", createStep{Op: "openat", Path: j(ws, ".env"), Flags: wr | unix.O_EXCL, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"openat existing", createStep{Op: "openat", Path: tr.existing, Flags: wr}, 0, tr.existing, ""},
		{"openat O_EXCL existing", createStep{Op: "openat", Path: tr.existing, Flags: wr | unix.O_EXCL}, unix.EEXIST, "", ""},
		{"openat outside the grant", createStep{Op: "openat", Path: j(out, "new"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(out, "new")},
		// ".." after a symlink is resolved by the kernel, not cleaned
		// away: ws/up/.. is out, where nothing may be made.
		{"openat .. after a symlink", createStep{Op: "openat", Path: ws + "/up/../dotdot", Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, "dotdot")},
		{"openat no parent", createStep{Op: "openat", Path: j(ws, "nope/new"), Flags: wr, Mode: 0o644}, unix.ENOENT, "", ""},
		{"openat2 denied", createStep{Op: "openat2", Path: j(ws, ".env"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"openat2 new", createStep{Op: "openat2", Path: j(ws, "new2"), Flags: wr, Mode: 0o644}, 0, j(ws, "new2"), ""},
		{"mkdirat new", createStep{Op: "mkdirat", Path: j(ws, "dir") + "/", Mode: 0o755}, 0, j(ws, "dir"), ""},
		{"mkdirat denied", createStep{Op: "mkdirat", Path: j(ws, "secret"), Mode: 0o755}, unix.EACCES, "", j(ws, "secret")},
		{"mkdirat existing", createStep{Op: "mkdirat", Path: j(ws, "plain"), Mode: 0o755}, unix.EEXIST, "", ""},
		{"mkdirat outside", createStep{Op: "mkdirat", Path: j(out, "d"), Mode: 0o755}, unix.EACCES, "", j(out, "d")},
		{"mknodat fifo", createStep{Op: "mknodat", Path: j(ws, "fifo"), Mode: unix.S_IFIFO | 0o644}, 0, j(ws, "fifo"), ""},
		{"mknodat denied", createStep{Op: "mknodat", Path: j(ws, ".env"), Mode: unix.S_IFREG | 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"symlinkat new", createStep{Op: "symlinkat", Path: j(ws, "sl"), Old: ".env"}, 0, j(ws, "sl"), ""},
		{"symlinkat denied", createStep{Op: "symlinkat", Path: j(ws, ".env"), Old: "existing"}, unix.EACCES, "", j(ws, ".env")},
		{"open through a symlink to a denied name", createStep{Op: "openat", Path: j(ws, "sl"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
		{"linkat new", createStep{Op: "linkat", Old: tr.existing, Path: j(ws, "hl")}, 0, j(ws, "hl"), ""},
		{"linkat denied", createStep{Op: "linkat", Old: tr.existing, Path: j(ws, ".env")}, unix.EACCES, "", j(ws, ".env")},
		{"linkat into the denied folder", createStep{Op: "linkat", Old: tr.existing, Path: j(ws, "secret")}, unix.EACCES, "", j(ws, "secret")},
		{"renameat2 new", createStep{Op: "renameat2", Old: j(ws, "a"), Path: j(ws, "a2")}, 0, j(ws, "a2"), j(ws, "a")},
		{"renameat2 onto a denied name", createStep{Op: "renameat2", Old: j(ws, "b"), Path: j(ws, ".env")}, unix.EACCES, j(ws, "b"), j(ws, ".env")},
		{"renameat2 a folder to a denied one", createStep{Op: "renameat2", Old: tr.pack, Path: j(ws, "secret")}, unix.EACCES, tr.pack, j(ws, "secret")},
		{"renameat2 a folder holding a denied name", createStep{Op: "renameat2", Old: j(ws, "plain"), Path: j(ws, "plain2")}, 0, j(ws, "plain2"), ""},
		{"renameat2 exchange", createStep{Op: "renameat2", Old: j(ws, "c"), Path: tr.existing, Flags: unix.RENAME_EXCHANGE}, unix.EACCES, "", ""},
		{"renameat2 out of the grant", createStep{Op: "renameat2", Old: j(ws, "c"), Path: j(out, "c")}, unix.EACCES, j(ws, "c"), j(out, "c")},
	}
	if sysOpen >= 0 {
		cases = append(cases,
			createCase{"open denied", createStep{Op: "open", Path: j(ws, ".env"), Flags: wr, Mode: 0o644}, unix.EACCES, "", j(ws, ".env")},
			createCase{"creat denied", createStep{Op: "creat", Path: j(ws, "plain2/.env"), Mode: 0o644}, unix.EACCES, "", j(ws, "plain2/.env")},
			createCase{"creat new", createStep{Op: "creat", Path: j(ws, "made-by-creat"), Mode: 0o600}, 0, j(ws, "made-by-creat"), ""},
			createCase{"mkdir denied", createStep{Op: "mkdir", Path: j(ws, ".env"), Mode: 0o755}, unix.EACCES, "", j(ws, ".env")},
			createCase{"symlink denied", createStep{Op: "symlink", Old: "x", Path: j(ws, "secret")}, unix.EACCES, "", j(ws, "secret")},
			createCase{"link denied", createStep{Op: "link", Old: tr.existing, Path: j(ws, ".env")}, unix.EACCES, "", j(ws, ".env")},
			createCase{"rename denied", createStep{Op: "rename", Old: j(ws, "a2"), Path: j(ws, "plain2/.env")}, unix.EACCES, j(ws, "a2"), j(ws, "plain2/.env")},
		)
	}
	return cases
}

// TestCreate makes every kind of name in one child restricted by Landlock
// to make none itself: the supervisor makes the allowed ones (with the
// command's umask) and refuses the denied ones, which never appear.
func TestCreate(t *testing.T) { testCreate(t, false) }

// TestCreateOwnRoot is TestCreate with every path resolved in the
// child's /proc/PID/root (the namespaces tier's OwnRoot; here the same
// root as corral's, so the same answers): absolute paths with
// RESOLVE_IN_ROOT, relative ones from their start's name there.
func TestCreateOwnRoot(t *testing.T) { testCreate(t, true) }

func testCreate(t *testing.T, ownRoot bool) {
	skipUnlessRoot(t)
	requireLandlock(t)
	h, tr := newHarness(t), newCreateTree(t)
	// A denied name inside a folder, to be renamed with it.
	file(t, filepath.Join(tr.ws, "plain", "notdenied"))
	cases := createCases(tr)
	spec := childSpec{Create: true}
	for _, c := range cases {
		spec.Steps = append(spec.Steps, step{Name: c.name, Create: &c.st})
	}
	cfg := tr.config()
	cfg.Create.OwnRoot = ownRoot
	old := unix.Umask(0o027)
	out, s := h.runConfig(t, spec, cfg)
	unix.Umask(old)
	if len(out.Steps) != len(cases) {
		t.Fatalf("child ran %d steps, want %d", len(out.Steps), len(cases))
	}
	denied := 0
	for i, c := range cases {
		if got := unix.Errno(out.Steps[i].Errno); got != c.errno {
			t.Errorf("%s: errno %v, want %v", c.name, got, c.errno)
		}
		if c.made != "" && !exists(c.made) {
			t.Errorf("%s: %s is missing", c.name, c.made)
		}
		if c.never != "" && exists(c.never) {
			t.Errorf("%s: %s exists", c.name, c.never)
		}
	}
	for _, l := range h.logLines() {
		if strings.Contains(l, "fs.deny") {
			denied++
		}
	}
	if denied == 0 {
		t.Errorf("no refusal logged: %q", h.logLines())
	}
	// The child's umask (027, inherited) applies to what the supervisor
	// makes for it, not corral's.
	if fi, err := os.Stat(filepath.Join(tr.ws, "new")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("ws/new: %v %v, want mode 0640", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(tr.ws, "dir")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("ws/dir: %v %v, want mode 0750", fi.Mode(), err)
	}
	if a, _ := s.Stats(); a == 0 {
		t.Errorf("nothing counted as allowed")
	}
}

// TestCreateTOCTOU flips the name an open with O_CREAT makes between an
// allowed and a denied one while the child opens it: whatever the
// supervisor read, the denied name never appears.
func TestCreateTOCTOU(t *testing.T) {
	skipUnlessRoot(t)
	requireLandlock(t)
	h, tr := newHarness(t), newCreateTree(t)
	spec := childSpec{Create: true, CreateRace: &createRace{Dir: tr.ws, Good: "xenv", Bad: ".env", Attempts: 3000}}
	out, _ := h.runConfig(t, spec, tr.config())
	if exists(filepath.Join(tr.ws, ".env")) {
		t.Fatalf("the denied name was made: errnos %v", out.CreateRace)
	}
	if out.CreateRace[0] == 0 {
		t.Errorf("no open succeeded: %v", out.CreateRace)
	}
	t.Logf("errnos: %v", out.CreateRace)
}

// TestCreateWithoutPolicy: without a create policy the supervisor is as
// before: a creating call is not its to answer (EPERM).
func TestCreateNeedsDeny(t *testing.T) {
	_, err := newSupervisor(nil, Config{Create: &CreatePolicy{}}, readMemory)
	if err == nil || !strings.Contains(err.Error(), "deny") {
		t.Errorf("a create policy without Deny: %v", err)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, os.ErrNotExist)
}

// createMany makes N new files in Dir, one openat each, and reports
// how long they took.
type createMany struct {
	Dir string
	N   int
}

func runCreateMany(m createMany) int64 {
	start := time.Now()
	for i := range m.N {
		fd, err := unix.Open(filepath.Join(m.Dir, "f"+strconv.Itoa(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return -1
		}
		unix.Close(fd)
	}
	return int64(time.Since(start))
}

// BenchmarkCreate times an open that makes a file under the supervisor,
// against the same open without the filter's notification.
func BenchmarkCreate(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, supervised := range []bool{false, true} {
		name := "plain"
		if supervised {
			name = "supervised"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			tr := createTree{ws: dir}
			spec := childSpec{Create: supervised, CreateMany: &createMany{Dir: dir, N: b.N}}
			c := startChild(b, spec)
			h := &harness{}
			cfg := tr.config()
			cfg.Log = h.log
			s, err := StartConfig(c.listener, cfg)
			if err != nil {
				b.Fatal(err)
			}
			out := c.wait(b)
			s.Stop()
			if out.CreateMany < 0 {
				b.Fatal("the child could not make its files")
			}
			b.ReportMetric(float64(out.CreateMany)/float64(b.N), "ns/create")
		})
	}
}
