package stage

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/internal/safefile"
	"corral.dev/corral/sandbox/progindex"
	"corral.dev/corral/sandbox/unfinished"
)

// The mount cache lets the init build the new root while corral is still
// probing the host and building the plan: corral saves each plan's mount
// block (its mount records, as sent) in the file the constructor chose
// for the run's user, folder and options (nsinit_linux.c), and the next
// run's init builds from it ahead of the plan (corral_mounts_ahead in
// init_ahead_linux.c). The init uses that root only when the plan's block is
// byte for byte the saved one, so a stale, damaged or forged file costs
// time, never a mount the plan does not have.

// mountCacheMagic starts a cache file (MOUNT_CACHE_MAGIC in init_ahead_linux.c);
// the key follows as 8 little-endian bytes, then the block.
const mountCacheMagic = "corral mounts 1\n"

// SaveMountCache writes block to file with key, unless the file already
// holds exactly that and is one the init reads (readOwnFile). The folder
// is made (0700) if missing and must be this user's or root's and
// writable by no one else; the file is written whole and renamed into
// place, so the init never reads half of one.
func SaveMountCache(file string, key uint64, block []byte) error {
	want := make([]byte, 0, len(mountCacheMagic)+8+len(block))
	want = append(want, mountCacheMagic...)
	want = binary.LittleEndian.AppendUint64(want, key)
	want = append(want, block...)
	if have, ok := readOwnFile(file, len(want)); ok && bytes.Equal(have, want) {
		return nil
	}
	// The folder above (/run/corral) also holds the program index, which
	// every user reads: made 0755 here if this run is the first.
	dir := filepath.Dir(file)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	if !safefile.Trusted(dir, true) {
		return &os.PathError{Op: "save mount cache", Path: dir, Err: os.ErrPermission}
	}
	return safefile.Replace(file, ".mounts-*", want, 0o600)
}

// readOwnFile reads file (up to max bytes) if it is a regular file of
// this user's that no one else can write, the only kind the init reads.
// It never blocks: a FIFO there is not read.
func readOwnFile(file string, max int) ([]byte, bool) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 || st.Size > int64(max) {
		return nil, false
	}
	buf := make([]byte, st.Size)
	for got := 0; got < len(buf); {
		n, err := unix.Read(fd, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return nil, false
		}
		got += n
	}
	return buf, true
}

// StateDirs are the folders of what later runs trust, as named and as
// their real paths: the program index's, the mount cache's (the one the
// constructor chose, and any CORRAL_MOUNT_CACHE names) and the one that
// holds the records of unfinished runs (package unfinished). A write grant
// may neither reach into nor cover them (build.go).
func StateDirs() []string {
	var dirs []string
	add := func(d string) {
		if d == "" {
			return
		}
		dirs = append(dirs, filepath.Clean(d))
		if real, err := filepath.EvalSymlinks(d); err == nil && real != filepath.Clean(d) {
			dirs = append(dirs, real)
		}
	}
	for _, file := range progindex.Files() {
		add(filepath.Dir(file))
	}
	add(MountCacheDir())
	add(filepath.Dir(unfinished.Dir())) // the records' folder, and its parent that holds it
	if d := os.Getenv("CORRAL_MOUNT_CACHE"); filepath.IsAbs(d) {
		add(d)
	}
	return dirs
}
