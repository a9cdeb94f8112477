package corral

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/sandbox/fsaudit"
	"corral.dev/corral/skill"
)

// FSDenial is one file access the sandbox refused the command: a path it
// tried to read, write, create or run outside its grants (report:
// fs_denials). The path, program and exe are the command's choice: print
// them through package printable.
type FSDenial struct {
	// Path is the file or folder as the sandbox sees it; for a create,
	// delete or rename, the folder it happens in.
	Path string `json:"path"`
	// Access is what was tried: read, list, write, create, delete,
	// rename, exec or ioctl.
	Access string `json:"access"`
	// Rights are the kernel's names of the missing rights (Landlock's
	// blockers: fs.read_file, fs.make_reg, ...); empty for the preflight.
	Rights []string `json:"rights"`
	// Program and Exe are the process that tried (its comm and
	// executable; empty where the kernel did not say).
	Program string `json:"program"`
	Exe     string `json:"exe"`
	// Grant is the permission that would allow it, written as a skill
	// would: `add "$WORK_DIR/out/**" to permissions.fs.write`.
	Grant string `json:"grant"`
	// Source is who saw it: "landlock" (the kernel's audit records) or
	// "preflight" (corral, before anything ran).
	Source string `json:"source"`
}

// accessOf maps Landlock's blockers to one access word, the strongest
// first: a denial with several missing rights is named by the one a
// grant must add first.
var accessOf = []struct{ prefix, access string }{
	{"fs.execute", "exec"},
	{"fs.make_", "create"},
	{"fs.remove_", "delete"},
	{"fs.refer", "rename"},
	{"fs.write_file", "write"},
	{"fs.truncate", "write"},
	{"fs.read_file", "read"},
	{"fs.read_dir", "list"},
	{"fs.ioctl_dev", "ioctl"},
}

// sandboxPath are the folders exec looks programs up in, whose programs
// a skill names by their base name.
var sandboxPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// fsDenials turns the kernel's records into the report's entries, with
// the grant each one needs. Records for rights that are not about files
// (net.*, scope.*) are left out: the proxy reports the network.
func fsDenials(recs []fsaudit.Denial, vars skill.Variables) []FSDenial {
	var out []FSDenial
	for _, r := range recs {
		access := ""
		for _, a := range accessOf {
			if slices.ContainsFunc(r.Blockers, func(b string) bool { return strings.HasPrefix(b, a.prefix) }) {
				access = a.access
				break
			}
		}
		if access == "" {
			continue
		}
		out = append(out, FSDenial{Path: r.Path, Access: access, Rights: r.Blockers, Program: r.Comm, Exe: r.Exe,
			Grant: grantFor(access, r.Path, vars), Source: "landlock"})
	}
	return out
}

// grantFor is the permission that allows access on p, with the work dir
// and the home folder written as their variables.
func grantFor(access, p string, vars skill.Variables) string {
	switch access {
	case "exec":
		name := p
		if slices.Contains(sandboxPath, path.Dir(p)) {
			name = path.Base(p)
		}
		return `add "` + name + `" to permissions.exec`
	case "read":
		return `add "` + withVars(p, vars) + `" to permissions.fs.read`
	case "list", "ioctl":
		return `add "` + withVars(path.Join(p, "**"), vars) + `" to permissions.fs.read`
	case "write":
		return `add "` + withVars(p, vars) + `" to permissions.fs.write`
	}
	// create, delete, rename: the path is the folder it happens in.
	return `add "` + withVars(path.Join(p, "**"), vars) + `" to permissions.fs.write`
}

// withVars writes p under the work dir or the home folder (the longer
// first) with that variable.
func withVars(p string, vars skill.Variables) string {
	type v struct{ dir, name string }
	cands := []v{{vars.WorkDir, "$WORK_DIR"}, {vars.Home, "$HOME"}}
	slices.SortFunc(cands, func(a, b v) int { return len(b.dir) - len(a.dir) })
	for _, c := range cands {
		if c.dir == "" || c.dir == "/" {
			continue
		}
		if p == c.dir {
			return c.name
		}
		if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(c.dir, "/")+"/"); ok {
			return c.name + "/" + rest
		}
	}
	return p
}

// preflightGrant finds the grant in a preflight refusal's reason: the
// program (exec) or a redirection's target (fs.write, fs.read).
var preflightGrant = regexp.MustCompile(`add "([^"]*)" to permissions\.(exec|fs\.write|fs\.read)`)

// preflightFSDenial is a refusal of the preflight's check of the command
// line against the skills (exit 126, 127) as a file denial: a program
// outside the exec list, or a redirection outside the fs grants.
func preflightFSDenial(prog string, d Denial) FSDenial {
	m := preflightGrant.FindStringSubmatch(d.Reason)
	if m == nil {
		return FSDenial{Path: printable.Clip(prog, MaxLogged), Access: "exec", Rights: []string{}, Grant: `add "` + path.Base(prog) + `" to permissions.exec`, Source: "preflight"}
	}
	access := map[string]string{"exec": "exec", "fs.write": "write", "fs.read": "read"}[m[2]]
	return FSDenial{Path: printable.Clip(m[1], MaxLogged), Access: access, Rights: []string{}, Grant: printable.Clip(m[0], MaxLogged), Source: "preflight"}
}

// keepFSDenials fills the report's file denials from the sandbox's
// outcome.
func keepFSDenials(r *Result, fs sandbox.FSDenials, vars skill.Variables) {
	r.FSDenials = append(r.FSDenials, fsDenials(fs.Denials, vars)...)
	r.FSDenialsMore += fs.More
	r.FSDenialsLost = r.FSDenialsLost || fs.Lost
	r.DenialsUnobservable = append(r.DenialsUnobservable, fs.Unobservable...)
}
