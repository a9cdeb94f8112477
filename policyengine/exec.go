package policyengine

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// maxShellDepth bounds how deeply nested sh -c, eval and wrappers are
// followed before the check gives up and denies.
const maxShellDepth = 8

// shellBuiltins run inside the shell and start no program.
var shellBuiltins = map[string]bool{
	"cd": true, "echo": true, "printf": true, "true": true, "false": true,
	"test": true, "[": true, "[[": true, "pwd": true, "export": true,
	"unset": true, "set": true, "read": true, "exit": true, "return": true,
	"shift": true, ":": true, "wait": true, "trap": true, "umask": true,
	"alias": true, "unalias": true, "local": true, "declare": true,
	"typeset": true, "readonly": true, "let": true, "getopts": true,
	"hash": true, "type": true, "jobs": true, "fg": true, "bg": true,
	"break": true, "continue": true, "shopt": true, "ulimit": true,
	"times": true, "kill": true,
	// bash's own: a name sh (dash) looks up on the PATH, which the
	// kernel's exec list then decides.
	"mapfile": true, "readarray": true, "pushd": true, "popd": true, "dirs": true, "caller": true,
	"disown": true, "compgen": true, "help": true,
}

// sandboxPath is the PATH inside the sandbox: a bare program name in an
// exec list matches these absolute locations too.
var sandboxPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// SandboxPATH is the PATH value the sandbox runs commands with.
var SandboxPATH = strings.Join(sandboxPath, ":")

var errTooDeep = errors.New("the command nests shells, eval or wrappers too deeply to check")

// CheckExec decides whether a shell command line (as passed to sh -c) runs
// only allowed programs and redirects only to allowed paths. Every segment
// of every pipeline, list and substitution is checked.
//
// The answer is the preflight's: it refuses only what is certain (a
// literal program the exec list does not hold, a literal write target
// outside the grants). A part of the line it cannot read (syntax it does
// not follow, a target or program a shell expansion decides, a script
// run with source) refuses nothing: the kernel enforces the skills'
// files, programs and network as the line runs, and the answer is an
// allow whose Unread says what was not read.
func (e *Engine) CheckExec(line string) Decision {
	return e.settle(e.checkLine(line, 0, nil, nil, shEither))
}

// CheckArgv decides whether argv may be executed directly (no shell
// around it, so builtins don't count), following sh -c scripts and
// wrappers.
func (e *Engine) CheckArgv(argv []string) Decision {
	if len(argv) == 0 || argv[0] == "" {
		return Decision{Action: Deny, Reason: "empty command"}
	}
	return e.settle(e.checkCommand(Command{Program: argv[0], Args: argv[1:]}, 0, false, lineState{cwd: e.startCwd()}))
}

// settle is the answer to a whole check: an error (syntax the reader
// does not follow, nesting past maxShellDepth) leaves the line to the
// kernel, and an allow that read only part of the line says so.
func (e *Engine) settle(d Decision, err error) Decision {
	if err != nil {
		d = e.unread(err.Error())
	}
	if d.Action == Allow && d.Unread != "" {
		d.Reason = "corral's preflight cannot read all of the command (" + d.Unread + "), so it leaves that part to the kernel, " +
			"which enforces the skills' files, programs and network as it runs; of what it read: " + d.Reason
	}
	return d
}

// unread is the decision for a part of a line that cannot be read: an
// allow that the kernel's enforcement stands behind.
func (e *Engine) unread(why string) Decision {
	return Decision{Action: Allow, Reason: "not read", Unread: why}
}

// unreadOf keeps the first Unread of a line's parts.
func unreadOf(have string, d Decision) string {
	if have == "" {
		return d.Unread
	}
	return have
}

// lineState is what checking one command line learns as it goes.
type lineState struct {
	// functions are the names the line defines as shell functions.
	functions map[string]bool
	// cwd is where the line may be when a command runs; nested lines
	// share it, so that what one learns the others see.
	cwd *cwdState
	// sh is the shell that reads the line.
	sh lineShell
}

// cwdState is where a line may be: the work dir, and every cd target
// ("" for one that cannot be told). CDPATH set sends a relative cd
// elsewhere: then such a cd goes where corral cannot tell.
type cwdState struct {
	dirs   []string
	cdpath bool
}

// envPassed reports whether the sandbox passes the variable name in.
func (e *Engine) envPassed(name string) bool {
	for _, x := range e.env {
		if envMatch(x.Value, name) {
			return true
		}
	}
	return false
}

func (e *Engine) startCwd() *cwdState {
	// CDPATH passed into the sandbox applies from the start.
	return &cwdState{dirs: []string{e.workDir}, cdpath: e.envPassed("CDPATH")}
}

// maxDirs bounds the folders tracked for cd; past it a relative
// redirection is refused.
const maxDirs = 16

// checkLine checks a command line; cwd and functions are what the shell
// that reads it starts with (nil: the work dir, no functions).
func (e *Engine) checkLine(line string, depth int, cwd *cwdState, functions map[string]bool, sh lineShell) (Decision, error) {
	if depth > maxShellDepth {
		return Decision{}, errTooDeep
	}
	cmds, err := splitLine(line, sh)
	if errors.Is(err, ErrEmptyCommand) && depth > 0 {
		// A nested line that runs nothing: trap '' TERM, eval '',
		// sh -c ''.
		return e.allowAll(nil), nil
	}
	if err != nil {
		if errors.Is(err, errTooDeep) {
			return Decision{}, err
		}
		// Syntax the reader does not follow: the kernel decides.
		return e.unread(err.Error()), nil
	}
	if cwd == nil {
		cwd = e.startCwd()
	}
	st := lineState{cwd: cwd, functions: maps.Clone(functions), sh: sh}
	var allowed []string
	var unread string
	for _, c := range cmds {
		if c.Function != "" {
			// A definition that may not be made leaves NAME to be the
			// program: it is checked as one.
			if !c.Conditional {
				if st.functions == nil {
					st.functions = map[string]bool{}
				}
				st.functions[c.Function] = true
			}
			continue
		}
		d, err := e.checkCommand(c, depth, true, st)
		if err != nil || d.Action != Allow {
			return d, err
		}
		unread = unreadOf(unread, d)
		if c.Program != "" && !st.functions[c.Program] {
			allowed = append(allowed, c.Program)
		}
	}
	d := e.allowAll(allowed)
	d.Unread = unread
	return d, nil
}

func (e *Engine) allowAll(programs []string) Decision {
	if !e.perms.ExecRestricted() {
		return Decision{Action: Allow, Reason: "no skill declares an exec list, so any program may run"}
	}
	if len(programs) == 0 {
		return Decision{Action: Allow, Reason: "the command runs no program"}
	}
	var listed, kernel, builtins []string
	for _, p := range dedupe(programs) {
		if _, ok := e.lookupProgram(p); ok {
			listed = append(listed, p)
		} else if why, ok := e.kernelExec(p); ok {
			kernel = append(kernel, why)
		} else {
			// checkCommand let it through as a shell builtin.
			builtins = append(builtins, p)
		}
	}
	var parts []string
	if len(listed) > 0 {
		parts = append(parts, "every program ("+strings.Join(listed, ", ")+") is in the exec list")
	}
	if len(kernel) > 0 {
		parts = append(parts, "the kernel lets it run: "+strings.Join(kernel, "; "))
	}
	if len(builtins) > 0 {
		parts = append(parts, "the shell runs "+strings.Join(builtins, ", ")+" itself (builtins)")
	}
	return Decision{Action: Allow, Reason: strings.Join(parts, ", and ")}
}

// checkCommand checks one simple command: its redirections, its program,
// and what the program runs in turn (sh -c, eval, wrappers, find -exec).
func (e *Engine) checkCommand(c Command, depth int, inShell bool, st lineState) (Decision, error) {
	if depth > maxShellDepth {
		return Decision{}, errTooDeep
	}
	var unread string
	for _, r := range c.Redirects {
		d := e.checkRedirectIn(r, st.cwd.dirs)
		if d.Action != Allow {
			return d, nil
		}
		unread = unreadOf(unread, d)
	}
	st.cwd.notice(c)
	prog := c.Program
	if prog == "" {
		return Decision{Action: Allow, Reason: "only redirections and assignments", Unread: unread}, nil
	}
	name := path.Base(prog)
	switch {
	case inShell && st.functions[prog]:
		// Its body was checked where it was defined.
		return Decision{Action: Allow, Reason: prog + " is a shell function defined on the line", Unread: unread}, nil
	case name == "." || name == "source":
		if inShell && !strings.Contains(prog, "/") {
			// The script's commands run in this shell, unread.
			return Decision{Action: Allow, Reason: prog + " is a shell builtin", Unread: unreadOf(unread, Decision{Unread: fmt.Sprintf("%s runs the commands of a file", prog)})}, nil
		}
	case inShell && (prog == "cd" || prog == "pushd" || prog == "popd"):
		st.cwd.change(prog, c.Args)
		return Decision{Action: Allow, Reason: prog + " is a shell builtin", Unread: unread}, nil
	case inShell && prog == "unset":
		if why := bashEvaluates(prog, c.Args); why != "" {
			unread = unreadOf(unread, Decision{Unread: why})
		}
		for _, a := range c.Args {
			delete(st.functions, a) // unset -f NAME, or unset NAME
		}
		return Decision{Action: Allow, Reason: "unset is a shell builtin", Unread: unread}, nil
	case inShell && shellBuiltins[prog] && prog != "trap" && prog != "alias":
		if why := bashEvaluates(prog, c.Args); why != "" {
			unread = unreadOf(unread, Decision{Unread: why})
		}
		return Decision{Action: Allow, Reason: prog + " is a shell builtin", Unread: unread}, nil
	}
	if strings.Contains(prog, "/") && !path.IsAbs(prog) && e.perms.ExecRestricted() && (len(st.cwd.dirs) != 1 || st.cwd.dirs[0] != e.workDir) {
		// Which file it names cannot be told; the kernel's exec list
		// decides.
		d := e.allowAll(nil)
		d.Unread = unreadOf(unread, Decision{Unread: fmt.Sprintf("the relative program path %q follows a cd (or runs in a folder a wrapper chose)", prog)})
		return d, nil
	}
	if !(inShell && isBuiltin(prog)) && e.perms.ExecRestricted() {
		if _, ok := e.lookupProgram(prog); !ok {
			if d := e.checkProgram(prog); d.Action != Allow {
				return d, nil
			}
		}
	}
	runs, err := nested(c, inShell)
	if err != nil {
		d := e.allowAll([]string{prog})
		d.Unread = unreadOf(unread, Decision{Unread: fmt.Sprintf("what %s runs: %v", prog, err)})
		return d, nil
	}
	programs := []string{prog}
	if inShell && isBuiltin(prog) {
		programs = nil
	}
	for _, r := range runs {
		cwd := st.cwd
		if r.chdir != "" {
			cwd = st.cwd.moved(r.chdir)
		}
		var d Decision
		switch {
		case r.write != "":
			d = e.checkRedirectIn(Redirect{Op: ">", Target: r.write}, st.cwd.dirs)
		case r.isLine && r.sameShell:
			d, err = e.checkLine(r.line, depth+1, cwd, st.functions, st.sh)
		case r.isLine:
			d, err = e.checkLine(r.line, depth+1, cwd, nil, nestedShell(r))
		default:
			// A wrapper's program runs with no shell around it; only
			// command and builtin run builtins.
			d, err = e.checkCommand(r.cmd, depth+1, r.inShell, lineState{cwd: cwd})
			if r.cmd.Program != "" {
				programs = append(programs, r.cmd.Program)
			}
		}
		if err != nil || d.Action != Allow {
			return d, err
		}
		unread = unreadOf(unread, d)
	}
	d := e.allowAll(programs)
	d.Unread = unread
	return d, nil
}

// moved is where a wrapper's program runs when the wrapper changes to
// dir ("?": a folder that cannot be told).
func (c *cwdState) moved(dir string) *cwdState {
	out := &cwdState{cdpath: c.cdpath}
	switch {
	case dir == "?" || slices.Contains(c.dirs, ""):
		out.dirs = []string{""}
	case path.IsAbs(dir):
		out.dirs = []string{path.Clean(dir)}
	default:
		for _, d := range c.dirs {
			out.dirs = append(out.dirs, path.Join(d, dir))
		}
	}
	return out
}

// notice records a command that sets CDPATH (CDPATH=x, export CDPATH=x,
// declare ... CDPATH).
func (c *cwdState) notice(cmd Command) {
	sets := func(w string) bool {
		return w == "CDPATH" || strings.HasPrefix(w, "CDPATH=") || strings.HasPrefix(w, "CDPATH+=")
	}
	if slices.ContainsFunc(cmd.Assigns, sets) {
		c.cdpath = true
	}
	switch cmd.Program {
	case "export", "declare", "typeset", "readonly", "local", "read", "eval", "set":
		if slices.ContainsFunc(cmd.Args, func(a string) bool { return strings.Contains(a, "CDPATH") }) {
			c.cdpath = true
		}
	}
}

// change records where cd, pushd or popd may take the line: a literal
// folder joined to every folder the line may be in, or "" (unknown).
func (c *cwdState) change(prog string, args []string) {
	target := ""
	for _, a := range args {
		if a == "--" || strings.HasPrefix(a, "-") && len(a) > 1 && prog != "popd" {
			continue
		}
		target = a
		break
	}
	add := func(d string) {
		if !slices.Contains(c.dirs, d) {
			c.dirs = append(c.dirs, d)
		}
	}
	relative := !path.IsAbs(target) && target != "." && target != ".." && !strings.HasPrefix(target, "./") && !strings.HasPrefix(target, "../")
	switch {
	case prog == "popd", target == "", target == "-", unsure(target), len(c.dirs) >= maxDirs, c.cdpath && relative:
		add("")
	case path.IsAbs(target):
		add(path.Clean(target))
	default:
		for _, d := range slices.Clone(c.dirs) {
			if d != "" {
				add(path.Join(d, target))
			}
		}
	}
}

// CheckProgram decides whether the program (a name or a path) may run.
func (e *Engine) CheckProgram(prog string) Decision {
	return e.checkProgram(prog)
}

func (e *Engine) checkProgram(prog string) Decision {
	if !e.perms.ExecRestricted() {
		return Decision{Action: Allow, Reason: "no skill declares an exec list, so any program may run"}
	}
	if x, ok := e.lookupProgram(prog); ok {
		return Decision{Action: Allow, Reason: prog + " is in the exec list as " + x.Value + " (from " + strings.Join(x.From, ", ") + ")", Rule: x.Value}
	}
	if why, ok := e.kernelExec(prog); ok {
		return Decision{Action: Allow, Reason: prog + " is not in the exec list, but the kernel lets it run: " + why +
			"; to refuse it, remove that entry from permissions.exec"}
	}
	grant := path.Base(prog)
	if strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/") {
		grant = "an absolute path"
	}
	notListed := "is not in the exec list of skills " + e.execFrom + "; to allow it, add " + strconv.Quote(grant) + " to permissions.exec"
	if e.exists != nil && !unsure(prog) && !e.exists(prog) {
		where := " on the sandbox's PATH (" + SandboxPATH + ")"
		switch {
		case strings.HasPrefix(prog, "/"):
			where = ""
		case strings.Contains(prog, "/"):
			where = " (a relative path starts in the work dir)"
		}
		return Decision{Action: Deny, NotFound: true, Reason: prog + ": command not found" + where + "; it also " + notListed}
	}
	return Decision{Action: Deny, Reason: prog + " " + notListed}
}

// lookupProgram finds the exec entry that grants prog: the same name or
// path, a name whose PATH location prog is (/usr/bin/curl for "curl"), or
// an absolute entry on the sandbox's PATH that prog names ("curl" for
// /usr/bin/curl).
func (e *Engine) lookupProgram(prog string) (Entry, bool) {
	if x, ok := e.exec[prog]; ok {
		return x, true
	}
	if strings.HasPrefix(prog, "/") {
		if x, ok := e.exec[path.Base(prog)]; ok && onSandboxPath(path.Dir(prog)) {
			return x, true
		}
	} else if !strings.Contains(prog, "/") {
		for _, dir := range sandboxPath {
			if x, ok := e.exec[dir+"/"+prog]; ok {
				return x, true
			}
		}
	}
	return Entry{}, false
}

// kernelExec asks Options.KernelExec about a program the exec list does
// not name. A word a shell expansion decides is never asked about.
func (e *Engine) kernelExec(prog string) (string, bool) {
	if e.kernel == nil || prog == "" || unsure(prog) {
		return "", false
	}
	return e.kernel(prog)
}

func onSandboxPath(dir string) bool {
	for _, d := range sandboxPath {
		if d == dir {
			return true
		}
	}
	return false
}

// checkRedirectIn checks a redirection target as a write (or a read for
// <); a relative target in every folder the line may be in.
func (e *Engine) checkRedirectIn(r Redirect, dirs []string) Decision {
	t := r.Target
	switch r.Op {
	case "<<", "<<<":
		return Decision{Action: Allow}
	case ">&", "<&":
		if t == "-" || isDigits(t) {
			return Decision{Action: Allow}
		}
	}
	if strings.ContainsAny(t, "$`*?[~") {
		return Decision{Action: Allow, Reason: "not read", Unread: fmt.Sprintf("the redirection target %q, which a shell expansion decides", t)}
	}
	// The target is the path as the command sees it: > /tmp/x writes the
	// sandbox's own /tmp.
	check := e.CheckWriteInside
	if r.Op == "<" || r.Op == "<&" {
		check = e.CheckReadInside
	}
	if path.IsAbs(t) {
		return check(t)
	}
	var first Decision
	for i, dir := range dirs {
		if dir == "" {
			return Decision{Action: Allow, Reason: "not read", Unread: fmt.Sprintf("the relative redirection target %q, which follows a cd to a folder corral cannot tell", t)}
		}
		d := check(path.Join(dir, t))
		if d.Action != Allow {
			return d
		}
		if i == 0 {
			first = d
		}
	}
	return first
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
