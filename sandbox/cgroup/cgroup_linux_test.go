package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCgroup2FakeTree drives the cgroup v2 path against a fake cgroup
// tree: the caps land in memory.max, memory.swap.max and pids.max, the
// controllers are enabled in every ancestor, the init joins through
// cgroup.procs, and peak memory and OOM kills are read back.
func TestCgroup2FakeTree(t *testing.T) {
	root := t.TempDir()
	old := Root
	Root = root
	defer func() { Root = old }()
	group := filepath.Join(root, "agents", "corral", "run-1-2")
	for _, dir := range []string{root, filepath.Join(root, "agents"), filepath.Join(root, "agents", "corral"), group} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "cgroup.subtree_control"), "")
	}
	// What the kernel would create in the new group.
	write(t, filepath.Join(group, "memory.swap.max"), "max")
	write(t, filepath.Join(group, "cgroup.procs"), "")

	cg, err := newCgroup2("agents/corral", "run-1-2", 256<<20, 64)
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 2 || cg.Path != "/agents/corral/run-1-2" {
		t.Errorf("cgroup %d %q", cg.Version, cg.Path)
	}
	for file, want := range map[string]string{"memory.max": "268435456", "memory.swap.max": "0", "pids.max": "64"} {
		if got := read(t, filepath.Join(group, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	for _, dir := range []string{root, filepath.Join(root, "agents"), filepath.Join(root, "agents", "corral")} {
		got := read(t, filepath.Join(dir, "cgroup.subtree_control"))
		if !strings.Contains(got, "+memory") || !strings.Contains(got, "+pids") {
			t.Errorf("%s: controllers not enabled: %q", dir, got)
		}
	}
	if got := cg.JoinFiles(); len(got) != 1 || got[0] != filepath.Join(group, "cgroup.procs") {
		t.Errorf("PID 1 would join through %q", got)
	}
	write(t, filepath.Join(group, "memory.peak"), "1048576\n")
	write(t, filepath.Join(group, "memory.events"), "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
	if peak, ooms := cg.Usage(); peak != 1<<20 || ooms != 1 {
		t.Errorf("usage: peak %d, oom kills %d", peak, ooms)
	}
	for _, f := range []string{"memory.max", "memory.swap.max", "pids.max", "cgroup.procs", "memory.peak", "memory.events", "cgroup.subtree_control"} {
		os.Remove(filepath.Join(group, f)) // the kernel's files go with the folder
	}
	if err := cg.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Errorf("group still there: %v", err)
	}
}

func TestCgroupOwnerAlive(t *testing.T) {
	self := os.Getpid()
	if !ownerAlive(cgroupPrefix + itoa(self) + "-" + startTime(self)) {
		t.Error("this process is not alive")
	}
	if ownerAlive(cgroupPrefix + itoa(self) + "-1") {
		t.Error("a pid with another start time is alive")
	}
	if !ownerAlive(cgroupPrefix + "x") {
		t.Error("a name that is not ours was judged")
	}
}

func write(t *testing.T, file, data string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, file string) string {
	t.Helper()
	data, err := readFake(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// readFake reads a file of a fake cgroup tree. The cgroup library
// creates a control file that the kernel would have made with mode 0
// (it only ever writes them); root reads it anyway, an ordinary user
// gives it back its read bit first.
func readFake(file string) ([]byte, error) {
	os.Chmod(file, 0o600)
	return os.ReadFile(file)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCgroupV2DefaultParent: the default parent is beside corral's own
// cgroup, since v2 enables controllers only where no process lives.
func TestCgroupV2DefaultParent(t *testing.T) {
	for own, want := range map[string]string{"/": "/corral", "/system.slice/agent.service": "/system.slice/corral", "/user.slice/u.slice/app.scope": "/user.slice/u.slice/corral"} {
		if got := v2Parent(own); got != want {
			t.Errorf("v2Parent(%q) = %q, want %q", own, got, want)
		}
	}
}

// TestKillMembers: a PID is killed only while the cgroup still lists it
// after its pidfd is taken, so a PID that left (and could have been
// reused by an unrelated process) is spared.
func TestKillMembers(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	procs := filepath.Join(t.TempDir(), "cgroup.procs")
	listed := start()
	if err := os.WriteFile(procs, []byte(strconv.Itoa(listed.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	killMembers(procs)
	if err := listed.Wait(); err == nil {
		t.Error("the listed process was not killed")
	}
	// Listed at the first read, gone at the second: not signalled.
	left := start()
	reads := 0
	killListed(func() []int {
		reads++
		if reads == 1 {
			return []int{left.Process.Pid}
		}
		return nil
	})
	if reads != 2 {
		t.Fatalf("the list was read %d times, want 2", reads)
	}
	// A killed child stays a zombie that signal 0 still reaches: ask
	// whether it ended.
	time.Sleep(50 * time.Millisecond)
	var ws syscall.WaitStatus
	if pid, _ := syscall.Wait4(left.Process.Pid, &ws, syscall.WNOHANG, nil); pid == left.Process.Pid {
		t.Errorf("a process no longer in the cgroup was killed: %v", ws)
	}
}

// TestCgroup2Only drives the cgroup v2 path of a unified host
// (Ubuntu 24.04, Fedora) against a fake tree: the default parent is a
// "corral" folder inside corral's own cgroup, and only the asked-for
// controllers get caps (memory alone, pids alone, no swap file).
func TestCgroup2Only(t *testing.T) {
	own, err := ownCgroup2()
	if err != nil {
		t.Skipf("no cgroup2 line in /proc/self/cgroup: %v", err)
	}
	for _, tc := range []struct {
		name     string
		memory   int64
		pids     int
		swapFile bool
		want     map[string]string // file -> content; "" means absent
	}{
		{"memory and pids", 64 << 20, 32, true, map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "32"}},
		{"memory only", 64 << 20, 0, true, map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": ""}},
		{"pids only", 0, 32, true, map[string]string{"memory.max": "", "memory.swap.max": "max", "pids.max": "32"}},
		{"no swap accounting", 64 << 20, 32, false, map[string]string{"memory.max": "67108864", "memory.swap.max": "", "pids.max": "32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			old := Root
			Root = root
			defer func() { Root = old }()
			// Beside corral's own cgroup, not in it (v2Parent).
			parent := v2Parent(own)
			group := filepath.Join(root, parent, "run-1-2")
			if err := os.MkdirAll(group, 0o755); err != nil {
				t.Fatal(err)
			}
			// What the kernel has in every folder of a cgroup2 tree.
			for dir := group; strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
				write(t, filepath.Join(dir, "cgroup.subtree_control"), "")
			}
			if tc.swapFile {
				write(t, filepath.Join(group, "memory.swap.max"), "max")
			}
			cg, err := newCgroup2("", "run-1-2", tc.memory, tc.pids)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(parent, "run-1-2"); cg.Version != 2 || cg.Path != want {
				t.Errorf("cgroup v%d %q, want v2 %q", cg.Version, cg.Path, want)
			}
			for file, want := range tc.want {
				data, err := readFake(filepath.Join(group, file))
				if got := strings.TrimSpace(string(data)); (want == "") != (err != nil) || got != want {
					t.Errorf("%s = %q (%v), want %q", file, got, err, want)
				}
			}
			if got := cg.JoinFiles(); len(got) != 1 || got[0] != filepath.Join(group, "cgroup.procs") {
				t.Errorf("joins through %v", got)
			}
		})
	}
}

// TestNoWritableCgroup: where no cgroup can be made (an ordinary
// user without delegation, or a tree that refuses mkdir) the error says so
// in words a user can act on. /sys refuses mkdir even to root, as a cgroup
// tree refuses it to a user.
func TestNoWritableCgroup(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys", &st); err != nil || st.Type != unix.SYSFS_MAGIC {
		t.Skip("/sys is not sysfs here")
	}
	old := Root
	Root = "/sys"
	defer func() { Root = old }()
	_, err := newCgroup2("corral-hostfacts-test", "run-1-2", 64<<20, 32)
	why := "operation not permitted" // root: sysfs refuses mkdir
	if os.Getuid() != 0 {
		why = "permission denied" // a user: /sys is not writable
	}
	want := "no writable cgroup (mkdir /sys/corral-hostfacts-test: " + why + "): run as root, or pass --cgroup-parent with a cgroup delegated to you"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if _, err := os.Stat("/sys/corral-hostfacts-test"); err == nil {
		t.Error("a folder was made in /sys")
	}
}
