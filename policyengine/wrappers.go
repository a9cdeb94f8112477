package policyengine

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
)

// A command can run other programs: a wrapper (env, timeout, xargs...)
// runs the program named in its arguments, a shell runs the script after
// -c, find runs what follows -exec. Both the exec check and Invocations
// read these with nested, which parses each wrapper's options as its
// getopt_long does: "timeout -k 1 -s KILL 5 curl" runs curl, not 1 or
// KILL. Where the words do not say for sure which program runs (an
// unknown or ambiguous option, an option spelled with an expansion), the
// answer is an error, and the check denies.

// nestedRun is one thing a command runs in turn: a program with its
// arguments, or a command line that a shell reads; or a file a wrapper
// writes.
type nestedRun struct {
	cmd     Command
	line    string
	isLine  bool
	inShell bool // cmd runs as a builtin could (command, builtin)
	// sameShell: the line runs in the shell that runs c (eval, trap,
	// alias), which knows the functions defined so far.
	sameShell bool
	// bash: bash reads the line (bash -c), with its own grammar.
	bash  bool
	write string // a file the wrapper writes (time -o FILE)
	// chdir is the folder it runs in when the wrapper changes it (env -C
	// DIR); "?" when that cannot be told (find -execdir, chroot).
	chdir string
}

// wrapper says how a wrapper's arguments are read.
type wrapper struct {
	spec OptSpec
	// operands is how many operands come before the program (timeout's
	// duration, chroot's root, taskset's mask, flock's lock file).
	operands int
	// noRun are options after which the wrapper runs no program
	// (command -v, taskset -p).
	noRun []string
	// builtin marks the shell's own wrappers (exec, command, builtin),
	// which are wrappers only inside a shell.
	builtin bool
	// fallback is the program run when none is named (xargs runs echo).
	fallback string
}

var wrapperSpecs = sync.OnceValue(func() map[string]wrapper {
	return map[string]wrapper{
		"exec":    {spec: OptSpec{Short: "cla:"}, builtin: true},
		"command": {spec: OptSpec{Short: "pvV"}, noRun: []string{"-v", "-V"}, builtin: true},
		"builtin": {spec: OptSpec{}, builtin: true},
		"time": {spec: OptSpec{Short: "af:o:pqvhV", Long: map[string]ArgKind{
			"append": NoArg, "format": RequiredArg, "output": RequiredArg, "portability": NoArg,
			"quiet": NoArg, "verbose": NoArg, "help": NoArg, "version": NoArg}}},
		// -a/--argv0 (coreutils 9.5, Debian 13) takes the name the
		// program sees as its argv[0].
		"env": {spec: OptSpec{Short: "i0u:C:S:va:", Long: map[string]ArgKind{
			"ignore-environment": NoArg, "null": NoArg, "unset": RequiredArg, "chdir": RequiredArg, "argv0": RequiredArg,
			"split-string": RequiredArg, "block-signal": OptionalArg, "default-signal": OptionalArg,
			"ignore-signal": OptionalArg, "list-signal-handling": NoArg, "debug": NoArg, "help": NoArg, "version": NoArg}}},
		"nice":  {spec: OptSpec{Short: "n:", Long: map[string]ArgKind{"adjustment": RequiredArg, "help": NoArg, "version": NoArg}}},
		"nohup": {spec: OptSpec{Long: map[string]ArgKind{"help": NoArg, "version": NoArg}}},
		"setsid": {spec: OptSpec{Short: "cfwhV", Long: map[string]ArgKind{
			"ctty": NoArg, "fork": NoArg, "wait": NoArg, "help": NoArg, "version": NoArg}}},
		"stdbuf": {spec: OptSpec{Short: "i:o:e:", Long: map[string]ArgKind{
			"input": RequiredArg, "output": RequiredArg, "error": RequiredArg, "help": NoArg, "version": NoArg}}},
		"timeout": {spec: OptSpec{Short: "fk:ps:v", Long: map[string]ArgKind{
			"foreground": NoArg, "kill-after": RequiredArg, "preserve-status": NoArg, "signal": RequiredArg,
			"verbose": NoArg, "help": NoArg, "version": NoArg}}, operands: 1},
		"xargs": {spec: OptSpec{Short: "0a:E:e::i::I:l::L:n:prs:txP:d:o", Long: map[string]ArgKind{
			"null": NoArg, "arg-file": RequiredArg, "delimiter": RequiredArg, "eof": OptionalArg,
			"replace": OptionalArg, "max-lines": RequiredArg, "max-args": RequiredArg, "open-tty": NoArg,
			"max-procs": RequiredArg, "interactive": NoArg, "process-slot-var": RequiredArg,
			"no-run-if-empty": NoArg, "max-chars": RequiredArg, "show-limits": NoArg, "verbose": NoArg,
			"exit": NoArg, "help": NoArg, "version": NoArg}}, fallback: "echo"},
		"sudo": {spec: OptSpec{Short: "AbEeHiKklnPSVvh::C:D:g:p:R:r:T:t:U:u:", Long: map[string]ArgKind{
			"askpass": NoArg, "background": NoArg, "preserve-env": OptionalArg, "edit": NoArg, "set-home": NoArg,
			"login": NoArg, "reset-timestamp": NoArg, "remove-timestamp": NoArg, "list": NoArg, "non-interactive": NoArg,
			"preserve-groups": NoArg, "shell": NoArg, "stdin": NoArg, "validate": NoArg, "version": NoArg, "help": OptionalArg,
			"close-from": RequiredArg, "chdir": RequiredArg, "group": RequiredArg, "prompt": RequiredArg,
			"chroot": RequiredArg, "role": RequiredArg, "type": RequiredArg, "command-timeout": RequiredArg,
			"other-user": RequiredArg, "user": RequiredArg}}, noRun: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "-V", "-e", "--edit"}},
		"doas": {spec: OptSpec{Short: "nsu:C:L"}, noRun: []string{"-L", "-C"}},
		"ionice": {spec: OptSpec{Short: "c:n:p:P:tu:hV", Long: map[string]ArgKind{
			"class": RequiredArg, "classdata": RequiredArg, "pid": RequiredArg, "pgid": RequiredArg,
			"ignore": NoArg, "uid": RequiredArg, "help": NoArg, "version": NoArg}}, noRun: []string{"-p", "--pid", "-P", "--pgid", "-u", "--uid"}},
		"taskset": {spec: OptSpec{Short: "acphV", Long: map[string]ArgKind{
			"all-tasks": NoArg, "cpu-list": NoArg, "pid": NoArg, "help": NoArg, "version": NoArg}}, operands: 1, noRun: []string{"-p", "--pid"}},
		"chroot": {spec: OptSpec{Long: map[string]ArgKind{
			"userspec": RequiredArg, "groups": RequiredArg, "skip-chdir": NoArg, "help": NoArg, "version": NoArg}}, operands: 1},
		"flock": {spec: OptSpec{Short: "sexnouFw:E:c:hV", Long: map[string]ArgKind{
			"shared": NoArg, "exclusive": NoArg, "nonblock": NoArg, "close": NoArg, "unlock": NoArg,
			"no-fork": NoArg, "timeout": RequiredArg, "conflict-exit-code": RequiredArg, "command": RequiredArg,
			"verbose": NoArg, "help": NoArg, "version": NoArg,
			// util-linux 2.41 (Debian 13), then 2.42 (sid)
			"fcntl": NoArg, "nb": NoArg, "nonblocking": NoArg, "wait": RequiredArg, "start": RequiredArg, "length": RequiredArg,
		}}, operands: 1},
		"watch": {spec: OptSpec{Short: "bcCd::efghn:pq:rs:tvwx", Long: map[string]ArgKind{
			"beep": NoArg, "color": NoArg, "no-color": NoArg, "differences": OptionalArg, "errexit": NoArg,
			"chgexit": NoArg, "interval": RequiredArg, "precise": NoArg, "equexit": RequiredArg,
			"no-rerun": NoArg, "no-title": NoArg, "no-wrap": NoArg, "exec": NoArg, "help": NoArg, "version": NoArg,
			"follow": NoArg, "shotsdir": RequiredArg}}}, // procps-ng 4.0.7 (sid)
		"unbuffer": {spec: OptSpec{Short: "p"}},
		"chrt": {spec: OptSpec{Short: "bdefiorRaT:P:D:pmvhV", Long: map[string]ArgKind{
			"batch": NoArg, "deadline": NoArg, "ext": NoArg, "fifo": NoArg, "idle": NoArg, "other": NoArg, "rr": NoArg,
			"reset-on-fork": NoArg, "all-tasks": NoArg, "sched-runtime": RequiredArg, "sched-period": RequiredArg,
			"sched-deadline": RequiredArg, "pid": NoArg, "max": NoArg, "verbose": NoArg, "help": NoArg, "version": NoArg}},
			operands: 1, noRun: []string{"-p", "--pid", "-m", "--max"}},
		// script, su and runuser run -c's command line with a shell, and
		// nothing named otherwise (script's operand is its log file, su's
		// the user).
		"script": {spec: OptSpec{Short: "aB:c:eE:fI:O:o:qT:t::m:hV", Long: map[string]ArgKind{
			"append": NoArg, "log-io": RequiredArg, "command": RequiredArg, "return": NoArg, "echo": RequiredArg,
			"flush": NoArg, "log-in": RequiredArg, "log-out": RequiredArg, "logging-format": RequiredArg,
			"log-timing": RequiredArg, "timing": OptionalArg, "force": NoArg, "quiet": NoArg, "output-limit": RequiredArg,
			"help": NoArg, "version": NoArg}},
			operands: maxOperands},
		"su":      {spec: suSpec, operands: maxOperands},
		"runuser": {spec: runuserSpec, operands: maxOperands},
	}
})

// RunsNamedProgram reports whether the program called name runs a program
// its arguments name: a wrapper corral reads (env, timeout, xargs, sudo,
// exec...), busybox, find (-exec), or a runner whose options it does not
// read (strace, unshare...). Shells, which run code rather than a named
// program, are not counted.
func RunsNamedProgram(name string) bool {
	_, wrapper := wrapperSpecs()[name]
	return wrapper || isOpaqueRunner(name) || name == "busybox" || name == "toybox" || name == "find"
}

// opaqueRunners run a program their arguments name, with options corral
// does not read. Invocations, which an agent policy's rules read, cannot
// tell which program runs (ErrUnclear), so a policy's deny of rm is not
// bypassed by strace rm or a rule allowing unshare. The skills' exec
// check leaves them be: the kernel's exec allowlist holds for what they
// run.
func isOpaqueRunner(name string) bool {
	return opaqueRunners[name] || strings.HasPrefix(name, "ld-linux") || strings.HasPrefix(name, "ld-musl") || name == "ld.so"
}

var opaqueRunners = map[string]bool{
	"strace": true, "ltrace": true, "valgrind": true, "nsenter": true, "unshare": true, "setpriv": true,
	"fakeroot": true, "fakechroot": true, "proot": true, "firejail": true, "bwrap": true, "systemd-run": true,
	"pkexec": true, "torsocks": true, "torify": true, "proxychains": true, "proxychains4": true, "catchsegv": true,
	"parallel": true, "gdb": true, "lldb": true, "setarch": true, "linux32": true, "linux64": true,
	"numactl": true, "cgexec": true, "sg": true, "chpst": true, "flatpak-spawn": true, "prlimit": true,
	"capsh": true, "choom": true, "uclampset": true, "schedtool": true, "eatmydata": true, "faketime": true,
	"firejail-run": true, "systemd-nspawn": true, "machinectl": true, "run-one": true, "chronic": true,
}

// maxOperands says that a wrapper names no program among its operands.
const maxOperands = 1 << 30

var suSpec = OptSpec{Short: "c:fs:lmpg:G:w:PhV", Permute: true, Long: map[string]ArgKind{
	"command": RequiredArg, "session-command": RequiredArg, "shell": RequiredArg, "login": NoArg,
	"fast": NoArg, "preserve-environment": NoArg, "group": RequiredArg, "supp-group": RequiredArg,
	"whitelist-environment": RequiredArg, "pty": NoArg, "no-pty": NoArg, "help": NoArg, "version": NoArg}}

// runuserSpec is su's and -u USER: runuser -u USER [--] PROGRAM [ARGS]
// runs PROGRAM with no shell.
var runuserSpec = func() OptSpec {
	s := OptSpec{Short: suSpec.Short + "u:", Permute: suSpec.Permute, Long: maps.Clone(suSpec.Long)}
	s.Long["user"] = RequiredArg
	return s
}()

// isBuiltin reports whether name runs inside the shell: what "builtin
// NAME" can run, and what needs no exec entry.
// IsShellBuiltin reports whether the shell runs name itself, starting no
// program: a builtin (echo, cd, test, ...), eval, source or a wrapper that
// is one (command, builtin, exec).
func IsShellBuiltin(name string) bool { return isBuiltin(name) }

func isBuiltin(name string) bool {
	return shellBuiltins[name] || name == "eval" || name == "." || name == "source" || wrapperSpecs()[name].builtin
}

// shells are programs whose -c argument is itself a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "rbash": true, "yash": true, "posh": true, "lksh": true, "pdksh": true, "ksh93": true,
	"csh": true, "tcsh": true}

// fishSpec is fish's options: -c and -C take the command line as their
// value, not as an operand.
var fishSpec = OptSpec{Short: "c:C:d:ilnNo:pPfhv", Long: map[string]ArgKind{
	"command": RequiredArg, "init-command": RequiredArg, "debug": RequiredArg, "debug-output": RequiredArg,
	"features": RequiredArg, "interactive": NoArg, "login": NoArg, "no-execute": NoArg, "no-config": NoArg,
	"private": NoArg, "profile": RequiredArg, "profile-startup": RequiredArg, "print-rusage-self": NoArg,
	"print-debug-categories": NoArg, "help": NoArg, "version": NoArg}}

// bashLong are bash's long options; rcfile and init-file take a value.
var bashLong = map[string]bool{"norc": false, "noprofile": false, "posix": false, "login": false,
	"noediting": false, "verbose": false, "version": false, "help": false, "debugger": false,
	"dump-strings": false, "dump-po-strings": false, "protected": false, "restricted": false,
	"wordexp": false, "pretty-print": false, "rcfile": true, "init-file": true}

// unsure reports whether a word's meaning is decided only when the shell
// expands it, so that which option or program it is cannot be told here.
func unsure(word string) bool {
	if strings.ContainsAny(word, "$`*?[~") {
		return true
	}
	// Brace expansion: {a,b} and {1..3}, not a plain {} (xargs -I{}).
	return braceLike(word)
}

// unsureOption reports whether a word where options may stand could
// expand to options ($OPTS, or "-c x" split from $X). A word with a "/"
// ("$SKILL_DIR/run.sh") is taken for the path it names.
func unsureOption(word string) bool { return unsure(word) && !strings.Contains(word, "/") }

// ErrUnclear means the words do not say for sure which program a command
// runs: an unknown or ambiguous option of a wrapper or shell, or one a
// shell expansion decides.
var ErrUnclear = errors.New("which program runs cannot be told")

type unclearError struct{ err error }

func (e unclearError) Error() string        { return e.err.Error() }
func (e unclearError) Unwrap() error        { return e.err }
func (e unclearError) Is(target error) bool { return target == ErrUnclear }

// nested returns what c runs besides itself. inShell says c runs inside a
// shell, where eval, trap and alias take command lines. Its errors are
// ErrUnclear.
func nested(c Command, inShell bool) (runs []nestedRun, err error) {
	defer func() {
		if err != nil && !errors.Is(err, ErrUnclear) {
			err = unclearError{err}
		}
	}()
	name := path.Base(c.Program)
	switch {
	case inShell && c.Program == "eval":
		return []nestedRun{{line: strings.Join(c.Args, " "), isLine: true, sameShell: true}}, nil
	case inShell && c.Program == "trap" && len(c.Args) > 2 && c.Args[0] == "--":
		// trap -- ACTION SIGNAL...
		return []nestedRun{{line: c.Args[1], isLine: true, sameShell: true}}, nil
	case inShell && c.Program == "trap" && len(c.Args) > 1 && !strings.HasPrefix(c.Args[0], "-"):
		// trap ACTION SIGNAL...: the action is a command line run later.
		return []nestedRun{{line: c.Args[0], isLine: true, sameShell: true}}, nil
	case inShell && c.Program == "alias":
		// alias NAME=VALUE: the value runs wherever NAME is used.
		var out []nestedRun
		for _, a := range c.Args {
			if _, value, ok := strings.Cut(a, "="); ok && strings.TrimSpace(value) != "" {
				out = append(out, nestedRun{line: value, isLine: true, sameShell: true})
			}
		}
		return out, nil
	case name == "busybox" || name == "toybox":
		return busybox(c)
	case name == "find":
		return findExec(c)
	case shells[name]:
		return shellRuns(name, c.Args, c.Redirects)
	case name == "fish":
		return fishRuns(c.Args)
	}
	w, ok := wrapperSpecs()[name]
	if !ok || w.builtin && (!inShell || c.Program != name) {
		return nil, nil
	}
	return w.runs(name, c.Args)
}

// runs returns the program the wrapper name runs with args.
func (w wrapper) runs(name string, args []string) ([]nestedRun, error) {
	if name == "nice" && len(args) > 0 && isLegacyNice(args[0]) {
		args = args[1:] // nice -5 and nice --5: the old adjustment form
	}
	opts, operands, err := w.spec.Parse(args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w, so which program it runs cannot be told", name, err)
	}
	// The operands are the last words; the program is w.operands into them.
	for _, a := range args[:len(args)-len(operands)+min(w.operands, len(operands))] {
		if unsureOption(a) {
			return nil, fmt.Errorf("%s's argument %q depends on a shell expansion, so which program it runs cannot be told", name, a)
		}
	}
	var out []nestedRun
	chdir := ""
	for _, o := range opts {
		switch {
		case slices.Contains(w.noRun, o.Name):
			return nil, nil
		case name == "env" && (o.Name == "-S" || o.Name == "--split-string"):
			words, err := splitEnvString(o.Value)
			if err != nil {
				return nil, err
			}
			operands = append(words, operands...)
		case name == "flock" && (o.Name == "-c" || o.Name == "--command"):
			return []nestedRun{{line: o.Value, isLine: true}}, nil
		case (name == "script" || name == "su" || name == "runuser") && (o.Name == "-c" || o.Name == "--command" || o.Name == "--session-command"):
			out = append(out, nestedRun{line: o.Value, isLine: true})
		case name == "time" && (o.Name == "-o" || o.Name == "--output"):
			out = append(out, nestedRun{write: o.Value})
		case name == "env" && (o.Name == "-C" || o.Name == "--chdir"), name == "sudo" && (o.Name == "-D" || o.Name == "--chdir"):
			chdir = o.Value
			if unsure(chdir) {
				chdir = "?"
			}
		}
	}
	if name == "chroot" {
		chdir = "?" // every path is in another root
	}
	if name == "runuser" && hasOpt(opts, "-u", "--user") {
		w.operands = 0 // runuser -u USER PROGRAM
	}
	if name == "env" {
		for len(operands) > 0 && (operands[0] == "-" || strings.Contains(operands[0], "=")) {
			operands = operands[1:] // - (as -i) and NAME=VALUE
		}
	}
	if len(operands) <= w.operands {
		if w.fallback != "" && len(operands) == w.operands {
			return append(out, nestedRun{cmd: Command{Program: w.fallback}}), nil
		}
		return out, nil
	}
	operands = operands[w.operands:]
	if name == "flock" && (operands[0] == "-c" || operands[0] == "--command") {
		// flock FILE -c COMMAND runs COMMAND with sh -c.
		if len(operands) < 2 {
			return out, nil
		}
		return append(out, nestedRun{line: operands[1], isLine: true}), nil
	}
	if name == "watch" && !hasOpt(opts, "-x", "--exec") {
		// Without -x, watch runs its arguments with sh -c.
		return append(out, nestedRun{line: strings.Join(operands, " "), isLine: true}), nil
	}
	if name == "builtin" && !isBuiltin(operands[0]) {
		return nil, fmt.Errorf("builtin %s: %q is not a shell builtin corral knows", operands[0], operands[0])
	}
	return append(out, nestedRun{cmd: Command{Program: operands[0], Args: operands[1:]},
		inShell: name == "command" || name == "builtin", chdir: chdir}), nil
}

func isLegacyNice(a string) bool {
	d := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	return strings.HasPrefix(a, "-") && isDigits(d)
}

func hasOpt(opts []Opt, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.Name) {
			return true
		}
	}
	return false
}

// splitEnvString splits env -S's string into words. env has its own
// quoting, escapes and ${VAR} expansion; a string that uses any of them is
// refused rather than read differently from env.
func splitEnvString(s string) ([]string, error) {
	if strings.ContainsAny(s, "'\"\\$#`") {
		return nil, fmt.Errorf("env -S %q: quotes, escapes and variables in the split string are not read by corral, so which program it runs cannot be told", s)
	}
	return strings.Fields(s), nil
}

// shellRuns reads a shell's options: "sh [options] -c SCRIPT [NAME
// [ARGS]]" runs SCRIPT, with -c anywhere among the options (-ec, -c -e,
// -o pipefail -c, --norc -c, -c -- SCRIPT). Without -c the shell runs a
// script file or its standard input, which the kernel still confines;
// a here-string script (sh <<< 'cmd') is read as -c's.
func shellRuns(name string, args []string, redirects []Redirect) ([]nestedRun, error) {
	hasC, hasS := false, false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if unsureOption(a) && (!hasC || strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) {
			// An option, or the script file's name: either may
			// expand to options. The script after -c is checked as
			// a command line.
			return nil, fmt.Errorf("%s's argument %q depends on a shell expansion, so what it runs cannot be told", name, a)
		}
		if a == "--" || a == "-" {
			i++
			break
		}
		if strings.HasPrefix(a, "--") {
			takesValue, ok := bashLong[a[2:]]
			if !ok {
				return nil, fmt.Errorf("%s: %w %s, so what it runs cannot be told", name, ErrUnknownOption, a)
			}
			if takesValue {
				i++
			}
			continue
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		for _, f := range a[1:] {
			switch f {
			case 'c':
				hasC = true
			case 's':
				hasS = true
			case 'o', 'O':
				i++ // -o OPTION and -O SHOPT take the next word
			}
		}
	}
	bash := name == "bash"
	if hasC {
		if i >= len(args) {
			return nil, nil
		}
		return []nestedRun{{line: args[i], isLine: true, bash: bash}}, nil
	}
	if i < len(args) && !hasS {
		return nil, nil // a script file, which the kernel confines
	}
	// The script comes on standard input: a here-string on the line is
	// read like -c's script; a here-document's body is not kept.
	var out []nestedRun
	for _, r := range redirects {
		switch r.Op {
		case "<<<":
			out = append(out, nestedRun{line: r.Target, isLine: true, bash: bash})
		case "<<":
			return nil, fmt.Errorf("%s reads its script from a here-document, which corral does not read; pass it with -c", name)
		}
	}
	return out, nil
}

// fishRuns returns the command lines of fish's -c and -C (fish's syntax
// is read as sh's: what sh cannot read is refused).
func fishRuns(args []string) ([]nestedRun, error) {
	opts, _, err := fishSpec.Parse(args)
	if err != nil {
		return nil, fmt.Errorf("fish: %w, so what it runs cannot be told", err)
	}
	var out []nestedRun
	for _, o := range opts {
		if o.Name == "-c" || o.Name == "--command" || o.Name == "-C" || o.Name == "--init-command" {
			out = append(out, nestedRun{line: o.Value, isLine: true})
		}
	}
	return out, nil
}

// busybox reads "busybox APPLET ARGS" (and toybox's): the applet runs
// inside busybox itself, so what it runs in turn (sh -c, env, xargs...)
// is what busybox runs.
func busybox(c Command) ([]nestedRun, error) {
	if len(c.Args) == 0 || strings.HasPrefix(c.Args[0], "-") {
		return nil, nil // --list, --install, --help
	}
	applet := Command{Program: c.Args[0], Args: c.Args[1:]}
	if unsure(applet.Program) {
		return nil, fmt.Errorf("busybox applet %q depends on a shell expansion", applet.Program)
	}
	if b := path.Base(applet.Program); b == "busybox" || b == "toybox" {
		return []nestedRun{{cmd: applet}}, nil
	}
	return nested(applet, false)
}

// findExec returns the commands find runs with -exec, -execdir, -ok and
// -okdir: each up to its ";" or "+".
func findExec(c Command) ([]nestedRun, error) {
	var out []nestedRun
	for i := 0; i < len(c.Args); i++ {
		switch c.Args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		end := i + 1
		for end < len(c.Args) && c.Args[end] != ";" && c.Args[end] != "+" {
			end++
		}
		if end == i+1 {
			return nil, fmt.Errorf("find %s names no program", c.Args[i])
		}
		run := nestedRun{cmd: Command{Program: c.Args[i+1], Args: c.Args[i+2 : end]}}
		if c.Args[i] == "-execdir" || c.Args[i] == "-okdir" {
			run.chdir = "?" // the folder of each file found
		}
		out = append(out, run)
		i = end
	}
	return out, nil
}
