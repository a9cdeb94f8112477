package sandbox

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"corral/policyengine"
)

// ScriptInterpreters returns the programs the kernel lets the command run
// although no exec entry names them: the #! interpreters of allowed
// scripts (and the program #!/usr/bin/env NAME finds). Starting a script
// needs the execute right on its interpreter, and that right lets the
// interpreter be started directly too, with any arguments; check and the
// exec preflight must say so. Keys are the interpreter's path, every
// symlink on the way and its real path; values the exec entry that brings
// it. It reads as Facts.program does (the same PATH, the same #! line),
// but only the first bytes of each program: it runs on every check and
// exec. ELF interpreters (ld.so) are left out: with the exec allowlist
// they load no program the command could not run anyway (see the
// README's exec row).
func ScriptInterpreters(p policyengine.Permissions, workDir string) map[string]string {
	if !p.ExecRestricted() {
		return nil
	}
	var out map[string]string
	for _, e := range p.Exec {
		found := ""
		if strings.Contains(e.Value, "/") {
			if c := absIn(workDir, e.Value); isExecutable(c) {
				found = c
			}
		} else {
			found = onSandboxPATH(e.Value)
		}
		if found == "" {
			continue
		}
		for _, in := range scriptInterpreters(found, 0) {
			if out == nil {
				out = map[string]string{}
			}
			out[in] = e.Value
		}
	}
	return out
}

// onSandboxPATH finds name on the sandbox's PATH, or "".
func onSandboxPATH(name string) string {
	for _, dir := range strings.Split(policyengine.SandboxPATH, ":") {
		if c := dir + "/" + name; isExecutable(c) {
			return c
		}
	}
	return ""
}

// scriptInterpreters returns the paths that lead to p's #! interpreter
// (and to that one's, for an interpreter that is a script itself).
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
		if c := onSandboxPATH(fields[1]); c != "" {
			interps = append(interps, c) // #!/usr/bin/env python3
		}
	}
	var out []string
	for _, in := range interps {
		out = append(out, linkChain(in)...)
		if real, err := filepath.EvalSymlinks(in); err == nil {
			out = append(out, scriptInterpreters(real, depth+1)...)
		}
	}
	return out
}

// linkChain returns p, each symlink it leads through, and where it ends.
func linkChain(p string) []string {
	out := []string{p}
	for i := 0; i < 40; i++ {
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		p = target
		out = append(out, p)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		out = append(out, real)
	}
	return out
}
