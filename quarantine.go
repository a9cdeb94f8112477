package corral

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/internal/nofollow"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
)

// Quarantined is a protected path the command created, or sent elsewhere
// through a symlink it replaced, and the name corral moved it to.
type Quarantined struct {
	Path string `json:"path"`
	To   string `json:"to"`
	Why  string `json:"why"`
}

// KeptPaths are the files and folders a run must not change: the active
// skills' folders (and skill files named directly), the policy files ev
// was read from and more (a global policy file that does not exist yet),
// absolute and clean. explain shows what exec keeps.
func KeptPaths(sk *Skills, ev *agentpolicy.Evaluator, more ...string) []string {
	var out []string
	for _, s := range sk.List {
		out = append(out, s.Dir)
		if filepath.Base(s.File) != "SKILL.md" {
			out = append(out, s.File)
		}
	}
	if ev != nil {
		out = append(out, ev.Files()...)
	}
	for _, k := range more {
		if k == "" {
			continue
		}
		if abs, err := filepath.Abs(k); err == nil {
			out = append(out, abs)
		}
	}
	// A skill folder named through a symlink (a skill linked into a
	// project) is kept by its real path too: the writable roots it is
	// compared with are real paths.
	for i, p := range out {
		out[i] = filepath.Clean(p)
		if real := realPath(out[i]); real != out[i] {
			out = append(out, real)
		}
	}
	return out
}

// realPath is p with every symlink resolved, or, for a missing file, its
// folder's real path joined with its name (p itself when neither
// resolves).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(d, filepath.Base(p))
	}
	return p
}

// quarantine renames, after the run, what the command left at the
// protected paths that did not exist at launch (or whose symlinks it
// replaced), so no host tool reads it; nothing is deleted. Nothing of the
// sandbox runs any more, so the paths cannot change under it. About 1 µs
// a path.
func quarantine(list []sandbox.Quarantine, warn func(string)) []Quarantined {
	var out []Quarantined
	var restore []func()
	defer func() {
		for i := len(restore) - 1; i >= 0; i-- {
			restore[i]()
		}
	}()
	// moveIn moves the entry name of the folder dirfd (path dir) aside.
	moveIn := func(dirfd int, dir, name, why string) {
		p := filepath.Join(dir, name)
		to, removed, err := moveAsideAt(dirfd, dir, name, os.Geteuid())
		switch {
		case err != nil:
			warn(fmt.Sprintf("the command created %s (%s); moving it aside failed: %v: remove it before a host tool reads it", printable.String(p), why, err))
		case removed:
			warn(fmt.Sprintf("the command created %s (%s); no name to move it to was free, so corral REMOVED it", printable.String(p), why))
		default:
			to = filepath.Join(dir, to)
			out = append(out, Quarantined{Path: p, To: to, Why: why})
			warn(fmt.Sprintf("the command created %s (%s): moved to %s, where no tool reads it", printable.String(p), why, printable.String(to)))
		}
	}
	move := func(p, why string) {
		dir, name := filepath.Split(p)
		fd, err := nofollow.OpenDir(filepath.Clean(dir))
		if err != nil {
			warn(fmt.Sprintf("the command created %s (%s); moving it aside failed: %v: remove it before a host tool reads it", printable.String(p), why, err))
			return
		}
		defer unix.Close(fd)
		moveIn(fd, filepath.Clean(dir), name, why)
	}
	for _, q := range list {
		if q.Real != "" {
			// A link corral cannot follow (too long, missing, a loop)
			// may still lead somewhere for the kernel or a tool later:
			// taken as re-pointed.
			if real, err := filepath.EvalSymlinks(q.Path); err != nil {
				if _, lerr := os.Lstat(q.Path); lerr == nil {
					warn(fmt.Sprintf("corral cannot follow %s any more (%v); it led to %s at launch", printable.String(q.Path), err, q.Real))
					move(q.Path, q.Why+"; it led to "+q.Real+" at launch, and corral cannot follow it now")
				}
			} else if real != q.Real {
				move(q.Path, q.Why+"; it led to "+q.Real+" at launch")
			}
			continue
		}
		quarantineBelow(q, moveIn, &restore, warn)
	}
	return out
}

// quarantineBelow walks from q.From, which existed at launch, towards
// q.Path, below which everything was made by the run, one folder
// descriptor at a time without following a symlink, and moves aside the
// first symlink on the way (which could lead anywhere) or the path
// itself.
func quarantineBelow(q sandbox.Quarantine, moveIn func(dirfd int, dir, name, why string), restore *[]func(), warn func(string)) {
	fd, err := nofollow.OpenDir(q.From)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			warn(fmt.Sprintf("corral cannot check %s (%v), a protected path that did not exist at launch (%s): check it before a host tool reads it", printable.String(q.Path), err, q.Why))
		}
		return
	}
	defer func() { unix.Close(fd) }()
	cur := q.From
	parts := strings.Split(strings.TrimPrefix(q.Path, q.From+"/"), "/")
	for i, part := range parts {
		var st unix.Stat_t
		err := unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EACCES && searchOwn(fd, restore) {
			err = unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			if err != unix.ENOENT {
				warn(fmt.Sprintf("corral cannot check %s (%v), a protected path that did not exist at launch (%s): check it before a host tool reads it", printable.String(filepath.Join(cur, part)), err, q.Why))
			}
			return
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK || i == len(parts)-1 {
			moveIn(fd, cur, part, q.Why)
			return
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		next, err := unix.Openat(fd, part, dirPathFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			warn(fmt.Sprintf("corral cannot check %s (%v), a protected path that did not exist at launch (%s): check it before a host tool reads it", printable.String(filepath.Join(cur, part)), err, q.Why))
			return
		}
		unix.Close(fd)
		fd, cur = next, filepath.Join(cur, part)
	}
}

// searchOwn gives the folder fd its owner's search right if corral's user
// owns it and it lacks it (the command made it chmod 600), recording how
// to put the mode back.
func searchOwn(fd int, restore *[]func()) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o100 != 0 {
		return false
	}
	mode := uint32(st.Mode & 0o7777)
	if chmodFd(fd, mode|0o100) != nil {
		return false
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		chmodFd(fd, mode)
		return false
	}
	*restore = append(*restore, func() {
		chmodFd(dup, mode)
		unix.Close(dup)
	})
	return true
}

// moveAsideAt is how the sweep and the protected paths' check move what
// the command left where a host tool reads it: renamed in its folder
// (dirfd, whose path is dir) to NAME.corral-quarantined-RANDOM, a name
// the command could not take in advance, retried with new random parts
// until one is free (a short name without NAME if NAME is too long for
// the suffix). A folder the command made read-only is made writable for
// the rename if it is uid's. Only if no rename works is the file removed,
// as the last resort (removed true): it must not stay where it is. err
// is set only if even that failed.
func moveAsideAt(dirfd int, dir, name string, uid int) (to string, removed bool, err error) {
	short := false
	for i := 0; i < 16; i++ {
		var rnd [6]byte
		rand.Read(rnd[:])
		to = name + sandbox.QuarantineSuffix + "-" + hex.EncodeToString(rnd[:])
		if short || len(to) > 255 {
			short = true
			to = sandbox.QuarantineSuffix[1:] + "-" + hex.EncodeToString(rnd[:])
		}
		err = renameNoReplaceAt(dirfd, name, to)
		if err == unix.EACCES || err == unix.EPERM {
			var st unix.Stat_t
			// The command made the folder read-only; it is corral's
			// user's, so corral may write it for the rename.
			if unix.Fstat(dirfd, &st) == nil && int(st.Uid) == uid && st.Mode&0o300 != 0o300 &&
				chmodFd(dirfd, uint32(st.Mode&0o7777|0o300)) == nil {
				err = renameNoReplaceAt(dirfd, name, to)
				chmodFd(dirfd, uint32(st.Mode&0o7777))
			}
		}
		switch err {
		case nil:
			return to, false, nil
		case unix.EEXIST:
			continue
		case unix.ENAMETOOLONG:
			short = true
			continue
		}
		break
	}
	rerr := err
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return "", false, fmt.Errorf("renaming it failed: %v", rerr)
	}
	if err = removeAllAt(dirfd, dir, name); err != nil {
		return "", false, fmt.Errorf("renaming it failed (%v), and removing it failed: %v", rerr, err)
	}
	return "", true, nil
}
