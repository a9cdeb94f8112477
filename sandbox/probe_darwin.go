package sandbox

import (
	"io/fs"
	"os"
	"path"
	"strings"

	"corral.dev/corral/policyengine"
)

// Probe reads the host facts a Plan for p and spec needs on macOS: where
// the grants and programs are (symlinks resolved), and what each program
// starts. There are no kernel features to probe: Seatbelt is always
// there, and Facts.OS makes BuildPlan list its protections instead of
// Linux's.
func Probe(p policyengine.Permissions, spec Spec) *Facts {
	const linuxOnly = "Linux-only; macOS uses Seatbelt (sandbox-exec)"
	f := &Facts{
		OS:          "darwin",
		LandlockErr: linuxOnly,
		UserNSErr:   linuxOnly,
		Uid:         os.Getuid(),
		Files:       map[string]FileInfo{},
		Programs:    map[string]Program{},
		Matches:     map[string][]string{},
		resolver:    &resolver{seen: map[string]resolved{"/": {real: "/", dir: true}}},
	}
	f.workDir = spec.WorkDir
	f.stat(spec.WorkDir)
	f.statGrants(p)
	for _, e := range p.Exec {
		f.program(e.Value)
	}
	if len(spec.Argv) > 0 {
		f.program(spec.Argv[0])
	}
	return f
}

// resolver resolves symlinks component by component, remembering every
// folder it has seen and the links followed on the way.
type resolver struct {
	seen map[string]resolved
}

type resolved struct {
	real  string
	dir   bool
	links []string
	err   error
}

// resolve returns the real path of the absolute, clean path p.
func (r *resolver) resolve(p string, depth int) resolved {
	if v, ok := r.seen[p]; ok {
		return v
	}
	if !path.IsAbs(p) {
		return resolved{err: fs.ErrInvalid}
	}
	if depth > 40 {
		return resolved{err: fs.ErrInvalid}
	}
	parent := r.resolve(path.Dir(p), depth)
	if parent.err != nil {
		return parent
	}
	if !parent.dir {
		return resolved{err: fs.ErrNotExist}
	}
	candidate := path.Join(parent.real, path.Base(p))
	var v resolved
	st, err := os.Lstat(candidate)
	switch {
	case err != nil:
		v = resolved{err: err}
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(candidate)
		if err != nil {
			v = resolved{err: err}
			break
		}
		if !path.IsAbs(target) {
			target = path.Join(parent.real, target)
		}
		v = r.resolve(path.Clean(target), depth+1)
		if v.err == nil {
			v.links = append(append(append([]string{}, parent.links...), candidate), v.links...)
		}
	default:
		v = resolved{real: candidate, dir: st.IsDir(), links: parent.links}
	}
	r.seen[p] = v
	return v
}

func (f *Facts) stat(p string) FileInfo {
	if info, ok := f.Files[p]; ok {
		return info
	}
	info := FileInfo{Real: p}
	if path.IsAbs(p) {
		if r := f.resolver.resolve(path.Clean(p), 0); r.err == nil {
			info = FileInfo{Exists: true, Dir: r.dir, Real: r.real, Links: r.links}
		}
	}
	f.Files[p] = info
	return info
}

// shTarget is the link naming the shell macOS's /bin/sh starts.
const shTarget = "/private/var/select/sh"

// program resolves a name (on the sandbox's PATH) or an absolute path and
// what it starts: the #! interpreter of a script (and, for #!/usr/bin/env
// NAME, NAME on the PATH), and the shell behind /bin/sh.
func (f *Facts) program(name string) {
	if _, ok := f.Programs[name]; ok {
		return
	}
	var prog Program
	found := ""
	if strings.Contains(name, "/") {
		// ./build.sh starts in the work dir, where the command runs.
		if p := absIn(f.workDir, name); isExecutable(p) {
			found = p
		}
	} else {
		found = onPath(name)
	}
	if found == "" {
		prog.Err = "not found"
		f.Programs[name] = prog
		return
	}
	prog.Path = found
	prog.Real = f.real(found)
	prog.Interpreters = f.interpreters(prog.Real, 0)
	f.stat(prog.Real)
	f.Programs[name] = prog
}

func (f *Facts) real(p string) string {
	if r := f.resolver.resolve(path.Clean(p), 0); r.err == nil {
		return r.real
	}
	return p
}

func onPath(name string) string {
	for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
		if c := dir + "/" + name; isExecutable(c) {
			return c
		}
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// interpreters returns the real paths of what running p starts besides
// p: a script's interpreter (and its own), and the shell /bin/sh runs.
func (f *Facts) interpreters(p string, depth int) []string {
	if depth > 4 {
		return nil
	}
	var out []string
	if p == "/bin/sh" {
		if t := f.real(shTarget); t != shTarget {
			out = append(out, t)
		}
	}
	fh, err := os.Open(p)
	if err != nil {
		return out
	}
	defer fh.Close()
	head := make([]byte, 512)
	n, _ := fh.Read(head)
	if !strings.HasPrefix(string(head[:n]), "#!") {
		return out
	}
	line, _, _ := strings.Cut(string(head[2:n]), "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return out
	}
	interp := f.real(fields[0])
	out = append(append(out, interp), f.interpreters(interp, depth+1)...)
	if path.Base(fields[0]) == "env" && len(fields) > 1 {
		if c := onPath(fields[1]); c != "" {
			real := f.real(c)
			out = append(append(out, real), f.interpreters(real, depth+1)...)
		}
	}
	return out
}
