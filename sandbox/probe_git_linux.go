package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/internal/safefile"
)

// nestedRepos finds the .git folders and files below root, breadth first,
// down to nestedDepth, not looking inside hidden folders or nestedSkip.
func (f *Facts) nestedRepos(root string) {
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{root, 0}}
	reads := 0
	buf := make([]byte, 32<<10)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if reads == nestedBudget {
			f.NestedCut = append(f.NestedCut, root)
			return
		}
		reads++
		readNames(d.path, buf, func(name string, typ byte) {
			p := d.path + "/" + name
			switch {
			case name == ".git":
				if typ == unix.DT_DIR || typ == unix.DT_REG {
					f.Gits = append(f.Gits, p)
					f.statGitFolder(p)
				}
			case strings.HasPrefix(name, ".") || slices.Contains(nestedSkip, name):
			case typ == unix.DT_DIR && d.depth < nestedDepth:
				queue = append(queue, dir{p, d.depth + 1})
			}
		})
	}
}

// readNames calls fn with the name and d_type of each entry of dir (but
// . and ..), reading with getdents64 into buf: os.ReadDir allocates an
// entry each, and this runs on every launch.
func readNames(dir string, buf []byte, fn func(name string, typ byte)) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.LittleEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				return
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				typ := buf[off+18]
				if typ == unix.DT_UNKNOWN { // some file systems leave it to stat
					var st unix.Stat_t
					if unix.Fstatat(fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
						typ = map[uint32]byte{unix.S_IFDIR: unix.DT_DIR, unix.S_IFREG: unix.DT_REG}[st.Mode&unix.S_IFMT]
					}
				}
				fn(s, typ)
			}
			off += reclen
		}
	}
}

// gitFolders finds the git folders inside the git folder git: submodules'
// (.git/modules/NAME, where NAME may hold slashes, and their own modules)
// and linked worktrees' (.git/worktrees/X), and stats what the plan
// protects in each and the folders above them.
func (f *Facts) gitFolders(git string) {
	f.stat(git + "/commondir")
	f.stat(git + "/config.worktree")
	worktrees, _ := filepath.Glob(git + "/worktrees/*")
	for _, w := range worktrees {
		f.Worktrees = append(f.Worktrees, w)
		f.statGitFolder(w)
	}
	// A submodule's git folder holds HEAD and config; folders between
	// hold only folders (libs/ for libs/foo).
	queue, reads := []string{git + "/modules"}, 0
	buf := make([]byte, 16<<10)
	for len(queue) > 0 && reads < nestedBudget {
		dir := queue[0]
		queue = queue[1:]
		reads++
		f.stat(dir)
		readNames(dir, buf, func(name string, typ byte) {
			if typ != unix.DT_DIR {
				return
			}
			p := dir + "/" + name
			var st unix.Stat_t
			if unix.Lstat(p+"/HEAD", &st) == nil || unix.Lstat(p+"/config", &st) == nil {
				f.Submodules = append(f.Submodules, p)
				f.statGitFolder(p)
				queue = append(queue, p+"/modules")
				return
			}
			queue = append(queue, p)
		})
	}
}

func (f *Facts) statGitFolder(p string) {
	for _, name := range []string{"", "/hooks", "/config", "/commondir", "/gitdir", "/config.worktree", "/info/attributes"} {
		f.stat(p + name)
	}
	for d := path.Dir(p); d != "/" && !f.Files[d].Exists; d = path.Dir(d) {
		f.stat(d)
	}
}

// mkdirNoLinks makes dir, refusing to go through any symlink on the way
// (a concurrent sandboxed run could swap a folder for one).
func mkdirNoLinks(dir string) error {
	parent, err := unix.Openat2(unix.AT_FDCWD, path.Dir(dir), &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err == unix.ENOSYS {
		return unix.Mkdirat(unix.AT_FDCWD, dir, 0o755) // kernels before 5.6
	}
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := unix.Mkdirat(parent, path.Base(dir), 0o755); err != nil {
		return err
	}
	// Run as root in someone else's repository, the folder is theirs.
	var st unix.Stat_t
	if os.Geteuid() == 0 && unix.Fstat(parent, &st) == nil && st.Uid != 0 {
		unix.Fchownat(parent, path.Base(dir), int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// GlobalHooksPath is core.hooksPath of the user's global git config
// (~/.gitconfig, else $XDG_CONFIG_HOME/git/config), "" when not set.
// Relative, it names a folder in every repository's work tree.
func GlobalHooksPath(home string) string {
	if home == "" {
		return ""
	}
	if hp := gitHooksPath(path.Join(home, ".gitconfig")); hp != "" {
		return hp
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = path.Join(home, ".config")
	}
	return gitHooksPath(path.Join(xdg, "git/config"))
}

// gitHooksPath returns core.hooksPath from a git config file, "" when it
// is not set. Include directives are not followed.
func gitHooksPath(config string) string {
	data, err := safefile.ReadNoFollow(config, 1<<20)
	if err != nil {
		return ""
	}
	inCore, value := false, ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			name, _, _ := strings.Cut(strings.Trim(line, "[]"), " ")
			inCore = strings.EqualFold(strings.TrimSpace(name), "core") && !strings.Contains(line, "\"")
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !inCore || !ok || !strings.EqualFold(strings.TrimSpace(key), "hookspath") {
			continue
		}
		val = strings.TrimSpace(val)
		if rest, ok := strings.CutPrefix(val, "\""); ok {
			// "..." and whatever follows the closing quote (a comment)
			if end := strings.IndexByte(rest, '"'); end >= 0 {
				val = rest[:end]
			}
		} else if i := strings.IndexAny(val, "#;"); i >= 0 {
			val = strings.TrimSpace(val[:i])
		}
		value = val // the last one wins
	}
	return value
}

// CreateHooksFolders gives every repository and submodule git folder
// found in a writable root (a real folder) the hooks folder git init makes, and makes the folder a
// core.hooksPath names, when they are missing, so the plan can bind them
// read-only; otherwise the command could create one and plant a hook. It
// returns what it created.
func CreateHooksFolders(f *Facts) ([]string, error) {
	var created []string
	for _, hooks := range f.MissingHooks() {
		switch err := mkdirNoLinks(hooks); err {
		case nil:
		case unix.EEXIST, unix.EACCES, unix.EPERM, unix.EROFS:
			continue // there, or not writable by this user: nor by its sandbox
		default:
			return created, fmt.Errorf("creating %s: %w", hooks, err)
		}
		created = append(created, hooks)
		delete(f.Files, hooks)
		f.resolver = newResolver()
		f.stat(hooks)
	}
	return created, nil
}

// gitconfigSecret says why the git config file looks like it holds a
// credential, "" when it does not (or cannot be read): an extraHeader
// (Authorization: ...), a line that names a password or token (a key, or
// an inline credential helper), or a URL with a password or a token as
// its user. The system baseline copies /etc/gitconfig into every sandbox;
// one like that is left out.
func gitconfigSecret(file string) string {
	data, err := safefile.ReadNoFollow(file, 1<<20)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		l := strings.ToLower(strings.TrimSpace(line))
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		key, _, _ := strings.Cut(l, "=")
		key = strings.TrimSpace(key)
		switch {
		case strings.Contains(key, "extraheader"):
			return "an http.extraHeader"
		case strings.Contains(l, "password") || strings.Contains(l, "token"):
			return "a password or token (in " + key + ")"
		case urlWithPassword(l):
			return "a URL with a password or a token as its user"
		}
	}
	return ""
}

// urlWithPassword reports whether s holds scheme://user:password@, or an
// http(s) URL whose user looks like a token (https://ghp_...@github.com:
// a known token prefix, or 20 characters or more; a short user name such
// as Azure DevOps's org@ is no secret).
func urlWithPassword(s string) bool {
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return false
		}
		scheme := s[:i]
		if j := strings.LastIndexAny(scheme, " \t\"'="); j >= 0 {
			scheme = scheme[j+1:]
		}
		s = s[i+3:]
		auth := s
		if j := strings.IndexAny(auth, "/ \t\"'"); j >= 0 {
			auth = auth[:j]
		}
		at := strings.LastIndexByte(auth, '@')
		if at > 0 && (strings.IndexByte(auth[:at], ':') > 0 || (scheme == "http" || scheme == "https") && tokenLike(auth[:at])) {
			return true
		}
	}
}

// tokenLike reports whether a URL's user name looks like an access token.
func tokenLike(user string) bool {
	for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "github_pat_", "glpat-", "x-access-token", "oauth2"} {
		if strings.HasPrefix(user, p) {
			return true
		}
	}
	return len(user) >= 20
}
