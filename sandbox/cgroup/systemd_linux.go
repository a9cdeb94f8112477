package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// An ordinary user on a cgroup v2 host with systemd cannot make a cgroup
// for the run by hand: their login shell sits in session-N.scope, which
// root owns, and moving a process into a cgroup needs write access to the
// cgroup.procs of the common ancestor of both (user-UID.slice, also
// root's). Their systemd user manager can: it owns the user's part of the
// tree (user@UID.service) and, for a process it cannot move itself, asks
// PID 1 to (AttachProcessesToUnit, which checks that the caller owns the
// process). So a user's run asks the user manager for a transient scope
// holding the sandbox's init, with the memory and pids caps as the
// scope's properties, the way `systemd-run --user --scope -p MemoryMax=…`
// does. The conversation is one D-Bus call on the manager's private
// socket (no bus daemon), dialled while the plan is built.

// userScope is a transient scope asked for but not yet started: starting
// needs the init's pid.
type userScope struct {
	conn   *dbus.Conn
	ctx    context.Context // ends the conversation after scopeTimeout
	cancel context.CancelFunc
	name   string
	memory int64
	pids   int
}

// userManagerSocket is the private socket of the calling user's systemd
// manager, if it has one: /run/user/UID/systemd/private (not wherever
// $XDG_RUNTIME_DIR points, which could be a folder a sandbox can write).
// The socket must be the user's own.
func userManagerSocket() (string, error) {
	sock := "/run/user/" + strconv.Itoa(os.Geteuid()) + "/systemd/private"
	var st unix.Stat_t
	if err := unix.Lstat(sock, &st); err != nil {
		return "", fmt.Errorf("no systemd user manager for uid %d (%s: %w): enable lingering (loginctl enable-linger) or run from a login session", os.Geteuid(), sock, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return "", fmt.Errorf("%s is not a socket owned by uid %d", sock, os.Geteuid())
	}
	return sock, nil
}

// scopeTimeout bounds the whole conversation with the user manager, from
// the dial to the sandbox being in its scope: a manager that does not
// answer must not hang the run.
const scopeTimeout = 10 * time.Second

// newUserScope connects to the user manager for a run's scope. The
// memory cap is rounded down to whole pages, as the kernel keeps it.
func newUserScope(name string, memory int64, pids int) (*userScope, error) {
	sock, err := userManagerSocket()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	conn, err := dbus.Dial("unix:path="+sock, dbus.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connecting to the systemd user manager: %w", err)
	}
	// EXTERNAL with the uid (not a user name: no NSS lookup); the private
	// socket is peer to peer, so there is no Hello. The context's end
	// closes the connection, which ends an Auth that hangs.
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Geteuid()))}); err != nil {
		conn.Close()
		cancel()
		return nil, fmt.Errorf("authenticating to the systemd user manager: %w", err)
	}
	page := int64(os.Getpagesize())
	return &userScope{conn: conn, ctx: ctx, cancel: cancel, name: "corral-" + name + ".scope", memory: memory / page * page, pids: pids}, nil
}

type unitProperty struct {
	Name  string
	Value dbus.Variant
}

// start asks for the scope holding the sandbox, whose launcher (the
// shim outside the sandbox's namespaces) is shim, and waits until the
// kernel shows the sandbox's PID 1 there; it returns the scope's cgroup
// path. The shim forks PID 1 as soon as it has made the namespaces,
// before it is moved, so both are: PID 1 waits for corral's word before
// it starts the command, and whatever either forks later is in the scope.
func (s *userScope) start(shim int) (path string, err error) {
	defer s.close()
	init, err := onlyChild(shim)
	if err != nil {
		return "", err
	}
	props := []unitProperty{
		{"Description", dbus.MakeVariant("corral sandbox (pid " + strconv.Itoa(shim) + ")")},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(shim), uint32(init)})},
		// A scope whose command the OOM killer hit ends as "failed";
		// without this it would stay loaded until the manager exits.
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	if s.memory > 0 {
		props = append(props,
			unitProperty{"MemoryMax", dbus.MakeVariant(uint64(s.memory))},
			unitProperty{"MemorySwapMax", dbus.MakeVariant(uint64(0))})
	}
	if s.pids > 0 {
		props = append(props, unitProperty{"TasksMax", dbus.MakeVariant(uint64(s.pids))})
	}
	// The OOM killer ends the command, and corral reports it (137); with
	// systemd's default policy (stop) the manager would also kill the
	// sandbox's init. Managers before 243 have no OOMPolicy and need
	// none: they never stop a unit for an OOM kill.
	withPolicy := append(props, unitProperty{"OOMPolicy", dbus.MakeVariant("continue")})
	err = s.call(withPolicy)
	if err != nil && strings.Contains(err.Error(), "OOMPolicy") {
		err = s.call(props)
	}
	if err != nil {
		return "", fmt.Errorf("the systemd user manager refused a scope for the run: %w", err)
	}
	defer func() {
		// A scope that was asked for but not seen in time could still
		// take the sandbox later, behind the report's back: stop it.
		if err != nil {
			s.manager().CallWithContext(s.ctx, "org.freedesktop.systemd1.Manager.StopUnit", 0, s.name, "replace")
		}
	}()
	// Starting the scope moves the pids, through PID 1 when the user
	// manager cannot: wait until the kernel says so.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		path, err = cgroup2Of(strconv.Itoa(init))
		if err != nil {
			return "", err
		}
		if filepath.Base(path) == s.name {
			return path, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the systemd user manager did not move the sandbox into %s within 5 s (it is in %s)", s.name, path)
		}
		if i%50 == 49 && !s.loaded() {
			return "", fmt.Errorf("the systemd user manager could not start %s (see journalctl --user -u %s)", s.name, s.name)
		}
		time.Sleep(time.Duration(min(i+1, 20)) * 100 * time.Microsecond)
	}
}

func (s *userScope) call(props []unitProperty) error {
	aux := []struct {
		Name  string
		Props []unitProperty
	}{}
	var job dbus.ObjectPath
	return s.manager().CallWithContext(s.ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0, s.name, "fail", props, aux).Store(&job)
}

func (s *userScope) manager() dbus.BusObject {
	return s.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
}

// loaded reports whether the manager still knows the scope (a scope that
// failed to start is collected at once).
func (s *userScope) loaded() bool {
	var unit dbus.ObjectPath
	return s.manager().CallWithContext(s.ctx, "org.freedesktop.systemd1.Manager.GetUnit", 0, s.name).Store(&unit) == nil
}

func (s *userScope) close() {
	s.conn.Close()
	s.cancel()
}

// onlyChild waits (at most 2 s) for the one child the shim forks, and
// returns its pid. /proc/PID/task/TID/children lists a thread's children;
// the shim has one thread.
func onlyChild(pid int) (int, error) {
	file := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; ; i++ {
		data, err := os.ReadFile(file)
		if err != nil {
			return 0, fmt.Errorf("finding the sandbox's PID 1: %w", err)
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			return strconv.Atoi(f[0])
		}
		// A launcher that failed (user namespaces refused, say) exits
		// without a child; its status says why.
		if state, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); bytes.Contains(state, []byte(") Z ")) {
			return 0, errors.New("finding the sandbox's PID 1: the launcher exited")
		}
		if time.Now().After(deadline) {
			return 0, errors.New("finding the sandbox's PID 1: the launcher forked none within 2 s")
		}
		time.Sleep(time.Duration(min(i+1, 20)) * 50 * time.Microsecond)
	}
}

// checkCaps verifies that the cgroup at dir has the caps asked for: a
// user manager that was not delegated the memory or pids controller
// accepts MemoryMax and TasksMax and enforces nothing.
func checkCaps(dir string, memory int64, pids int) error {
	want := func(file, value, what string) error {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("the run's scope has no %s cap (%v): the systemd user manager is not delegated the %s controller (Delegate= of user@.service)", what, err, what)
		}
		if got := strings.TrimSpace(string(data)); got != value {
			return fmt.Errorf("the run's scope has %s %s, not %s", file, got, value)
		}
		return nil
	}
	if memory > 0 {
		if err := want("memory.max", strconv.FormatInt(memory, 10), "memory"); err != nil {
			return err
		}
		if hasFile(dir, "memory.swap.max") {
			if err := want("memory.swap.max", "0", "memory"); err != nil {
				return err
			}
		}
	}
	if pids > 0 {
		if err := want("pids.max", strconv.Itoa(pids), "pids"); err != nil {
			return err
		}
	}
	return nil
}

// memoryWatch keeps the last peak and OOM-kill count read from a user
// scope's cgroup. The user manager removes the scope as soon as its last
// process is gone, which can be before corral reads how the run ended
// (the CI run of 2026-11-25 saw exit 137 reported without its OOM kill);
// the kernel announces every change of memory.events (IN_MODIFY), so
// the count is read while the OOM-killed process's cgroup still exists.
type memoryWatch struct {
	file *os.File // the inotify instance; closing it ends the reader
	mu   sync.Mutex
	peak int64
	ooms int
}

// watchMemory starts reading dir's memory files on every change of
// memory.events. Without inotify it returns nil, and Usage reads once
// at the end as for any other cgroup.
func watchMemory(dir string) *memoryWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, filepath.Join(dir, "memory.events"), unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil
	}
	w := &memoryWatch{file: os.NewFile(uintptr(fd), "inotify")}
	w.sample(dir) // an OOM kill before the watch was added
	go func() {
		buf := make([]byte, 4096)
		for {
			// One read takes every queued event; each means "read
			// again", and an IN_IGNORED (the cgroup is gone) ends it
			// with the next read's error or with close.
			if _, err := w.file.Read(buf); err != nil {
				return
			}
			w.sample(dir)
		}
	}()
	return w
}

// sample reads dir's memory files and keeps the largest values seen; a
// file of a removed cgroup reads as 0 and changes nothing.
func (w *memoryWatch) sample(dir string) (peak int64, ooms int) {
	p := readInt64(filepath.Join(dir, "memory.peak"))
	n := int(readKey(filepath.Join(dir, "memory.events"), "oom_kill"))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peak, w.ooms = max(w.peak, p), max(w.ooms, n)
	return w.peak, w.ooms
}

func (w *memoryWatch) close() { w.file.Close() }
