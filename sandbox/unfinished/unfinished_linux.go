// Package unfinished keeps a record of each run's cleanup, from before the
// command starts until corral has done it, in a folder no sandbox can
// reach, so that a corral killed before its cleanup (an orchestrator's
// timeout sends SIGKILL) leaves it to the next one: the post-run sweep,
// the quarantine, the modes to put back and the landlock tier's TMPDIR.
//
// A run holds an exclusive flock on its record for as long as its corral
// lives; the kernel drops it when the process dies, however it dies. A
// record whose lock can be taken is a run whose corral is gone: the
// taker holds the lock while it finishes that cleanup, then removes the
// record. No pid is trusted (pids are reused).
//
// The folder is /run/corral/runs for the host's root,
// $XDG_RUNTIME_DIR/corral/runs for a user whose XDG_RUNTIME_DIR is a folder
// of theirs below /run, and /tmp/corral-UID/runs otherwise (uid 0 of a
// user namespace mapped from another user is such a user), each 0700 and refused to a write grant
// (sandbox/build.go, through stage.StateDirs): a sandbox that could write
// a record could have a later corral act on any path. This package does
// not know what a record says; package corral writes and reads it.
package unfinished

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxRecord bounds a record's size.
const maxRecord = 4 << 20

// suffix ends a record's name; a file being written has none yet.
const suffix = ".run"

// halfWritten is how old a file without the suffix is before List takes
// it for one a dead corral left half-written.
const halfWritten = 10 * time.Minute

// Dir is the records' folder for this user ("" when none can be trusted:
// see Open).
func Dir() string {
	uidMap, _ := os.ReadFile("/proc/self/uid_map")
	return dirFor(os.Geteuid(), os.Getenv("XDG_RUNTIME_DIR"), string(uidMap))
}

// dirFor is Dir for uid, its XDG_RUNTIME_DIR and its user namespace's
// uid_map. The folder in /tmp is named by the host's uid, so that the
// root of two users' user namespaces (unshare -U -r) share none.
func dirFor(uid int, xdg, uidMap string) string {
	host, ok := hostUID(uid, uidMap)
	if uid == 0 && ok && host == 0 {
		return "/run/corral/runs"
	}
	if xdg != "" && filepath.IsAbs(xdg) {
		if real, err := filepath.EvalSymlinks(xdg); err == nil && strings.HasPrefix(real, "/run/") && ownFolder(real, uid) {
			return filepath.Join(real, "corral", "runs")
		}
	}
	if !ok {
		host = uid
	}
	return filepath.Join("/tmp", "corral-"+strconv.Itoa(host), "runs")
}

// hostUID is the host's uid for uid, as the uid_map of its user
// namespace maps it ("0 0 4294967295" in the host's own).
func hostUID(uid int, uidMap string) (int, bool) {
	for _, line := range strings.Split(uidMap, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		out, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && err3 == nil && uint64(uid) >= in && uint64(uid)-in < n {
			return int(out + uint64(uid) - in), true
		}
	}
	return 0, false
}

// ownFolder reports whether p is a folder (not a symlink) of uid's or
// root's that no one else can write.
func ownFolder(p string, uid int) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		(int(st.Uid) == uid || st.Uid == 0) && st.Mode&0o022 == 0
}

// Store is the records' folder, open.
type Store struct {
	dir string
	fd  int // the folder, opened without following a symlink
}

// ErrUntrusted means the records' folder is not this user's alone
// (another user made it first, or it is a symlink): no record can be
// kept there.
var ErrUntrusted = errors.New("the folder of corral's records is not this user's alone")

// Open opens the records' folder, making it (and the folder above, 0755
// for /run/corral, 0700 otherwise) if missing.
func Open() (*Store, error) {
	dir := Dir()
	parent := filepath.Dir(dir)
	perm := uint32(0o700)
	if parent == "/run/corral" {
		perm = 0o755 // the program index beside it is everybody's
	}
	if err := unix.Mkdir(parent, perm); err != nil && err != unix.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: parent, Err: err}
	}
	if err := unix.Mkdir(dir, 0o700); err != nil && err != unix.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	uid := os.Geteuid()
	if !ownFolder(parent, uid) {
		return nil, fmt.Errorf("%w: %s", ErrUntrusted, parent)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != uid || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s", ErrUntrusted, dir)
	}
	return &Store{dir: dir, fd: fd}, nil
}

// Close closes the folder.
func (s *Store) Close() { unix.Close(s.fd) }

// Path is the folder's path.
func (s *Store) Path() string { return s.dir }

// Record is a run's record, locked while its run goes on.
type Record struct {
	s    *Store
	name string
	fd   int
}

// Create writes data as a new record, locked: written whole to an
// unnamed file (O_TMPFILE), locked, then linked in under its name, so no
// reader ever sees half of one or an unlocked one. A file system without
// O_TMPFILE gets a file under a temporary name (no suffix), renamed once
// written and locked (the lock goes with the file).
func (s *Store) Create(data []byte) (*Record, error) {
	if len(data) > maxRecord {
		return nil, fmt.Errorf("a run record of %d bytes", len(data))
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))
	path := filepath.Join(s.dir, name+suffix)
	fd, err := unix.Openat(s.fd, ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	unnamed := err == nil
	if !unnamed {
		fd, err = unix.Openat(s.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	fail := func(op string, err error) (*Record, error) {
		if !unnamed {
			unix.Unlinkat(s.fd, name, 0)
		}
		unix.Close(fd)
		return nil, &os.PathError{Op: op, Path: path, Err: err}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail("flock", err)
	}
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err != nil {
			return fail("write", err)
		}
		off += n
	}
	if unnamed {
		// linkat of /proc/self/fd/N needs no capability (AT_EMPTY_PATH
		// would need CAP_DAC_READ_SEARCH).
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), s.fd, name+suffix, unix.AT_SYMLINK_FOLLOW)
	} else {
		err = unix.Renameat(s.fd, name, s.fd, name+suffix)
	}
	if err != nil {
		return fail("link", err)
	}
	return &Record{s: s, name: name + suffix, fd: fd}, nil
}

// Done removes the record (its cleanup is done) and drops its lock.
func (r *Record) Done() error {
	err := unix.Unlinkat(r.s.fd, r.name, 0)
	unix.Close(r.fd)
	if err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(r.s.dir, r.name), Err: err}
	}
	return nil
}

// Release drops the lock and leaves the record, for the next corral.
func (r *Record) Release() { unix.Close(r.fd) }

// Name is the record's file name.
func (r *Record) Name() string { return r.name }

// Path is the record's path.
func (r *Record) Path() string { return filepath.Join(r.s.dir, r.name) }

// Entry is a record found in the folder.
type Entry struct {
	Name    string
	Data    []byte
	ModTime time.Time
	// Stale is the record, locked by the caller, when its corral is
	// gone: finish its cleanup, then mark it Done (or Release it). nil
	// while its corral holds the lock (it is alive, or another corral is
	// finishing the cleanup).
	Stale *Record
}

// List reads every record, taking the lock of each whose corral is gone
// (Entry.Stale). Files left half-written by a corral that died before its
// command started (no suffix yet, unlocked, old) are removed.
func (s *Store) List() ([]Entry, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var entries []Entry
	for _, n := range names {
		if e, ok := s.entry(n); ok {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// entry reads the record n, locked if it is stale.
func (s *Store) entry(n string) (Entry, bool) {
	fd, err := unix.Openat(s.fd, n, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return Entry{}, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxRecord {
		unix.Close(fd)
		return Entry{}, false
	}
	stale := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
	if !strings.HasSuffix(n, suffix) {
		// Being written (on a file system without O_TMPFILE), or left by
		// a corral that died before its command started: removed once
		// no writer could still be at it.
		if stale && time.Since(time.Unix(st.Mtim.Sec, st.Mtim.Nsec)) > halfWritten {
			unix.Unlinkat(s.fd, n, 0)
		}
		unix.Close(fd)
		return Entry{}, false
	}
	data := make([]byte, st.Size)
	for off := 0; off < len(data); {
		m, err := unix.Pread(fd, data[off:], int64(off))
		if err != nil || m == 0 {
			data = data[:off]
			break
		}
		off += m
	}
	e := Entry{Name: n, Data: data, ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}
	if !stale {
		unix.Close(fd)
		return e, true
	}
	e.Stale = &Record{s: s, name: n, fd: fd}
	return e, true
}

// names lists the folder.
func (s *Store) names() ([]string, error) {
	dup, err := unix.Openat(s.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), s.dir)
	defer f.Close()
	return f.Readdirnames(-1)
}

// dupFd duplicates fd, close-on-exec.
func dupFd(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }
