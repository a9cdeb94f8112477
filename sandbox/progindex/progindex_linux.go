package progindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/internal/safefile"
)

// The program index answers one question for the exec allowlist: which
// folders that the sandbox can read, and map code from, hold ELF
// programs? Landlock checks execve but not mmap(PROT_EXEC), so any ELF
// program the sandbox can read runs through the allowed dynamic loader
// (ld.so /usr/lib/git-core/git). The plan binds each such folder noexec,
// and the kernel then refuses to map code from it.
//
// Walking the system's library folders reads about 150,000 files (half a
// second with a warm cache, tens of seconds cold), so the answer is kept
// in a file and walked again when its stamps change (the package
// databases, the roots and the folders directly inside them, two levels
// for /usr/local/lib: about 100 stats) or after an hour.

const programIndexVersion = "corral program index v1"

// packageStamps change whenever a package manager installs or removes
// anything.
var packageStamps = []string{
	"/var/lib/dpkg/status", "/var/lib/rpm", "/usr/lib/sysimage/rpm",
	"/lib/apk/db/installed", "/var/lib/pacman/local",
}

// Files are the index files corral reads, in order: the one
// root keeps for everybody, then the user's own in XDG_RUNTIME_DIR. Both
// live under /run, which no sandbox can see or write (a grant reaching
// into it is refused), so no sandboxed run can leave a forged index for a
// later one; a file in a folder a skill may grant (~/.cache) could.
func Files() []string {
	return programIndexFilesFor(os.Getuid(), os.Getenv("XDG_RUNTIME_DIR"))
}

func programIndexFilesFor(uid int, dir string) []string {
	files := []string{"/run/corral/programs"}
	if uid == 0 {
		return files
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return files
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || !(strings.HasPrefix(real, "/run/") || strings.HasPrefix(real, "/var/run/")) || !safefile.Trusted(real, true) {
		return files
	}
	return append(files, filepath.Join(real, "corral", "programs"))
}

// programIndexMaxAge bounds how long an index is trusted without a
// walk, for programs copied by hand into folders the stamps don't cover.
const programIndexMaxAge = time.Hour

// Load returns the program folders under roots (real paths of
// folders). Closing stop (the run was given up: a signal, a cancelled
// context) ends a wait for another run's walk at once, with an index
// marked Stopped that no plan may use.
func Load(roots []string, stop <-chan struct{}) Index {
	return loadProgramIndex(roots, Files(), time.Now(), stop)
}

func loadProgramIndex(roots, usable []string, now time.Time, stop <-chan struct{}) Index {
	for _, file := range usable {
		if idx, ok := readProgramIndex(file, roots, now); ok {
			return idx
		}
	}
	// One walker at a time per index file: runs started together wait
	// for the first one's walk and then read its index. The wait is
	// bounded: a lock held longer than indexLockWait (a stuck corral) is
	// passed by, and this run walks without saving.
	save, busy := "", ""
	for i := len(usable) - 1; i >= 0 && save == ""; i-- {
		unlock, err := lockIndex(usable[i], stop)
		switch {
		case err == errStopped:
			return Index{Source: "not read: the run was given up while " + usable[i] + ".lock was held", Stopped: true}
		case err == errLockBusy:
			busy = usable[i] + ".lock"
		case err == nil:
			defer unlock()
			save = usable[i]
			if idx, ok := readProgramIndex(save, roots, now); ok {
				return idx
			}
		}
	}
	if save == "" {
		// Nowhere to save a walk, so every run would walk (1-2 s): an
		// index past its age whose stamps still hold beats that. Only a
		// program copied by hand since it was built goes unseen.
		for _, file := range usable {
			if idx, ok := readProgramIndex(file, roots, time.Time{}); ok {
				idx.Source += " (older than " + programIndexMaxAge.String() + "; this user can save no newer one)"
				return idx
			}
		}
	}
	// The stamps are taken before the walk: a change during it makes the
	// next run walk again.
	stamps := takeStamps(roots)
	idx, complete := walkPrograms(roots, stop)
	if !complete {
		// Never saved, never used: a plan needs every folder.
		return Index{Source: "not read: the run was given up during the walk", Stopped: true}
	}
	idx.Source = "walked"
	if busy != "" {
		idx.Source = "walked (" + busy + " was held longer than " + indexLockWait.String() + ": not saved)"
	}
	if save != "" && writeProgramIndex(save, roots, now, stamps, idx) == nil {
		idx.Saved = save
	}
	return idx
}

// indexLockWait bounds the wait for another run's walk (1-3 s with a warm
// page cache).
const indexLockWait = 3 * time.Second

var (
	errLockBusy = errors.New("held by another process for too long")
	errStopped  = errors.New("the run was given up")
)

// lockIndex takes the lock beside an index file, making its folder. The
// lock file is this user's own, mode 0600, in a folder of this user's or
// root's that no one else can write: another user can neither open it (a
// read-only fd suffices for flock) nor plant one. A lock file that is not
// a plain 0600 file of this user's with one link (a symlink, a FIFO, an
// older 0644 one) is replaced. The wait is bounded by indexLockWait and
// ends when stop is closed.
func lockIndex(file string, stop <-chan struct{}) (unlock func(), err error) {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	if !safefile.TrustedFd(dfd, true) {
		return nil, fmt.Errorf("%s is writable by others", dir)
	}
	fd, err := openLockFile(dfd, filepath.Base(file)+".lock")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(indexLockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			unix.Close(fd)
			return nil, &os.PathError{Op: "flock", Path: file + ".lock", Err: err}
		}
		if time.Now().After(deadline) {
			unix.Close(fd)
			return nil, errLockBusy
		}
		select {
		case <-stop:
			unix.Close(fd)
			return nil, errStopped
		case <-time.After(pause):
		}
	}
}

// openLockFile opens (making it) the lock file name in the folder dfd,
// replacing whatever is there unless it is a plain 0600 file of this
// user's with one link.
func openLockFile(dfd int, name string) (int, error) {
	for try := 0; ; try++ {
		fd, err := unix.Openat(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == os.Geteuid() && st.Mode&0o077 == 0 && st.Nlink == 1 {
				return fd, nil
			}
			unix.Close(fd)
		}
		if try == 2 {
			return -1, fmt.Errorf("opening the lock %s: not a private file of this user's (%v)", name, err)
		}
		// Only root or this user can write the folder (trustedFd): what
		// is there is an older corral's, or planted by the same user.
		if err := unix.Unlinkat(dfd, name, 0); err != nil && err != unix.ENOENT {
			return -1, &os.PathError{Op: "unlink", Path: name, Err: err}
		}
	}
}

// stamp is a path and its modification time ("-" when it is missing).
type stamp struct{ path, mtime string }

// takeStamps records what changes when programs are installed: the
// package databases, each root and each folder directly in it (a new
// folder anywhere below a root changes the time of one of them).
func takeStamps(roots []string) []stamp {
	paths := slices.Clone(packageStamps)
	for _, r := range roots {
		paths = append(paths, r)
		for _, d := range subfolders(r) {
			paths = append(paths, d)
			if slices.Contains(deepStampRoots, r) {
				paths = append(paths, subfolders(d)...)
			}
		}
	}
	stamps := make([]stamp, len(paths))
	for i, p := range paths {
		stamps[i] = stamp{p, mtime(p)}
	}
	return stamps
}

func mtime(p string) string {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return "-"
	}
	return fmt.Sprintf("%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
}

// deepStampRoots get stamps two levels down: no package manager records
// what pip or npm install there (/usr/local/lib/python3.11/dist-packages/X).
var deepStampRoots = []string{"/usr/local/lib"}

func subfolders(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(-1)
	f.Close()
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// stampsHold checks the stamps, in two halves at once.
func stampsHold(stamps []stamp) bool {
	half := len(stamps) / 2
	other := make(chan bool, 1)
	go func() { other <- stampsHoldSerial(stamps[half:]) }()
	return stampsHoldSerial(stamps[:half]) && <-other
}

func stampsHoldSerial(stamps []stamp) bool {
	for _, s := range stamps {
		if mtime(s.path) != s.mtime {
			return false
		}
	}
	return true
}

// readProgramIndex reads file if it is trustworthy (a regular file owned
// by root or the caller, writable by nobody else, in such a folder), was
// built for roots less than programIndexMaxAge before now (at any time
// when now is zero), and its stamps hold.
func readProgramIndex(file string, roots []string, now time.Time) (Index, bool) {
	idx := Index{Source: file}
	if !safefile.Trusted(filepath.Dir(file), true) || !safefile.Trusted(file, false) {
		return idx, false
	}
	data, err := safefile.ReadNoFollow(file, 4<<20)
	if err != nil {
		return idx, false
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 4 || lines[0] != programIndexVersion || lines[1] != "roots "+quoteAll(roots) {
		return idx, false
	}
	built, err := strconv.ParseInt(strings.TrimPrefix(lines[2], "built "), 10, 64)
	if age := now.Sub(time.Unix(built, 0)); err != nil || !now.IsZero() && (age < 0 || age > programIndexMaxAge) {
		return idx, false
	}
	var stamps []stamp
	for _, line := range lines[3:] {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "stamp":
			m, q, _ := strings.Cut(rest, " ")
			p, err := strconv.Unquote(q)
			if err != nil {
				return idx, false
			}
			stamps = append(stamps, stamp{p, m})
		case "folder", "library":
			f, err := strconv.Unquote(rest)
			if err != nil {
				return idx, false
			}
			if kind == "folder" {
				idx.Folders = append(idx.Folders, f)
			} else {
				idx.Libraries = append(idx.Libraries, f)
			}
		case "end":
			// Every root must have its stamp: an index without them
			// would hold forever.
			for _, r := range roots {
				if !slices.ContainsFunc(stamps, func(s stamp) bool { return s.path == r }) {
					return idx, false
				}
			}
			return idx, stampsHold(stamps)
		default:
			return idx, false
		}
	}
	return idx, false // cut short
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}

// writeProgramIndex saves the index atomically, readable by everybody
// (it lists folders every user can list).
func writeProgramIndex(file string, roots []string, now time.Time, stamps []stamp, idx Index) error {
	var w bytes.Buffer
	fmt.Fprintf(&w, "%s\nroots %s\nbuilt %d\n", programIndexVersion, quoteAll(roots), now.Unix())
	for _, s := range stamps {
		fmt.Fprintf(&w, "stamp %s %s\n", s.mtime, strconv.Quote(s.path))
	}
	for _, f := range idx.Folders {
		fmt.Fprintf(&w, "folder %s\n", strconv.Quote(f))
	}
	for _, f := range idx.Libraries {
		fmt.Fprintf(&w, "library %s\n", strconv.Quote(f))
	}
	fmt.Fprintln(&w, "end")
	return safefile.Replace(file, ".programs-*", w.Bytes(), 0o644)
}

// walkPrograms finds, sorted, the folders under roots that directly hold
// an ELF program: a regular file with an execute bit whose ELF type is
// executable or shared object, other than a library (*.so, *.so.N;
// libc.so.6 can be run too, but every program needs it). Below those it
// also finds the folders that hold libraries and no programs. Symlinks are
// not followed: what they point to is not under the root's Landlock rule.
// Closing stop ends the walk early; complete is then false.
func walkPrograms(roots []string, stop <-chan struct{}) (idx Index, complete bool) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		stopped bool
		queue   []walkItem
		working int
		wg      sync.WaitGroup
	)
	for _, r := range roots {
		queue = append(queue, walkItem{r, false})
	}
	// A fixed set of workers takes folders from one queue: a goroutine
	// per folder would be 20,000 of them.
	for w := 0; w < 2*runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for {
				for len(queue) == 0 && working > 0 {
					cond.Wait()
				}
				select {
				case <-stop:
					stopped, queue = true, nil
				default:
				}
				if len(queue) == 0 {
					cond.Broadcast()
					return
				}
				it := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				working++
				mu.Unlock()
				subdirs, programs, libraries := scanFolder(it.dir)
				mu.Lock()
				working--
				switch {
				case programs:
					idx.Folders = append(idx.Folders, it.dir)
				case libraries && it.belowPrograms:
					idx.Libraries = append(idx.Libraries, it.dir)
				}
				for _, d := range subdirs {
					queue = append(queue, walkItem{d, it.belowPrograms || programs})
				}
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	slices.Sort(idx.Folders)
	idx.Folders = slices.Compact(idx.Folders)
	slices.Sort(idx.Libraries)
	idx.Libraries = slices.Compact(idx.Libraries)
	return idx, !stopped
}

type walkItem struct {
	dir           string
	belowPrograms bool
}

// scanFolder lists dir's subfolders and says whether dir holds a program
// and whether it holds a library.
func scanFolder(dir string) (subdirs []string, programs, libraries bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false, false
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	entries, _ := f.ReadDir(-1)
	for _, e := range entries {
		switch {
		case e.IsDir():
			subdirs = append(subdirs, filepath.Join(dir, e.Name()))
		case !e.Type().IsRegular():
		case IsLibraryName(e.Name()):
			libraries = true
		case programs:
		default:
			var st unix.Stat_t
			if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&0o111 != 0 && isELFProgram(fd, e.Name()) {
				programs = true
			}
		}
	}
	return subdirs, programs, libraries
}

// IsLibraryName reports whether name is a shared library's (*.so,
// *.so.N): every program needs libc.so.6, which can also be run.
func IsLibraryName(name string) bool {
	_, after, found := strings.Cut(name, ".so")
	return found && (after == "" || after[0] == '.')
}

// isELFProgram reads the ELF header of dirfd/name: type ET_EXEC or ET_DYN.
func isELFProgram(dirfd int, name string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var head [18]byte
	if n, _ := unix.Pread(fd, head[:], 0); n < len(head) || string(head[:4]) != "\x7fELF" {
		return false
	}
	var typ uint16
	if head[5] == 2 {
		typ = binary.BigEndian.Uint16(head[16:])
	} else {
		typ = binary.LittleEndian.Uint16(head[16:])
	}
	return typ == 2 || typ == 3 // ET_EXEC, ET_DYN
}
