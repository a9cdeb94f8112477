package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
)

// outFile is one of corral's own files, --report or --audit-log. It is
// opened before the command starts and written through that descriptor,
// so nothing the command does to the path matters: a symlink or hard
// link a sandboxed command planted would otherwise let corral (often
// root) overwrite or append to any file the link names.
type outFile struct {
	flag, name string // as given, for messages
	f          *os.File
	dir        *os.File // its folder (O_PATH), to remove an audit log left empty
	base       string
	appendOnly bool

	mu      sync.Mutex
	written int64
	// limit caps the bytes written (0: no cap); entries beyond it are
	// counted in dropped, and Close writes one entry saying how many.
	limit   int64
	dropped int
	agent   string
	stream  bool // the caller's own stdout, stderr or /dev/fd/N
	closed  bool
}

// openOutput opens name for corral to write (appending with appendOnly).
// It refuses, with one line naming flag and why:
//   - a path inside roots, the folders the sandbox can write (by its own
//     name, or by its folder's real path when the folder is reached
//     through a symlink): the command could read the file, or replace it
//     with a link while corral is not looking;
//   - a last component that is a symlink (O_NOFOLLOW), wherever it is;
//   - an existing regular file with another hard link, which writing
//     would change too; and anything but a regular file, a character
//     device (/dev/null) or a named pipe the caller made.
func openOutput(flag, name string, roots []string, appendOnly bool) (*outFile, error) {
	o := &outFile{flag: flag, name: name}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, o.errorf("%v", err)
	}
	if fd, ok := callerStream(abs); ok {
		// /dev/stdout, /dev/stderr and /dev/fd/N are links the system
		// made to corral's own descriptors, not links a sandbox planted:
		// write through a copy of the descriptor itself.
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, o.errorf("%v", err)
		}
		f := os.NewFile(uintptr(nfd), name)
		o.stream = true
		if err := o.check(f, unix.O_WRONLY|unix.O_APPEND); err != nil {
			f.Close()
			return nil, err
		}
		o.f, o.appendOnly = f, appendOnly
		return o, nil
	}
	if root := within(abs, roots); root != "" {
		return nil, o.errorf("is inside %s, which the sandboxed command can write (it could read the file or plant a link there): write it outside the work dir and the write grants", printable.String(root))
	}
	dirName, base := filepath.Split(abs)
	if base == "" || base == "." || base == ".." {
		return nil, o.errorf("names a folder, not a file")
	}
	if o.dir, err = os.OpenFile(dirName, dirFlags, 0); err != nil {
		return nil, o.errorf("%v", err)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(o.dir.Fd())))
	if err != nil || !filepath.IsAbs(real) {
		real, err = filepath.EvalSymlinks(dirName)
	}
	if err != nil {
		o.dir.Close()
		return nil, o.errorf("finding its folder's real path: %v", err)
	}
	if root := within(filepath.Join(real, base), roots); root != "" {
		o.dir.Close()
		return nil, o.errorf("is %s through a symlink, inside %s, which the sandboxed command can write: write it outside the work dir and the write grants", printable.String(filepath.Join(real, base)), printable.String(root))
	}
	o.base, o.appendOnly = base, appendOnly
	if err := o.open(!appendOnly); err != nil {
		o.dir.Close()
		return nil, err
	}
	return o, nil
}

// open opens the file in the folder held open, creating it with create;
// without, a missing file leaves o.f nil (an audit log is made at its
// first entry: creating and removing one on every run that decides
// nothing cost about 1 ms on ext4). Either way a link planted there
// since is refused (O_EXCL and O_NOFOLLOW).
func (o *outFile) open(create bool) error {
	flags, mode := unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(0o644)
	if o.appendOnly {
		flags, mode = flags|unix.O_APPEND, 0o600
	}
	dirfd := int(o.dir.Fd())
	fd, err := unix.Openat(dirfd, o.base, flags, 0)
	if errors.Is(err, unix.ENOENT) {
		if !create {
			return nil
		}
		fd, err = unix.Openat(dirfd, o.base, flags|unix.O_CREAT|unix.O_EXCL, mode)
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return o.errorf("is a symlink: corral does not follow links for its own files")
	case errors.Is(err, unix.ENXIO):
		return o.errorf("is a named pipe nobody reads")
	case err != nil:
		return o.errorf("%v", err)
	}
	f := os.NewFile(uintptr(fd), o.name)
	if err := o.check(f, flags); err != nil {
		f.Close()
		return err
	}
	o.f = f
	return nil
}

// check refuses what corral must not write through f: a regular file
// with another hard link, or anything but a regular file, a character
// device, a pipe, or a socket the caller passed as a descriptor.
func (o *outFile) check(f *os.File, flags int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return o.errorf("%v", err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return o.errorf("has %d hard links: writing it would change the file under its other names too", st.Nlink)
		}
	case unix.S_IFCHR:
		// /dev/null or a terminal; not /dev/kmsg, a disk's raw device
		// or any other device root could write through a file name.
		if !o.stream && !(unix.Major(uint64(st.Rdev)) == 1 && unix.Minor(uint64(st.Rdev)) == 3) && !isTerminal(f) {
			return o.errorf("is a device: corral writes its files to regular files, /dev/null, a terminal or a pipe")
		}
	case unix.S_IFIFO:
	case unix.S_IFSOCK:
		// A socket the caller passed as a descriptor: no path, no link.
		if !o.stream {
			return o.errorf("is not a regular file")
		}
	default:
		return o.errorf("is not a regular file")
	}
	// Blocking again (O_NONBLOCK kept a pipe nobody reads from
	// blocking the open). A stream is the caller's open file: only
	// O_NONBLOCK is taken off, its other flags (O_APPEND or not) stay.
	if o.stream {
		cur, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err == nil && cur&unix.O_NONBLOCK != 0 {
			_, err = unix.FcntlInt(f.Fd(), unix.F_SETFL, cur&^unix.O_NONBLOCK)
		}
		if err != nil {
			return o.errorf("%v", err)
		}
		return nil
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFL, flags&unix.O_APPEND); err != nil {
		return o.errorf("%v", err)
	}
	return nil
}

func (o *outFile) errorf(format string, args ...any) error {
	return fmt.Errorf("%s %s: %s", o.flag, printable.String(o.name), fmt.Sprintf(format, args...))
}

// callerStream returns the descriptor that /dev/stdout, /dev/stderr,
// /dev/fd/N or /proc/self/fd/N names.
func callerStream(p string) (int, bool) {
	switch p {
	case "/dev/stdout", "/proc/self/fd/1":
		return 1, true
	case "/dev/stderr", "/proc/self/fd/2":
		return 2, true
	}
	for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, err := strconv.Atoi(strings.TrimPrefix(p, prefix)); strings.HasPrefix(p, prefix) && err == nil && n >= 0 {
			return n, true
		}
	}
	return 0, false
}

// within returns the root p is in, or "".
func within(p string, roots []string) string {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && (len(rel) < 3 || rel[:3] != "../") {
			return r
		}
	}
	return ""
}

// replace makes data the file's whole content (the report).
func (o *outFile) replace(data []byte) error {
	if st, err := o.f.Stat(); err == nil && st.Mode().IsRegular() && !o.stream {
		if err := o.f.Truncate(0); err != nil {
			return err
		}
		if _, err := o.f.Seek(0, 0); err != nil {
			return err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	write := o.f.Write
	if o.stream {
		// stdout or a descriptor the command held too.
		write = func(p []byte) (int, error) { return writeBlocking(o.f, p) }
	}
	n, err := write(printable.JSON(data))
	o.written += int64(n)
	return err
}

// Write appends one JSON line (the audit log), escaped (printable.JSON);
// past the limit the line is dropped and counted.
func (o *outFile) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit > 0 && o.written+int64(len(p)) > o.limit {
		o.dropped++
		return len(p), nil
	}
	if o.f == nil {
		if err := o.open(true); err != nil {
			return 0, err
		}
	}
	n, err := o.f.Write(printable.JSON(p))
	o.written += int64(n)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// auditDropped is the audit log's last entry when its cap dropped some.
type auditDropped struct {
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent,omitempty"`
	Permission string    `json:"permission"` // "audit"
	Decision   string    `json:"decision"`   // "dropped"
	Dropped    int       `json:"dropped"`
	LimitBytes int64     `json:"limit_bytes"`
	Reason     string    `json:"reason"`
}

// Close writes the count of dropped entries and closes the file.
func (o *outFile) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	if o.dir != nil {
		defer func() { o.dir.Close(); o.dir = nil }()
	}
	if o.f == nil && o.dropped > 0 {
		if err := o.open(true); err != nil {
			return err
		}
	}
	if o.f == nil {
		return nil // no entry: no file
	}
	var err error
	if o.dropped > 0 {
		line, _ := json.Marshal(auditDropped{Time: time.Now(), Agent: o.agent, Permission: "audit", Decision: "dropped", Dropped: o.dropped, LimitBytes: o.limit,
			Reason: fmt.Sprintf("the audit log reached this run's cap of %s (--audit-log-max); %d later entries were not written", sandbox.FormatSize(o.limit), o.dropped)})
		_, err = o.f.Write(append(printable.JSON(line), '\n'))
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	o.f = nil
	return err
}
