package sandbox

import "golang.org/x/sys/unix"

// Held keeps the files at some paths open, to tell afterwards whether a
// path still names the same file. Comparing device and inode numbers
// alone is not enough: once a replaced file is freed, the filesystem may
// give its inode number to the next file made there; a held file cannot
// be freed.
type Held struct {
	paths []string
	fds   []int
}

// Hold opens each path (without following a final symlink); a path that
// cannot be opened is not watched (its fd is -1).
func Hold(paths []string) *Held {
	h := &Held{}
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		h.paths = append(h.paths, p)
		h.fds = append(h.fds, fd)
	}
	return h
}

// Replaced returns the paths that no longer name the file held for them.
func (h *Held) Replaced() []string {
	var out []string
	for i, p := range h.paths {
		var held, now unix.Stat_t
		if h.fds[i] < 0 || unix.Fstat(h.fds[i], &held) != nil {
			continue
		}
		if unix.Lstat(p, &now) != nil || now.Dev != held.Dev || now.Ino != held.Ino {
			out = append(out, p)
		}
	}
	return out
}

// Files returns each path with the device and inode of the file held for
// it; one that could not be held has Held false.
func (h *Held) Files() []HeldFile {
	var out []HeldFile
	for i, p := range h.paths {
		var st unix.Stat_t
		if h.fds[i] >= 0 && unix.Fstat(h.fds[i], &st) == nil {
			out = append(out, HeldFile{Path: p, Held: true, Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), Ino: st.Ino})
		} else {
			out = append(out, HeldFile{Path: p})
		}
	}
	return out
}

// Close closes the held files.
func (h *Held) Close() {
	for _, fd := range h.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	h.fds, h.paths = nil, nil
}
