package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox/progindex"

	"corral.dev/corral/sandbox/stage"
)

// Probe reads the host facts a Plan for p and spec needs.
func Probe(p policyengine.Permissions, spec Spec) *Facts {
	f := &Facts{
		resolver: newResolver(),
		Files:    map[string]FileInfo{},
		Programs: map[string]Program{},
		Matches:  map[string][]string{},
		Uid:      os.Getuid(),
		Path:     RunPATH(p.ExecRestricted(), spec.Env),
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
	f.walkDenied(p)
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
	f.findToolchains(p, spec)
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
			return "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1); run sudo corral setup apparmor to allow them for corral (a profile with the userns rule), or set the sysctl to 0"
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
