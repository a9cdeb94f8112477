//go:build linux

package corral

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox"
)

// The folders other users must not be able to change (docs/modes.md): a
// git folder (whose hooks and config git runs), its hooks folder, a write
// grant's top, the home folder and the protected paths. A command owns
// them and can chmod them (no capability needed), or make new ones with
// umask 0; another local user could then swap the hooks the corral user's
// next git commit runs. corral records the modes and ACLs of those that
// exist at launch, before the command starts, and after the run takes
// back any group or other write right they gained (and an ACL they
// gained); the sweep does the same for the git folders and hooks folders
// it finds that changed during the run (sweep_linux.go).

// aclXattrs are the extended attributes that hold a POSIX ACL: the
// access ACL and a folder's default for what is made in it.
var aclXattrs = []string{"system.posix_acl_access", "system.posix_acl_default"}

// othersWrite are the mode bits that let other users change a folder.
const othersWrite = 0o022

// strangersWrite is the bit that lets any user change a file: what the
// rest of a git folder (refs, objects, info) may not keep from the run.
// Its group's write right stays there (a umask 002 system gives it to
// every file git makes, for a group that is the user's own).
const strangersWrite = 0o002

// modeRecord is a file or folder as it was at launch.
type modeRecord struct {
	Path string   `json:"path"`
	Dev  uint64   `json:"dev"`
	Ino  uint64   `json:"ino"`
	Mode uint32   `json:"mode"`
	ACLs []string `json:"acls,omitempty"` // the ACL attributes it had
	Why  string   `json:"why"`
}

// recordModes records, at launch, the modes and ACLs of the folders and
// files of the plan other users must not gain write to: each write
// root's top, the home folder if a write root holds it, the protected
// paths that exist (bound read-only in the namespaces tier, watched in
// the landlock tier) and the git folders they are in. A few lstats.
func recordModes(plan *sandbox.Plan, home string) []modeRecord {
	var out []modeRecord
	seen := map[string]bool{}
	add := func(p, why string) {
		if seen[p] {
			return
		}
		seen[p] = true
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return
		}
		rec := modeRecord{Path: p, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode & 0o7777, Why: why}
		for _, a := range aclXattrs {
			if n, err := unix.Lgetxattr(p, a, nil); err == nil && n > 0 {
				rec.ACLs = append(rec.ACLs, a)
			}
		}
		out = append(out, rec)
	}
	for _, r := range plan.WriteRoots {
		add(r, "a write grant's top")
	}
	if home != "" && slices.ContainsFunc(plan.WriteRoots, func(r string) bool { return home == r || strings.HasPrefix(home, strings.TrimSuffix(r, "/")+"/") }) {
		add(home, "the home folder")
	}
	for _, p := range slices.Concat(plan.Protected, plan.SweepKnown) {
		if base := path.Base(p); base == "config" || base == "hooks" || base == "config.worktree" {
			add(path.Dir(p), "a git folder")
		}
		add(p, "a protected path")
	}
	return out
}

// restoreModes takes back, after the run, the group and other write
// rights and the ACLs each recorded file or folder gained. One that is
// gone or is another file now is left alone: the sweep looks at what is
// there instead.
func restoreModes(recs []modeRecord) (reset []Reset, errs []string) {
	for _, rec := range recs {
		fd, err := unix.Open(rec.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Dev != rec.Dev || st.Ino != rec.Ino {
			unix.Close(fd)
			continue
		}
		mode := uint32(st.Mode & 0o7777)
		why := fmt.Sprintf("%s, which other users must not change; the command opened it to them", rec.Why)
		if gained := mode &^ rec.Mode & othersWrite; gained != 0 {
			if err := chmodFd(fd, mode&^gained); err != nil {
				errs = append(errs, fmt.Sprintf("%s (%s) gained mode %o and corral could not take it back: %v", rec.Path, rec.Why, gained, err))
			} else {
				reset = append(reset, Reset{Path: rec.Path, From: strconv.FormatUint(uint64(mode), 8), To: strconv.FormatUint(uint64(mode&^gained), 8), Why: why})
			}
		}
		magic := "/proc/self/fd/" + strconv.Itoa(fd)
		for _, a := range aclXattrs {
			if slices.Contains(rec.ACLs, a) {
				continue
			}
			if n, err := unix.Getxattr(magic, a, nil); err != nil || n <= 0 {
				continue
			}
			if err := unix.Removexattr(magic, a); err != nil {
				errs = append(errs, fmt.Sprintf("%s (%s) gained an ACL (%s) and corral could not remove it: %v", rec.Path, rec.Why, a, err))
				continue
			}
			reset = append(reset, Reset{Path: rec.Path, From: a, Why: why})
		}
		unix.Close(fd)
	}
	return reset, errs
}

// closeToOthers takes the group and other write rights off the folder or
// file fd (path p; what it is says why it matters), which changed during
// the run and was not recorded at launch. A shared repository's
// (core.sharedRepository) are not kept: git in the sandbox cannot work in
// one (it gives the folders it makes the setgid bit, which no chmod
// there may set), and the sweep quarantines a changed repository's
// setting, which makes git create files other users can write.
func (s *sweep) closeToOthers(fd int, p, what string, st *unix.Stat_t) {
	s.closeBits(fd, p, what, st, othersWrite)
}

// closeBits takes the bits of bits (othersWrite, or only other users')
// off the folder or file fd (path p).
func (s *sweep) closeBits(fd int, p, what string, st *unix.Stat_t, bits uint32) {
	mode := uint32(st.Mode & 0o7777)
	strip := mode & bits
	if strip == 0 {
		return
	}
	if err := chmodFd(fd, mode&^strip); err != nil {
		s.Errs = append(s.Errs, fmt.Sprintf("%s: %s other users could change (mode %o), and corral could not close it: %v", p, what, mode, err))
		return
	}
	s.touched(st)
	s.closed[[2]uint64{st.Dev, st.Ino}] |= strip
	s.Reset = append(s.Reset, Reset{Path: p, From: strconv.FormatUint(uint64(mode), 8), To: strconv.FormatUint(uint64(mode&^strip), 8),
		Why: what + " the command made or changed, open to other users, who could then change what git runs"})
}

// closeFile is closeToOthers for the file dir/name (dirfd), opened
// without following a symlink.
func (s *sweep) closeFile(dirfd int, dir, name, what string) {
	s.closeFileBits(dirfd, dir, name, what, othersWrite)
}

// closeFileBits is closeBits for the file dir/name (dirfd).
func (s *sweep) closeFileBits(dirfd int, dir, name, what string, bits uint32) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		s.closeBits(fd, dir+"/"+name, what, &st, bits)
	}
}
