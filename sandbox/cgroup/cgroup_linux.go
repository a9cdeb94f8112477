package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Group is the fresh cgroup a run's sandbox lives in: memory (memory +
// swap) and pids capped. The init joins it before it starts the command,
// so the command never runs uncapped.
type Group struct {
	Version int      // 1 or 2
	Path    string   // relative to the hierarchy root, as in /proc/PID/cgroup
	memDir  string   // the memory controller's folder
	dirs    []string // one per controller hierarchy (one on v2)

	// scope, until Attach, is the systemd user manager's transient scope
	// an ordinary user's run gets instead (cgroup_systemd_linux.go);
	// inScope says the manager placed the init there.
	scope   *userScope
	inScope bool
	watch   *memoryWatch // a scope's memory files, read as they change
}

// Where says how the run's cgroup is had, for the protections table.
func (c *Group) Where() string {
	if c.scope != nil || c.inScope {
		return "cgroup v2, a transient scope of the systemd user manager"
	}
	return "cgroup v" + strconv.Itoa(c.Version)
}

// Attach finishes a cgroup that needs the sandbox to exist: a user scope
// is started holding the sandbox that the process pid launched (its shim),
// and its caps are checked. For any other cgroup it does nothing (the
// sandbox's PID 1 joins it itself).
func (c *Group) Attach(pid int) error {
	s := c.scope
	if s == nil {
		return nil
	}
	c.scope = nil
	path, err := s.start(pid)
	if err != nil {
		return err
	}
	dir := filepath.Join(Root, path)
	c.Path, c.memDir, c.dirs, c.inScope = path, dir, []string{dir}, true
	if err := checkCaps(dir, s.memory, s.pids); err != nil {
		return err
	}
	c.watch = watchMemory(dir)
	return nil
}

// JoinFiles are the files the sandbox's PID 1 writes "0" to, to join the
// cgroup: v1's `tasks` files (moving the calling thread takes no global
// lock; PID 1 has one thread), or v2's cgroup.procs.
func (c *Group) JoinFiles() []string {
	if c.scope != nil || c.inScope {
		return nil // systemd moves the init
	}
	name := "tasks"
	if c.Version == 2 {
		name = "cgroup.procs"
	}
	files := make([]string, len(c.dirs))
	for i, d := range c.dirs {
		files[i] = filepath.Join(d, name)
	}
	return files
}

// LeaveFiles are the files PID 1 writes "0" to, to move back to the run
// cgroup's parent once the command is in the run's cgroup, so the cgroup
// is empty when the command's processes are: v1's parents' `tasks` files.
// None on v2, whose parent has controllers on and so may hold no process.
func (c *Group) LeaveFiles() []string {
	if c.Version == 2 {
		return nil
	}
	files := make([]string, len(c.dirs))
	for i, d := range c.dirs {
		files[i] = filepath.Join(filepath.Dir(d), "tasks")
	}
	return files
}

// cgroupPrefix names every cgroup corral makes, so a later run can find
// the ones a SIGKILLed corral left: run-PID-STARTTIME.
const cgroupPrefix = "run-"

// Root is where cgroup2 is mounted (a test points it at a fake
// tree).
var Root = "/sys/fs/cgroup"

// New makes a fresh cgroup for one run under parent ("" means a
// "corral" folder inside the cgroup corral itself runs in) with the memory
// and pids caps of lim; zero values are not capped. It uses cgroup v2 when
// the host is unified, else the v1 memory and pids hierarchies.
func New(parent string, memory int64, pids int) (*Group, error) {
	// run-PID-START-N: N tells apart the runs of one process (the Go API
	// runs several at once); PID-START tells a later corral the owner
	// is gone.
	name := cgroupPrefix + strconv.Itoa(os.Getpid()) + "-" + startTime(os.Getpid()) + "-" + strconv.FormatInt(runSeq.Add(1), 10)
	if cgroups.Mode() != cgroups.Unified {
		return newCgroup1(parent, name, memory, pids)
	}
	cg, err := newCgroup2(parent, name, memory, pids)
	if err == nil || parent != "" || os.Geteuid() == 0 {
		return cg, err
	}
	// An ordinary user outside a tree delegated to them: their systemd
	// user manager makes the cgroup (see cgroup_systemd_linux.go).
	scope, serr := newUserScope(name, memory, pids)
	if serr != nil {
		return nil, fmt.Errorf("%w; %v", err, serr)
	}
	return &Group{Version: 2, scope: scope}, nil
}

// Probe makes a cgroup as a run would and removes it, for doctor.
// A user scope needs a sandbox to hold: a shell with one child, as a
// launcher has, killed after.
func Probe(memory int64, pids int) (*Group, error) {
	cg, err := New("", memory, pids)
	if err != nil {
		return nil, err
	}
	defer cg.Remove()
	if cg.scope == nil {
		return cg, nil
	}
	child := exec.Command("sh", "-c", "sleep 30 & wait")
	child.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		cg.scope.close()
		return nil, fmt.Errorf("no process to try the systemd user manager's scope with: %w", err)
	}
	defer child.Wait()
	defer unix.Kill(-child.Process.Pid, unix.SIGKILL)
	if err := cg.Attach(child.Process.Pid); err != nil {
		return nil, err
	}
	return cg, nil
}

func newCgroup2(parent, name string, memory int64, pids int) (*Group, error) {
	if parent == "" {
		own, err := ownCgroup2()
		if err != nil {
			return nil, err
		}
		parent = v2Parent(own)
	}
	group := filepath.Join("/", parent, name)
	res := &cgroup2.Resources{}
	if memory > 0 {
		res.Memory = &cgroup2.Memory{Max: &memory}
	}
	if pids > 0 {
		res.Pids = &cgroup2.Pids{Max: int64(pids)}
	}
	_, err := cgroup2.NewManager(Root, group, res)
	if err != nil {
		return nil, cgroupError(err)
	}
	dir := filepath.Join(Root, group)
	if memory > 0 && hasFile(dir, "memory.swap.max") {
		// No swap on top: memory + swap is capped at memory.
		if err := os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0); err != nil {
			removeCgroupDir(dir)
			return nil, err
		}
	}
	return &Group{Version: 2, Path: group, memDir: dir, dirs: []string{dir}}, nil
}

func hasFile(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// v2Parent is the default parent on cgroup v2: a "corral" folder beside
// corral's own cgroup, not inside it. v2 enables controllers only in a
// cgroup without processes of its own, and corral's cgroup has corral.
func v2Parent(own string) string {
	return filepath.Join(filepath.Dir(filepath.Clean("/"+own)), "corral")
}

// ownCgroup2 is the cgroup2 path of this process.
func ownCgroup2() (string, error) { return cgroup2Of("self") }

// cgroup2Of is the cgroup v2 path of process pid ("self" for this one),
// as /proc/PID/cgroup has it.
func cgroup2Of(pid string) (string, error) {
	data, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup2 entry in /proc/" + pid + "/cgroup")
}

func newCgroup1(parent, name string, memory int64, pids int) (*Group, error) {
	own, err := cgroup1.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	path := func(n cgroup1.Name) (string, error) {
		if parent != "" {
			return filepath.Join("/", parent, name), nil
		}
		return filepath.Join("/", own[string(n)], "corral", name), nil
	}
	var subs []cgroup1.Subsystem
	all, err := v1Subsystems()
	if err != nil {
		return nil, cgroupError(err)
	}
	var memDir string
	var dirs []string
	for _, s := range all {
		if (s.Name() == cgroup1.Memory && memory > 0) || (s.Name() == cgroup1.Pids && pids > 0) {
			subs = append(subs, s)
		}
	}
	res := &specs.LinuxResources{}
	for _, s := range subs {
		p, _ := path(s.Name())
		dir := s.(interface{ Path(string) string }).Path(p)
		dirs = append(dirs, dir)
		switch s.Name() {
		case cgroup1.Memory:
			memDir = dir
			res.Memory = &specs.LinuxMemory{Limit: &memory}
			if hasFile(filepath.Dir(dir), "memory.memsw.limit_in_bytes") {
				res.Memory.Swap = &memory // memory + swap
			}
		case cgroup1.Pids:
			limit := int64(pids)
			res.Pids = &specs.LinuxPids{Limit: &limit}
		}
	}
	if memory > 0 && memDir == "" {
		return nil, errors.New("no memory controller: neither cgroup v2 nor a v1 memory hierarchy is mounted")
	}
	if pids > 0 && res.Pids == nil {
		return nil, errors.New("no pids controller: neither cgroup v2 nor a v1 pids hierarchy is mounted")
	}
	_, err = cgroup1.New(path, res, cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subs, nil }))
	if err != nil {
		return nil, cgroupError(err)
	}
	p, _ := path(cgroup1.Memory)
	return &Group{Version: 1, Path: p, memDir: memDir, dirs: dirs}, nil
}

// v1Subsystems are the memory and pids hierarchies. cgroup1.Default
// parses the mount table and builds a controller for every hierarchy (0.3
// ms of CPU per launch here); where both are mounted in the usual place
// the two are built directly.
func v1Subsystems() ([]cgroup1.Subsystem, error) {
	if hasFile(Root, "memory/memory.limit_in_bytes") && hasFile(Root, "pids/cgroup.procs") {
		return []cgroup1.Subsystem{cgroup1.NewMemory(Root), cgroup1.NewPids(Root)}, nil
	}
	return cgroup1.Default()
}

// cgroupError says why a cgroup could not be made in words a user can act
// on.
func cgroupError(err error) error {
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("cannot enable the memory and pids controllers there (%v): cgroup v2 allows that only in a cgroup without processes; pass --cgroup-parent with an empty, delegated cgroup", err)
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no writable cgroup (%v): run as root, or pass --cgroup-parent with a cgroup delegated to you", err)
	}
	return err
}

func killPid(pid int) { unix.Kill(pid, unix.SIGKILL) }

// killMembers kills the processes listed in the cgroup.procs file procs.
// A PID read from the file can be gone and reused by an unrelated process
// by the time it is signalled; a pidfd pins the process, and the file is
// read again after the pidfds are taken, so the signal reaches only
// processes that were in the cgroup (v1 has no cgroup.kill).
func killMembers(procs string) {
	killListed(func() []int { return readPids(procs) })
}

// killListed is killMembers with the list read by list, twice.
func killListed(list func() []int) {
	pidfds := map[int]int{}
	for _, pid := range list() {
		fd, err := unix.PidfdOpen(pid, 0)
		switch {
		case err == nil:
			pidfds[pid] = fd
		case err == unix.ENOSYS:
			killPid(pid) // kernels before 5.3
		}
	}
	still := list()
	for pid, fd := range pidfds {
		if slices.Contains(still, pid) {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// RemovedWhenEmpty reports whether something other than corral removes
// the cgroup as soon as it is empty (a systemd user scope): its counters
// must be read (Observe) before the sandbox's last process exits.
func (c *Group) RemovedWhenEmpty() bool { return c.scope != nil || c.inScope }

// Observe reads a user scope's memory counters now, while the sandbox's
// PID 1 still holds the scope (systemd removes it once it is empty);
// Usage reports the largest values seen. Other cgroups are removed by
// corral itself, after Usage, and need no early look.
func (c *Group) Observe() {
	if c.watch != nil {
		c.watch.sample(c.memDir)
	}
}

// Usage reads the peak memory use and how many processes the kernel's
// OOM killer ended in the cgroup.
func (c *Group) Usage() (peak int64, oomKills int) {
	if c.memDir == "" {
		return 0, 0
	}
	if c.watch != nil {
		return c.watch.sample(c.memDir)
	}
	if c.Version == 2 {
		peak = readInt64(filepath.Join(c.memDir, "memory.peak"))
		oomKills = int(readKey(filepath.Join(c.memDir, "memory.events"), "oom_kill"))
		return peak, oomKills
	}
	// memory.failcnt stays 0 after an OOM kill on v1; oom_control counts.
	peak = readInt64(filepath.Join(c.memDir, "memory.max_usage_in_bytes"))
	return peak, int(readKey(filepath.Join(c.memDir, "memory.oom_control"), "oom_kill"))
}

// Drain kills whatever is left in the cgroup and waits, at most d, until
// it is empty; it reports whether it is. Run calls it when the sandbox
// ended without PID 1's report (killed, timed out), before corral looks
// at what the command left: nothing of the sandbox may still be writing.
func (c *Group) Drain(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		empty := true
		for _, dir := range c.dirs {
			procs := filepath.Join(dir, "cgroup.procs")
			if len(readPids(procs)) == 0 {
				continue
			}
			empty = false
			if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
				killMembers(procs)
			}
		}
		if empty {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Duration(min(i+1, 10)) * time.Millisecond)
	}
}

// Remove kills whatever is left in the cgroup and removes it. (It does
// not use the library's Delete, which walks every file of the cgroup and
// retries after 10 ms sleeps: a run's cgroup is normally empty by now, and
// one rmdir per folder is all it takes.)
func (c *Group) Remove() error {
	if c.scope != nil {
		c.scope.close() // never started
		return nil
	}
	if c.inScope {
		// The user manager removes an empty scope itself; what is
		// left of the command is killed.
		if c.watch != nil {
			c.watch.close()
		}
		for _, d := range c.dirs {
			killMembers(filepath.Join(d, "cgroup.procs"))
		}
		return nil
	}
	var errs []string
	for _, d := range c.dirs {
		if err := removeCgroupDir(d); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func removeCgroupDir(dir string) error {
	for i := 0; ; i++ {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || i == 50 {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
		// Processes are still there (or still exiting): kill them.
		if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
			killMembers(filepath.Join(dir, "cgroup.procs"))
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
}

// RemoveStale removes cgroups that earlier corral runs made under parent
// and could not remove because they were killed (their run-PID-START no
// longer names a live process). It returns the paths removed.
func RemoveStale(parent string) []string {
	var dirs []string
	if cgroups.Mode() == cgroups.Unified {
		own, err := ownCgroup2()
		if err != nil {
			return nil
		}
		if parent == "" {
			parent = v2Parent(own)
		}
		dirs = []string{filepath.Join(Root, parent)}
	} else {
		own, err := cgroup1.ParseCgroupFile("/proc/self/cgroup")
		if err != nil {
			return nil
		}
		for _, s := range []string{"memory", "pids"} {
			p := parent
			if p == "" {
				p = filepath.Join(own[s], "corral")
			}
			dirs = append(dirs, filepath.Join(Root, s, p))
		}
	}
	// Only cgroups this user made (where another user can make them at
	// all, a delegated tree, theirs are not ours to remove), and for a
	// bounded time: the run's own cgroup is made after this.
	var removed []string
	deadline := time.Now().Add(staleBudget)
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) || ownerAlive(e.Name()) || !ownedByMe(filepath.Join(dir, e.Name())) {
				continue
			}
			if time.Now().After(deadline) {
				return removed
			}
			path := filepath.Join(dir, e.Name())
			if removeCgroupDir(path) == nil {
				removed = append(removed, path)
			}
		}
	}
	return removed
}

// staleBudget bounds the time one run spends removing others' leftovers.
const staleBudget = 100 * time.Millisecond

func ownedByMe(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && int(st.Uid) == os.Geteuid()
}

// runSeq numbers the runs of this process.
var runSeq atomic.Int64

// ownerAlive reports whether run-PID-START[-N] names a live process.
func ownerAlive(name string) bool {
	pid, start, ok := strings.Cut(strings.TrimPrefix(name, cgroupPrefix), "-")
	start, _, _ = strings.Cut(start, "-")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil {
		return true // not ours to judge
	}
	return startTime(n) == start
}

// startTime is field 22 of /proc/PID/stat (start time in clock ticks),
// which tells a process from a later one with the same pid.
func startTime(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 19 {
			return f[19]
		}
	}
	return "unknown"
}

func readInt64(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// readKey reads "key N" from a flat-keyed cgroup file.
func readKey(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func readPids(file string) []int {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}
