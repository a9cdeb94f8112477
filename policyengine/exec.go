package policyengine

import (
	"errors"
	"fmt"
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
}

// wrappers are programs (or builtins) that run the program named in their
// arguments; both the wrapper and the wrapped program must be allowed.
// The value is the set of options that take a separate argument.
var wrappers = map[string]map[string]bool{
	"exec": {"-a": true}, "command": {}, "builtin": {}, "time": {"-f": true, "-o": true},
	"env": {"-u": true, "-C": true, "-S": true}, "nice": {"-n": true},
	"nohup": {}, "setsid": {}, "stdbuf": {"-i": true, "-o": true, "-e": true},
	"timeout": {"-s": true, "-k": true}, "xargs": {"-I": true, "-n": true, "-P": true, "-d": true, "-L": true, "-s": true, "-a": true, "-E": true},
	"sudo": {"-u": true, "-g": true}, "doas": {"-u": true}, "ionice": {"-c": true, "-n": true},
	"taskset": {}, "chroot": {}, "flock": {}, "unbuffer": {}, "watch": {"-n": true},
}

// builtinWrappers are wrappers that are shell builtins themselves.
var builtinWrappers = map[string]bool{"exec": true, "command": true, "builtin": true, "time": true}

// shells are programs whose -c argument is itself a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "busybox": true}

// sandboxPath is the PATH inside the sandbox: a bare program name in an
// exec list matches these absolute locations too.
var sandboxPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// SandboxPATH is the PATH value the sandbox runs commands with.
var SandboxPATH = strings.Join(sandboxPath, ":")

var errTooDeep = errors.New("the command nests shells, eval or wrappers too deeply to check")

// CheckExec decides whether a shell command line (as passed to sh -c) runs
// only allowed programs and redirects only to allowed paths. Every segment
// of every pipeline, list and substitution is checked.
func (e *Engine) CheckExec(line string) Decision {
	d, err := e.checkLine(line, 0)
	if err != nil {
		return Decision{Action: Deny, Reason: fmt.Sprintf("cannot check the command line: %v", err)}
	}
	return d
}

// CheckArgv decides whether argv may be executed directly (no shell
// around it, so builtins don't count), following sh -c scripts and
// wrappers.
func (e *Engine) CheckArgv(argv []string) Decision {
	if len(argv) == 0 || argv[0] == "" {
		return Decision{Action: Deny, Reason: "empty command"}
	}
	d, err := e.checkCommand(Command{Program: argv[0], Args: argv[1:]}, 0, false)
	if err != nil {
		return Decision{Action: Deny, Reason: fmt.Sprintf("cannot check the command: %v", err)}
	}
	return d
}

func (e *Engine) checkLine(line string, depth int) (Decision, error) {
	if depth > maxShellDepth {
		return Decision{}, errTooDeep
	}
	cmds, err := SplitCommandLine(line)
	if err != nil {
		return Decision{}, err
	}
	var allowed []string
	for _, c := range cmds {
		d, err := e.checkCommand(c, depth, true)
		if err != nil || d.Action != Allow {
			return d, err
		}
		if c.Program != "" {
			allowed = append(allowed, c.Program)
		}
	}
	return e.allowAll(allowed), nil
}

func (e *Engine) allowAll(programs []string) Decision {
	if !e.perms.ExecRestricted() {
		return Decision{Action: Allow, Reason: "no skill declares an exec list, so any program may run"}
	}
	return Decision{Action: Allow, Reason: "every program (" + strings.Join(dedupe(programs), ", ") + ") is in the exec list"}
}

// checkCommand checks one simple command: its redirections, its program,
// and what the program runs in turn (sh -c, eval, wrappers, find -exec).
func (e *Engine) checkCommand(c Command, depth int, inShell bool) (Decision, error) {
	if depth > maxShellDepth {
		return Decision{}, errTooDeep
	}
	for _, r := range c.Redirects {
		if d := e.checkRedirect(r); d.Action != Allow {
			return d, nil
		}
	}
	prog := c.Program
	if prog == "" {
		return Decision{Action: Allow, Reason: "only redirections"}, nil
	}
	name := path.Base(prog)
	switch {
	case name == "." || name == "source":
		if inShell && !strings.Contains(prog, "/") {
			return Decision{Action: Deny, Reason: fmt.Sprintf("%q runs a script file whose commands corral cannot inspect; run it as 'sh FILE' instead", prog)}, nil
		}
	case name == "eval" && inShell && prog == "eval":
		return e.checkLine(strings.Join(c.Args, " "), depth+1)
	case inShell && prog == "trap" && len(c.Args) > 1 && c.Args[0] != "-" && !strings.HasPrefix(c.Args[0], "-"):
		// trap ACTION SIGNAL...: the action is a command line run later.
		if strings.TrimSpace(c.Args[0]) == "" {
			return Decision{Action: Allow, Reason: "trap with an empty action"}, nil
		}
		return e.checkLine(c.Args[0], depth+1)
	case inShell && prog == "alias":
		// alias NAME=VALUE: the value runs wherever NAME is used.
		for _, a := range c.Args {
			if _, value, ok := strings.Cut(a, "="); ok && strings.TrimSpace(value) != "" {
				if d, err := e.checkLine(value, depth+1); err != nil || d.Action != Allow {
					return d, err
				}
			}
		}
		return Decision{Action: Allow, Reason: "every alias runs allowed programs"}, nil
	case inShell && shellBuiltins[prog]:
		return Decision{Action: Allow, Reason: prog + " is a shell builtin"}, nil
	}
	if !(inShell && builtinWrappers[prog]) && e.perms.ExecRestricted() {
		if _, ok := e.lookupProgram(prog); !ok {
			return e.checkProgram(prog), nil
		}
	}
	if opts, ok := wrappers[name]; ok {
		if inner, rest := wrapped(name, c.Args, opts); inner != "" {
			return e.checkCommand(Command{Program: inner, Args: rest}, depth+1, false)
		}
	}
	if shells[name] {
		if script, ok := shellScript(c.Args); ok {
			return e.checkLine(script, depth+1)
		}
	}
	if name == "find" {
		for i, a := range c.Args {
			if (a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir") && i+1 < len(c.Args) {
				if d, err := e.checkCommand(Command{Program: c.Args[i+1]}, depth+1, false); err != nil || d.Action != Allow {
					return d, err
				}
			}
		}
	}
	return e.allowAll([]string{prog}), nil
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
	grant := path.Base(prog)
	if strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/") {
		grant = "an absolute path"
	}
	return Decision{Action: Deny, Reason: prog + " is not in the exec list of skills " + e.execFrom + "; to allow it, add " + strconv.Quote(grant) + " to permissions.exec"}
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

func onSandboxPath(dir string) bool {
	for _, d := range sandboxPath {
		if d == dir {
			return true
		}
	}
	return false
}

// checkRedirect checks a redirection target as a write (or a read for <).
func (e *Engine) checkRedirect(r Redirect) Decision {
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
		return Decision{Action: Deny, Reason: fmt.Sprintf("the redirection target %q depends on a shell expansion that corral cannot check; write the path literally", t)}
	}
	if r.Op == "<" || r.Op == "<&" {
		return e.CheckRead(t)
	}
	return e.CheckWrite(t)
}

// wrapped returns the program a wrapper runs and its arguments, skipping
// the wrapper's options (and, for env, VAR=value; for timeout, chroot,
// flock and taskset, their first operand: duration, root, lock, mask).
func wrapped(name string, args []string, optsWithValue map[string]bool) (string, []string) {
	skipOperand := name == "timeout" || name == "chroot" || name == "flock" || name == "taskset"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1], args[i+2:]
			}
			return "", nil
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if optsWithValue[a] {
				i++
			}
		case name == "env" && strings.Contains(a, "="):
		case skipOperand:
			skipOperand = false
		default:
			return a, args[i+1:]
		}
	}
	return "", nil
}

// shellScript returns the script of "sh [options] -c SCRIPT".
func shellScript(args []string) (string, bool) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return "", false
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
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
