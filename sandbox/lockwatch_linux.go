package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"corral.dev/corral/printable"
	"golang.org/x/sys/unix"
)

// lockWatch notes the lock files a command makes beside the protected
// files bound read-only (git makes config.lock and renames it over
// config): the rename fails with EBUSY, which git reports as "Device or
// resource busy", and only corral can say that it keeps the file
// read-only. One inotify watch per folder, read once after the run.
type lockWatch struct {
	fd    int
	dirs  map[int32]string
	files map[string]bool // the protected files, by path
}

// watchLocks starts watching the folders of the plan's protected files
// (nil when there are none or inotify is unavailable).
func watchLocks(protected []string) *lockWatch {
	if len(protected) == 0 {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &lockWatch{fd: fd, dirs: map[int32]string{}, files: map[string]bool{}}
	watched := map[string]bool{}
	for _, p := range protected {
		dir := filepath.Dir(p)
		w.files[p] = true
		if watched[dir] {
			continue
		}
		watched[dir] = true
		if wd, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ONLYDIR); err == nil {
			w.dirs[int32(wd)] = dir
		}
	}
	if len(w.dirs) == 0 {
		unix.Close(fd)
		return nil
	}
	return w
}

// finish reads what was made and says, once per file, which protected
// file the command tried to replace.
func (w *lockWatch) finish(warn func(string)) {
	if w == nil {
		return
	}
	defer unix.Close(w.fd)
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			base, ok := cutLock(string(name))
			if !ok {
				continue
			}
			file := filepath.Join(w.dirs[ev.Wd], base)
			if !w.files[file] || seen[file] {
				continue
			}
			seen[file] = true
			warn(fmt.Sprintf("the command tried to replace %s (it made %s.lock, as git does before renaming it over the file): corral keeps it read-only in the sandbox, so the rename failed, which git reports as \"Device or resource busy\"; a repository's config and hooks are the host's to change (run that git config outside the sandbox)", printable.String(file), printable.String(filepath.Base(file))))
		}
	}
}

func cutLock(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".lock")
	return base, ok && base != ""
}
