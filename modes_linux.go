//go:build linux

package corral

import (
	"fmt"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// The sweep's second look at modes (docs/modes.md). The seccomp table
// refuses every call that sets a setuid or setgid bit, and the extended
// attribute calls, in both tiers; this is the layer behind it, for a
// set-id file already in a writable folder that the command changed
// (linked, moved, or rewrote through a shared mapping, which keeps the
// bits) and for anything the first layer might miss. It looks at every
// file of the writable roots, one fstatat each, and at those that changed
// during the run (their ctime):
//
//   - a set-id bit is taken off (the file keeps its other bits);
//   - an executable's file capabilities are removed;
//   - where either fails, the name is removed (it must not stay), or
//     reported if the file has other names, one maybe the user's own.
//
// Folders keep a setgid bit: it gives no privilege (new files get the
// folder's group), the kernel gives it to a folder made in a setgid one,
// and no call can add it.

// setIDBits are the mode bits with which a program runs as its file's
// owner or group.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// capabilityXattr holds a file's capabilities, which a program gains when
// it runs (as ping's CAP_NET_RAW).
const capabilityXattr = "security.capability"

// fileModes checks the files (names) of the folder fd, whose path is
// dir, that changed during the run: one fstatat each, since a file can
// change in a folder that does not (a write through a shared mapping of
// a set-id file keeps its bits, as write(2) would not). In a git folder
// (inGit) a changed file any user may write is closed too.
func (s *sweep) fileModes(fd int, dir string, names []string, inGit bool) {
	for _, n := range names {
		st, ok := s.stat(fd, n)
		if !ok || st.Mode&unix.S_IFMT != unix.S_IFREG || !s.freshTime(&st) {
			continue
		}
		if st.Mode&(setIDBits|0o111) != 0 {
			s.fileMode(fd, dir, n, &st)
		}
		if inGit && st.Mode&strangersWrite != 0 {
			s.closeFileBits(fd, dir, n, "a file of a git folder", strangersWrite)
		}
	}
}

// gitEntryOpen closes the folder f (path p), inside a git folder, to any
// user if it changed during the run: another user who can write refs,
// objects or info/ could choose what the user's next checkout, build or
// filter runs.
func (s *sweep) gitEntryOpen(f *sweepFrame, p string) {
	var st unix.Stat_t
	if unix.Fstat(f.fd, &st) != nil || st.Mode&strangersWrite == 0 || !s.fresh(&st) {
		return
	}
	if s.known[p] || s.known[path.Dir(p)] && f.name == "hooks" {
		return // recorded at launch: restoreModes puts it back
	}
	s.closeBits(f.fd, p, "a folder of a git folder", &st, strangersWrite)
}

// fileMode takes the set-id bits and file capabilities off dir/name
// (dirfd), the regular file st, through a descriptor of its own.
func (s *sweep) fileMode(dirfd int, dir, name string, st *unix.Stat_t) {
	p := dir + "/" + name
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: the mode of a file the command changed: %v", p, err))
		return
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&unix.S_IFMT != unix.S_IFREG {
		s.Errs = append(s.Errs, p+": changed while corral looked at its mode")
		return
	}
	if mode := uint32(now.Mode & 0o7777); mode&setIDBits != 0 {
		const why = "a set-id file the command made, moved, linked or rewrote: anyone who can reach it would run it with its owner's or group's ids"
		to := mode &^ setIDBits
		if err := chmodFd(fd, to); err != nil {
			s.removeName(dirfd, dir, name, &now, why, fmt.Sprintf("taking the bits off failed: %v", err))
			return
		}
		s.Reset = append(s.Reset, Reset{Path: p, From: strconv.FormatUint(uint64(mode), 8), To: strconv.FormatUint(uint64(to), 8), Why: why + namesNote(&now)})
	}
	if now.Mode&0o111 == 0 {
		return
	}
	magic := "/proc/self/fd/" + strconv.Itoa(fd)
	if n, err := unix.Getxattr(magic, capabilityXattr, nil); err != nil || n <= 0 {
		return
	}
	const why = "an executable with file capabilities the command made, moved, linked or rewrote: it would run with them for anyone who can reach it"
	if err := unix.Removexattr(magic, capabilityXattr); err != nil {
		s.removeName(dirfd, dir, name, &now, why, fmt.Sprintf("removing them failed: %v", err))
		return
	}
	s.Reset = append(s.Reset, Reset{Path: p, From: capabilityXattr, Why: why + namesNote(&now)})
}

// namesNote says that a file with more names than one changed under all
// of them.
func namesNote(st *unix.Stat_t) string {
	if st.Nlink < 2 {
		return ""
	}
	return fmt.Sprintf(" (the file has %d names: the change holds for each)", st.Nlink)
}

// removeName removes dir/name (dirfd), a file corral could not make
// harmless, and records why; one with more names (nlink) may be the
// user's own under this one: it is reported for the user to check.
func (s *sweep) removeName(dirfd int, dir, name string, st *unix.Stat_t, why, failed string) {
	p := dir + "/" + name
	if st.Nlink > 1 {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: %s; %s, and it has %d names, one of which may be the user's own", p, why, failed, st.Nlink))
		return
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: %s; %s, and removing it failed: %v", p, why, failed, err))
		return
	}
	s.Moved = append(s.Moved, Quarantined{Path: p, Why: why + "; " + failed + ", so corral REMOVED it"})
}
