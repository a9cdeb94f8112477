package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"corral/policyengine"
	"corral/sandbox/internal/safefile"
	"corral/sandbox/progindex"

	"corral/sandbox/stage"
)

// Probe reads the host facts a Plan for p and spec needs.
func Probe(p policyengine.Permissions, spec Spec) *Facts {
	f := &Facts{
		resolver: newResolver(),
		Files:    map[string]FileInfo{},
		Programs: map[string]Program{},
		Matches:  map[string][]string{},
		Uid:      os.Getuid(),
	}
	f.probeKernel()
	// The baseline binds what /etc/gitconfig resolves to (NixOS links it
	// to /etc/static/gitconfig): that is the file to read.
	if info := f.stat("/etc/gitconfig"); info.Exists {
		f.GitconfigSecret = gitconfigSecret(info.Real)
	}
	var idxDone chan progindex.Index
	if p.ExecRestricted() {
		// Checking the program index's stamps (or walking) overlaps the
		// rest of the probe.
		roots := f.indexRoots()
		idxDone = make(chan progindex.Index, 1)
		go func() { idxDone <- progindex.Load(roots, spec.Stop) }()
	}
	f.StateDirs = stage.StateDirs()
	for _, glob := range policyengine.SystemRead {
		f.stat(strings.TrimSuffix(glob, "/**"))
	}
	if !p.ExecRestricted() {
		// The baseline's /usr rule goes to each folder in it but the
		// configuration folders (policyengine.SystemHidden).
		f.list("/usr")
		f.list("/usr/local")
	}
	for _, r := range libraryRoots {
		f.stat(r)
	}
	for _, p := range maskedProc {
		f.stat(p)
	}
	if f.Uid == 0 {
		for _, p := range rootOnlyProc {
			f.stat(p)
		}
	}
	// A relative core.hooksPath in the user's global config (.githooks)
	// names a folder in every repository.
	globalHP := GlobalHooksPath(os.Getenv("HOME"))
	f.workDir = spec.WorkDir
	f.stat(spec.WorkDir)
	f.statGrants(p)
	for _, e := range p.Write {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil {
			continue
		}
		if root := f.Files[g.Base()]; root.Exists && root.Dir {
			f.stat(path.Join(root.Real, ".git"))
			f.nestedRepos(root.Real)
			for _, git := range f.Gits {
				if strings.HasPrefix(git, root.Real+"/") && f.stat(git).Dir {
					f.gitFolders(git)
					// core.hooksPath (husky sets .husky) moves the hooks
					// out of .git; relative, it is from the work tree.
					for _, hp := range []string{gitHooksPath(git + "/config"), globalHP} {
						if hp == "" {
							continue
						}
						if strings.HasPrefix(hp, "~/") {
							hp = path.Join(os.Getenv("HOME"), hp[2:])
						} else if !path.IsAbs(hp) {
							hp = path.Join(path.Dir(git), hp)
						}
						// Outside the writable root the sandbox cannot
						// write it anyway.
						if hp = path.Clean(hp); isUnder(hp, root.Real) && hp != root.Real {
							f.HooksPaths = append(f.HooksPaths, hp)
							f.statGitFolder(hp)
						}
					}
				}
			}
		}
	}
	f.probeProtected(p, spec)
	for _, e := range p.Exec {
		f.program(e.Value)
	}
	if len(spec.Argv) > 0 {
		f.program(spec.Argv[0])
	}
	if idxDone != nil {
		idx := <-idxDone
		f.ProgramIndex = &idx
		f.programLibraryDirs()
		f.listAboveCode(p)
	}
	return f
}

// list records the names in dir (and stats them) in Listings, once.
func (f *Facts) list(dir string) {
	if _, ok := f.Listings[dir]; ok {
		return
	}
	fh, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := fh.Readdirnames(-1)
	fh.Close()
	slices.Sort(names)
	for _, n := range names {
		f.stat(path.Join(dir, n))
	}
	if f.Listings == nil {
		f.Listings = map[string][]string{}
	}
	f.Listings[dir] = names
}

// listAboveCode lists the folders from each grant that covers a code root
// down to that root (for /usr/**: /usr and /usr/local).
func (f *Facts) listAboveCode(p policyengine.Permissions) {
	for _, list := range [][]policyengine.Entry{p.Read} {
		for _, e := range list {
			g, err := policyengine.CompileGlob(e.Value)
			if err != nil || hiddenUnder(g.Base()) != "" {
				continue
			}
			for _, dir := range aboveCode(f.stat(g.Base()).Real) {
				f.list(dir)
			}
		}
	}
}

// HostProgramIndex is the program index an exec with an exec allowlist
// uses, built now if it has to be (corral doctor shows it).
func HostProgramIndex() progindex.Index {
	f := &Facts{resolver: newResolver(), Files: map[string]FileInfo{}}
	return progindex.Load(f.indexRoots(), nil)
}

// nestedSkip are folders too big and too unlikely to hold a repository
// someone runs git in to spend the search's budget on.
var nestedSkip = []string{"node_modules", "__pycache__", "target"}

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

// indexRoots are the real paths of the folders the program index covers.
func (f *Facts) indexRoots() []string {
	var roots []string
	for _, r := range mappableRoots() {
		if info := f.stat(r); info.Exists && info.Dir && !slices.Contains(roots, info.Real) {
			roots = append(roots, info.Real)
		}
	}
	return roots
}

// programLibraryDirs finds the folders the allowed programs load
// libraries from.
func (f *Facts) programLibraryDirs() {
	for name, prog := range f.Programs {
		if prog.Err != "" {
			continue
		}
		for _, t := range append([]string{prog.Real}, prog.Interpreters...) {
			prog.LibraryDirs = append(prog.LibraryDirs, f.libraryDirs(t)...)
		}
		f.Programs[name] = prog
	}
}

func (f *Facts) probeKernel() {
	f.LandlockABI, f.LandlockErr = landlockFacts(llsys.LandlockGetABIVersion())
	f.UserNSErr = userNSRefusal()
	// PR_GET_SECCOMP answers EINVAL when the kernel lacks seccomp.
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	f.Seccomp = err == nil
}

// landlockFacts turns the answer to the Landlock ABI query into the ABI
// version, or 0 and why Landlock is unavailable.
func landlockFacts(abi int, err error) (int, string) {
	switch {
	case err == nil:
		return abi, ""
	case errors.Is(err, unix.ENOSYS):
		return 0, "the kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		return 0, "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
	default:
		return 0, fmt.Sprintf("Landlock ABI query failed: %v", err)
	}
}

// userNSRefusal predicts, from sysctls, why creating a user namespace
// would fail; the clone itself has the last word.
func userNSRefusal() string {
	return userNSRefusalIn("/proc/sys", os.Getuid())
}

// userNSRefusalIn is userNSRefusal for a caller with uid, reading the
// sysctls under sysctlDir (/proc/sys; a test points it at a fake tree).
func userNSRefusalIn(sysctlDir string, uid int) string {
	if readInt(sysctlDir+"/user/max_user_namespaces") == 0 {
		return "user namespaces are disabled: sysctl user.max_user_namespaces is 0"
	}
	if uid != 0 {
		if readInt(sysctlDir+"/kernel/unprivileged_userns_clone") == 0 {
			return "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone is 0"
		}
		if readInt(sysctlDir+"/kernel/apparmor_restrict_unprivileged_userns") == 1 {
			return "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1); allow corral with an AppArmor profile that has the userns rule, or set the sysctl to 0"
		}
	}
	return ""
}

// readInt reads a one-number file; -1 when it is absent or unreadable.
func readInt(p string) int {
	data, err := os.ReadFile(p)
	if err != nil {
		return -1
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &n); err != nil {
		return -1
	}
	return n
}

func (f *Facts) stat(p string) FileInfo {
	if info, ok := f.Files[p]; ok {
		return info
	}
	info := FileInfo{Real: p}
	if filepath.IsAbs(p) {
		if r := f.resolver.resolve(filepath.Clean(p), 0); r.err == nil {
			info = FileInfo{Exists: true, Dir: r.mode == unix.S_IFDIR, Size: r.size, Real: r.real, Links: r.links}
		}
	}
	f.Files[p] = info
	return info
}

// program resolves a name (on the sandbox's PATH) or an absolute path, its
// symlinks and interpreters.
func (f *Facts) program(name string) {
	if _, ok := f.Programs[name]; ok {
		return
	}
	prog := Program{Links: map[string]string{}}
	found := ""
	if strings.Contains(name, "/") {
		// ./build.sh starts in the work dir, where the command runs.
		if p := absIn(f.workDir, name); isExecutable(p) {
			found = p
		}
	} else {
		for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
			if c := dir + "/" + name; isExecutable(c) {
				found = c
				break
			}
		}
	}
	if found == "" {
		prog.Err = "not found"
		f.Programs[name] = prog
		return
	}
	prog.Path = found
	prog.Real = f.followLinks(found, prog.Links)
	prog.Interpreters = f.interpreters(prog.Real, prog.Links, 0)
	f.stat(prog.Real)
	for _, in := range prog.Interpreters {
		f.stat(in)
	}
	f.Programs[name] = prog
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// followLinks resolves p link by link, recording each symlink (with its
// parents' symlinks resolved) and its target in links.
func (f *Facts) followLinks(p string, links map[string]string) string {
	for i := 0; i < 40; i++ {
		d := f.resolver.resolve(filepath.Dir(p), 0)
		if d.err != nil {
			return p
		}
		dir := d.real
		p = filepath.Join(dir, filepath.Base(p))
		target, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		links[p] = target
		p = target
	}
	return p
}

// interpreters returns the real paths of what the kernel loads to run p:
// the ELF interpreter, or for a #! script its interpreter (and that one's).
func (f *Facts) interpreters(p string, links map[string]string, depth int) []string {
	if depth > 4 {
		return nil
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer fh.Close()
	head := make([]byte, 512)
	n, _ := fh.Read(head)
	head = head[:n]
	if strings.HasPrefix(string(head), "#!") {
		line, _, _ := strings.Cut(string(head[2:]), "\n")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return nil
		}
		interp := f.followLinks(fields[0], links)
		out := append([]string{interp}, f.interpreters(interp, links, depth+1)...)
		if path.Base(fields[0]) == "env" && len(fields) > 1 {
			// #!/usr/bin/env python3: python3 is found on PATH.
			for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
				if c := dir + "/" + fields[1]; isExecutable(c) {
					real := f.followLinks(c, links)
					out = append(out, real)
					out = append(out, f.interpreters(real, links, depth+1)...)
					break
				}
			}
		}
		return out
	}
	if f.rpaths == nil {
		f.rpaths = map[string][]string{}
	}
	f.rpaths[p] = elfRunPaths(fh, head)
	if interp := elfInterpreter(fh, head); interp != "" {
		return []string{f.followLinks(interp, links)}
	}
	return nil
}

// libraryDirs returns the real folders holding libraries that an ELF
// program names in its RPATH or RUNPATH, with $ORIGIN expanded: the
// dynamic loader maps libraries from them, so they must stay mappable.
func (f *Facts) libraryDirs(p string) []string {
	var dirs []string
	for _, list := range f.rpaths[p] { // read with the interpreters
		for _, d := range strings.Split(list, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", path.Dir(p))
			if !path.IsAbs(d) {
				continue
			}
			if info := f.stat(path.Clean(d)); info.Exists && info.Dir && !slices.Contains(dirs, info.Real) && holdsLibraries(info.Real) {
				dirs = append(dirs, info.Real)
			}
		}
	}
	return dirs
}

// holdsLibraries says whether dir holds a shared library (*.so, *.so.N):
// an RPATH entry without one (java's $ORIGIN, its bin) can stay noexec.
func holdsLibraries(dir string) bool {
	fh, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer fh.Close()
	names, _ := fh.Readdirnames(-1)
	return slices.ContainsFunc(names, progindex.IsLibraryName)
}

// elfPhdrs reads the program headers of a 64-bit little-endian ELF file.
func elfPhdrs(f *os.File, head []byte) (phdrs []byte, entsize int64) {
	if len(head) < 64 || string(head[:4]) != "\x7fELF" || head[4] != 2 || head[5] != 1 {
		return nil, 0
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := int64(le.Uint64(head[32:])), int64(le.Uint16(head[54:])), int64(le.Uint16(head[56:]))
	if phentsize < 56 || phnum == 0 || phnum > 128 {
		return nil, 0
	}
	phdrs = make([]byte, phentsize*phnum)
	if _, err := f.ReadAt(phdrs, phoff); err != nil {
		return nil, 0
	}
	return phdrs, phentsize
}

// elfRunPaths returns the DT_RPATH and DT_RUNPATH strings of an ELF file.
func elfRunPaths(f *os.File, head []byte) []string {
	phdrs, entsize := elfPhdrs(f, head)
	le := binary.LittleEndian
	var dynOff, dynSize int64
	type load struct{ off, vaddr, size uint64 }
	var loads []load
	for i := int64(0); i*entsize < int64(len(phdrs)); i++ {
		ph := phdrs[i*entsize:]
		switch le.Uint32(ph[0:]) {
		case 1: // PT_LOAD
			loads = append(loads, load{le.Uint64(ph[8:]), le.Uint64(ph[16:]), le.Uint64(ph[32:])})
		case 2: // PT_DYNAMIC
			dynOff, dynSize = int64(le.Uint64(ph[8:])), int64(le.Uint64(ph[32:]))
		}
	}
	if dynSize <= 0 || dynSize > 1<<20 {
		return nil
	}
	dyn := make([]byte, dynSize)
	if _, err := f.ReadAt(dyn, dynOff); err != nil {
		return nil
	}
	var strtab uint64
	var offsets []uint64
	for i := 0; i+16 <= len(dyn); i += 16 {
		tag, val := le.Uint64(dyn[i:]), le.Uint64(dyn[i+8:])
		switch tag {
		case 0: // DT_NULL
			i = len(dyn)
		case 5: // DT_STRTAB
			strtab = val
		case 15, 29: // DT_RPATH, DT_RUNPATH
			offsets = append(offsets, val)
		}
	}
	var out []string
	for _, l := range loads {
		if strtab < l.vaddr || strtab >= l.vaddr+l.size {
			continue
		}
		for _, o := range offsets {
			buf := make([]byte, 4096)
			n, _ := f.ReadAt(buf, int64(strtab-l.vaddr+l.off+o))
			if s, _, ok := strings.Cut(string(buf[:n]), "\x00"); ok {
				out = append(out, s)
			}
		}
		break
	}
	return out
}

// elfInterpreter returns the PT_INTERP path of a 64-bit little-endian ELF
// file, reading only the program headers (debug/elf would parse every
// section and costs tens of microseconds per program).
func elfInterpreter(f *os.File, head []byte) string {
	phdrs, phentsize := elfPhdrs(f, head)
	le := binary.LittleEndian
	for i := int64(0); i*phentsize < int64(len(phdrs)); i++ {
		ph := phdrs[i*phentsize:]
		if le.Uint32(ph[0:]) != 3 { // PT_INTERP
			continue
		}
		off, size := int64(le.Uint64(ph[8:])), int64(le.Uint64(ph[32:]))
		if size <= 1 || size > 4096 {
			return ""
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, off); err != nil {
			return ""
		}
		return strings.TrimRight(string(buf), "\x00")
	}
	return ""
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
