package corral

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
	"golang.org/x/sys/unix"
)

// HomeStoreRoot is the folder that holds the private HOME caches of every
// work dir and set of skills: $XDG_CACHE_HOME/corral/homes, or
// ~/.cache/corral/homes. "" when there is no home to put it in.
func HomeStoreRoot(home string) string {
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(filepath.Clean(x), "corral", "homes")
	}
	if !filepath.IsAbs(home) || home == "/" {
		return ""
	}
	return filepath.Join(home, ".cache", "corral", "homes")
}

// homeKey names the store of a work dir and a set of skills: the work
// dir's last name (for people) and a hash of the work dir and the skill
// folders, by their real paths, and of what else decides what a run may do
// (extra: the merged permissions after the policy's caps, the tier). A
// run that could reach less (no network, a read-only work dir) never
// shares caches with one that could reach more: what the one leaves there
// (a hard link, a program a tool runs from its cache) must not act with
// the other's rights.
func homeKey(workDir string, skills []string, extra ...string) string {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	dirs := make([]string, len(skills))
	for i, s := range skills {
		dirs[i] = real(s)
	}
	sort.Strings(dirs)
	dirs = slices.Compact(dirs)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", real(workDir))
	for _, d := range dirs {
		fmt.Fprintf(h, "%s\x00", d)
	}
	for _, x := range extra {
		fmt.Fprintf(h, "\x01%s", x)
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(workDir))
	return name[:min(len(name), 32)] + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// HomeStore is the folder that keeps the private HOME's caches for these
// skills' work dir and folders (exec makes it), "" where there is none: no
// home to put it in, or a write grant reaches it (a sandbox that could
// write there could fill another work dir's caches).
func (sk *Skills) HomeStore(tier sandbox.Tier) string {
	root := HomeStoreRoot(sk.Vars.Home)
	if root == "" {
		return ""
	}
	// As written and as the kernel resolves it (a ~/.cache that is a
	// symlink to /data/cache, a write grant of /data/**).
	roots := []string{root}
	if real := realPrefix(root); real != root {
		roots = append(roots, real)
	}
	for _, r := range roots {
		for _, w := range sandbox.WritableRoots(sk.Perms, sk.Vars.WorkDir) {
			if within(r, w) || within(w, r) {
				return ""
			}
		}
		for _, e := range sk.Perms.Write {
			if g, err := policyengine.CompileGlob(e.Value); err == nil {
				b := realPrefix(g.Base())
				if within(r, g.Base()) || within(g.Base(), r) || within(r, b) || within(b, r) {
					return ""
				}
			}
		}
	}
	dirs := make([]string, len(sk.List))
	for i, s := range sk.List {
		dirs[i] = s.Dir
	}
	perms, _ := json.Marshal(sk.Perms)
	return filepath.Join(root, homeKey(sk.Vars.WorkDir, dirs, string(perms), string(tier)))
}

// realPrefix is p with its longest existing prefix resolved.
func realPrefix(p string) string {
	for q, rest := p, ""; ; {
		if real, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(q)
		if parent == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
		q = parent
	}
}

// homeStore makes (or finds) the folder of the private HOME's caches for
// this work dir and these skills, with a folder for each of
// sandbox.HomeCaches, and writes the host's git identity there. It returns
// "" where the store cannot be trusted or a write grant reaches it (a
// sandbox that could write there could fill another work dir's caches),
// and whether the git identity is there.
func homeStore(sk *Skills, tier sandbox.Tier, warn func(string)) (string, bool) {
	dir := sk.HomeStore(tier)
	if dir == "" {
		return "", false
	}
	root, key := filepath.Dir(dir), filepath.Base(dir)
	base := filepath.Dir(filepath.Dir(root)) // $XDG_CACHE_HOME or ~/.cache
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", false // a home this user cannot write: a fresh private HOME
	}
	fd, err := openStoreDir(base, []string{"corral", "homes", key})
	var pe *os.PathError
	switch {
	case errors.As(err, &pe) && (pe.Err == unix.EACCES || pe.Err == unix.EROFS || pe.Err == unix.EPERM):
		return "", false // a home this user cannot write: a fresh private HOME
	case err != nil:
		warn(fmt.Sprintf("the private HOME starts empty (its caches are not kept): %v", err))
		return "", false
	}
	defer unix.Close(fd)
	// By its real path, which the mounts, the Landlock rules and the
	// supervisor's roots compare with.
	if real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && filepath.IsAbs(real) {
		dir = real
	}
	for _, c := range sandbox.HomeCaches {
		if err := mkdirOwn(fd, c.Name); err != nil {
			warn(fmt.Sprintf("the private HOME starts empty (its caches are not kept): %s: %v", filepath.Join(dir, c.Name), err))
			return "", false
		}
	}
	git := gitIdentity(sk.Vars.Home)
	if git == nil {
		unix.Unlinkat(fd, sandbox.HomeGitConfig, 0)
		return dir, false
	}
	if err := writeOwn(fd, sandbox.HomeGitConfig, git); err != nil {
		warn(fmt.Sprintf("the host's git identity is not given to the sandbox: %s: %v", filepath.Join(dir, sandbox.HomeGitConfig), err))
		return dir, false
	}
	return dir, true
}

// openStoreDir opens the folder base/parts..., making what is missing
// (0700), one component at a time and never through a symlink; each must
// be this user's and open to nobody else.
func openStoreDir(base string, parts []string) (int, error) {
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: base, Err: err}
	}
	if !ownFolderFd(fd, true) {
		unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: base, Err: unix.EPERM} // not this user's to keep caches in
	}
	p := base
	for _, part := range parts {
		p = filepath.Join(p, part)
		if err := mkdirOwn(fd, part); err != nil {
			unix.Close(fd)
			if errno, ok := err.(unix.Errno); ok {
				return -1, &os.PathError{Op: "mkdir", Path: p, Err: errno}
			}
			return -1, fmt.Errorf("%s: %w", p, err)
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: p, Err: err}
		}
		if !ownFolderFd(next, false) {
			unix.Close(next)
			return -1, fmt.Errorf("%s: not a folder of this user's closed to others", p)
		}
		fd = next
	}
	return fd, nil
}

// mkdirOwn makes the folder name in dirfd (0700) unless it is there, and
// checks that it is a folder (not a symlink) of this user's; one that
// other users may enter is closed to them (a sandbox can chmod a cache
// folder it sees as its mount's top, and nothing in the store is anybody
// else's business).
func mkdirOwn(dirfd int, name string) error {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && err != unix.EEXIST {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("not a folder")
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("owned by uid %d, not this user", st.Uid)
	case st.Mode&0o7777 != 0o700:
		// Exactly 0700: a command may have opened its cache folder to
		// others, or closed it to later runs (chmod 000). AT_SYMLINK_NOFOLLOW
		// is not implemented for fchmodat before fchmodat2; the fstatat
		// above saw a folder, not a link, in a folder no sandbox reaches.
		return unix.Fchmodat(dirfd, name, 0o700, 0)
	}
	return nil
}

// ownFolderFd checks, on the open folder fd, that it is this user's and
// nobody else's (0700), or, for the base ($XDG_CACHE_HOME, ~/.cache),
// this user's or root's and writable by nobody else, so no other user
// can swap what lies below.
func ownFolderFd(fd int, base bool) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	if base {
		return (int(st.Uid) == os.Geteuid() || st.Uid == 0) && st.Mode&0o022 == 0
	}
	return int(st.Uid) == os.Geteuid() && st.Mode&0o7777 == 0o700
}

// writeOwn makes dirfd/name hold data (0600), by a new file renamed over
// it, unless it holds that already.
func writeOwn(dirfd int, name string, data []byte) error {
	if fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		buf := make([]byte, len(data)+1)
		n, _ := unix.Read(fd, buf)
		unix.Close(fd)
		if n == len(data) && bytes.Equal(buf[:n], data) {
			return nil
		}
	}
	tmp := fmt.Sprintf(".%s.%d", name, os.Getpid())
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, werr := unix.Write(fd, data)
	unix.Close(fd)
	if werr == nil {
		werr = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if werr != nil {
		unix.Unlinkat(dirfd, tmp, 0)
	}
	return werr
}

// HasGitIdentity reports whether the host's git config names who commits,
// which the private HOME then gets (explain and check show it).
func (sk *Skills) HasGitIdentity() bool { return gitIdentity(sk.Vars.Home) != nil }

// identityKeys are what of the host's git config the private HOME gets:
// who commits, and the name `git init` gives the first branch. Nothing
// that names a program, a hook, a credential or another file to read.
var identityKeys = []struct{ section, key, spelled string }{
	{"user", "name", "name"}, {"user", "email", "email"}, {"init", "defaultbranch", "defaultBranch"},
}

// gitIdentity is a git config file with the host user's identity keys, as
// the host's global config files set them (XDG's, then ~/.gitconfig; an
// include is not followed), nil when none is set.
func gitIdentity(home string) []byte {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) {
		xdg = filepath.Join(home, ".config")
	}
	values := map[string]string{}
	for _, f := range []string{filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig")} {
		data, err := readSmall(f, 1<<20)
		if err != nil {
			continue
		}
		entries, err := parseGitConfig(data)
		if err != nil {
			entries = looseGitEntries(data)
		}
		for _, e := range entries {
			for _, k := range identityKeys {
				if e.Section == k.section && e.Sub == "" && e.Key == k.key {
					values[k.section+"."+k.key] = e.Value
				}
			}
		}
	}
	if len(values) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# The host's git identity, given by corral to the sandbox's private HOME (read-only).\n")
	section := ""
	for _, k := range identityKeys {
		v, ok := values[k.section+"."+k.key]
		if !ok || strings.ContainsAny(v, "\n\r\x00") {
			continue
		}
		if section != k.section {
			section = k.section
			fmt.Fprintf(&b, "[%s]\n", section)
		}
		fmt.Fprintf(&b, "\t%s = \"%s\"\n", k.spelled, strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v))
	}
	return []byte(b.String())
}

// readSmall reads a regular file of at most max bytes (the host's own
// config: a symlink to it, as dotfile managers make, is followed).
func readSmall(file string, max int64) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > max {
		return nil, fmt.Errorf("%s: not a small regular file", file)
	}
	buf := make([]byte, st.Size())
	n, err := f.Read(buf)
	if err != nil && n < len(buf) {
		return nil, err
	}
	return buf[:n], nil
}
