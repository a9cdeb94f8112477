package sandbox

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"corral.dev/corral/policyengine"
)

// KernelExec returns what tells check and the exec preflight which
// programs the kernel lets run although no exec entry names them. The
// Landlock rule the plan adds is on a file, so:
//   - a program that is the same file as an allowed one runs under any
//     name: a symlink or hard link to it (every applet name of a busybox
//     that is allowed as sh), python3.11 when python3 is allowed;
//   - the #! interpreter of an allowed script (and what
//     #!/usr/bin/env NAME finds) needs the execute right to start the
//     script, and so can be started directly too, with any arguments.
//
// It reads as Facts.program does (the sandbox's PATH, the #! line), only
// the first bytes of each program, and only the first time it is asked: a
// command whose programs are all listed never pays for it. ELF
// interpreters (ld.so) are left out: with the exec allowlist they load no
// program the command could not run anyway (see the README's exec row).
func KernelExec(p policyengine.Permissions, workDir string) func(prog string) (string, bool) {
	if !p.ExecRestricted() {
		return nil
	}
	allowed := sync.OnceValue(func() allowedSet { return allowedFiles(p, workDir) })
	noexec := []string{"/tmp", "/dev/shm", workDir}
	for _, w := range p.Write {
		if g, err := policyengine.CompileGlob(w.Value); err == nil {
			noexec = append(noexec, g.Base())
		}
	}
	return func(prog string) (string, bool) {
		found := findProgram(prog, workDir)
		if found == "" {
			return "", false
		}
		// A hard link in a granted folder is the same file, but that
		// folder is mounted noexec: the kernel refuses it there. The
		// allowed file itself is bound where it is, executable, also
		// under /tmp or in the work dir: a path that leads to it (a
		// symlinked folder on the way) runs.
		real, err := filepath.EvalSymlinks(found)
		if err != nil {
			return "", false
		}
		set := allowed()
		if !set.paths[real] && slices.ContainsFunc(noexec, func(d string) bool { return isUnder(real, d) }) {
			return "", false
		}
		id, ok := idOf(real)
		if !ok {
			return "", false
		}
		why, ok := set.ids[id]
		if !ok {
			return "", false
		}
		return prog + " is " + why, true
	}
}

// allowedSet are the files the plan makes executable: by file (each with
// why) and by the real path the plan binds each at.
type allowedSet struct {
	ids   map[fileID]string
	paths map[string]bool
}

// ProgramExists tells whether prog names a file on the sandbox's PATH or,
// with a slash, a file from workDir (policyengine.Options.Exists): the
// host's view of the folders the sandbox binds. A path outside the system
// program folders and the grants counts as there whatever it is: the
// answer (127 or 126) must not tell a command which of the host's hidden
// files exist (~/.ssh/id_rsa).
func ProgramExists(p policyengine.Permissions, workDir string) func(prog string) bool {
	// Asked only when the exec list refuses a program: nothing of it is
	// done on a launch that runs.
	visible := sync.OnceValue(func() []string {
		roots := slices.Clone(programRoots)
		for _, list := range [][]policyengine.Entry{p.Read, p.Write} {
			for _, e := range list {
				if g, err := policyengine.CompileGlob(e.Value); err == nil && g.Base() != "/" {
					roots = append(roots, g.Base())
				}
			}
		}
		return roots
	})
	return func(prog string) bool {
		if strings.Contains(prog, "/") {
			abs := filepath.Clean(absIn(workDir, prog))
			if !slices.ContainsFunc(visible(), func(r string) bool { return isUnder(abs, r) }) {
				return true
			}
			_, err := os.Stat(abs)
			return err == nil
		}
		for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
			if _, err := os.Stat(dir + "/" + prog); err == nil {
				return true
			}
		}
		return false
	}
}

// fileID is a file as the kernel's rule sees it.
type fileID struct{ dev, ino uint64 }

func idOf(p string) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return fileID{}, false
	}
	return fileID{st.Dev, st.Ino}, true
}

// allowedFiles are the files the plan makes executable for the exec
// entries, each with why.
func allowedFiles(p policyengine.Permissions, workDir string) allowedSet {
	out := allowedSet{ids: map[fileID]string{}, paths: map[string]bool{}}
	add := func(file, why string) {
		if id, ok := idOf(file); ok {
			if _, seen := out.ids[id]; !seen {
				out.ids[id] = why
			}
		}
		if real, err := filepath.EvalSymlinks(file); err == nil {
			out.paths[real] = true
		}
	}
	for _, e := range p.Exec {
		found := findProgram(e.Value, workDir)
		if found == "" {
			continue
		}
		add(found, "the file of exec entry "+e.Value)
		for _, in := range scriptInterpreters(found, 0) {
			add(in, "the #! interpreter of exec entry "+e.Value)
		}
	}
	return out
}

// LookPath finds a program name on the sandbox's PATH as the plan does
// (Facts.program) and as the shell inside the sandbox does: the first
// executable file of that name, "" when there is none.
func LookPath(name string) string {
	if strings.Contains(name, "/") {
		return ""
	}
	return findProgram(name, "/")
}

// findProgram finds prog as the sandbox does: a path (relative to the
// work dir), or a name on the sandbox's PATH.
func findProgram(prog, workDir string) string {
	if strings.Contains(prog, "/") {
		if c := absIn(workDir, prog); isExecutable(c) {
			return c
		}
		return ""
	}
	for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
		if c := dir + "/" + prog; isExecutable(c) {
			return c
		}
	}
	return ""
}

// scriptInterpreters returns p's #! interpreter (and that one's, for an
// interpreter that is a script itself).
func scriptInterpreters(p string, depth int) []string {
	if depth > 4 {
		return nil
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil
	}
	head := make([]byte, 256)
	n, _ := fh.Read(head)
	fh.Close()
	line, ok := strings.CutPrefix(string(head[:n]), "#!")
	if !ok {
		return nil
	}
	line, _, _ = strings.Cut(line, "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	interps := []string{fields[0]}
	if path.Base(fields[0]) == "env" && len(fields) > 1 {
		if c := findProgram(fields[1], "/"); c != "" {
			interps = append(interps, c) // #!/usr/bin/env python3
		}
	}
	var out []string
	for _, in := range interps {
		out = append(out, in)
		if real, err := filepath.EvalSymlinks(in); err == nil {
			out = append(out, scriptInterpreters(real, depth+1)...)
		}
	}
	return out
}
