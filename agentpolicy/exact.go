package agentpolicy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// A "remember" answer stores what the user approved and nothing wider:
// each command of the line becomes an allow rule that matches exactly
// that command (its assignments, program and every argument), as a
// command_glob without wildcards. Where no such rule can be written, the
// line is refused whole and nothing is stored (see RememberRules).

// ErrNotExact is what RememberRules' refusals match (errors.Is): no rule
// can allow exactly the approved command and nothing more.
var ErrNotExact = errors.New("no rule can allow exactly this command")

// notExactError is a refusal with its reason.
type notExactError struct{ why string }

func (e *notExactError) Error() string        { return e.why }
func (e *notExactError) Is(target error) bool { return target == ErrNotExact }

func notExact(format string, args ...any) error {
	return &notExactError{why: fmt.Sprintf(format, args...)}
}

// stateBuiltins change the shell the rest of the line runs in, or run
// code no rule sees; a rule for one would allow it before any command.
var stateBuiltins = func() map[string]string {
	m := map[string]string{}
	for why, names := range map[string][]string{
		"changes the folder the commands after it run in": {"cd", "pushd", "popd"},
		"changes the shell's variables, options or environment for the commands after it": {"export", "unset",
			"set", "shopt", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray", "getopts",
			"let", "shift", "wait"},
		"changes what the names of later commands run":       {"alias", "unalias", "hash", "enable"},
		"changes the limits or file modes of later commands": {"ulimit", "umask"},
		"runs code that the rule would not hold":             {"eval", "source", ".", "exec", "trap", "fc", "command", "builtin"},
	} {
		for _, n := range names {
			m[n] = why
		}
	}
	return m
}()

// wrapperPrograms run another program (with other rights, limits, an
// environment or a script); corral checks that program as a command of
// its own, so a rule for the line would need one for the program alone,
// which the user did not approve.
var wrapperPrograms = map[string]bool{"sudo": true, "doas": true, "env": true, "sh": true, "bash": true, "dash": true,
	"zsh": true, "eval": true, "exec": true, "xargs": true, "timeout": true, "nice": true, "nohup": true, "setsid": true,
	"time": true, "command": true, "builtin": true, "stdbuf": true, "ionice": true, "taskset": true, "chroot": true,
	"flock": true, "unbuffer": true, "watch": true, "busybox": true, "ksh": true, "mksh": true, "ash": true,
	"toybox": true, "fish": true, "csh": true, "tcsh": true, "rbash": true, "yash": true, "posh": true,
	"script": true, "su": true, "runuser": true, "chrt": true, "strace": true, "ltrace": true, "nsenter": true,
	"unshare": true, "systemd-run": true, "pkexec": true}

// expandable are the characters a word may not hold even quoted: unquoted,
// the shell expands them, and corral reads a quoted and an unquoted word
// alike, so a rule holding one would also match its expansion. A ~ counts
// where it would start a home folder (tildeLiteral).
const expandable = "$`*?[]{}"

// expansionAt is the index of the first character of w that would be an
// expansion unquoted, or -1.
func expansionAt(w string) int {
	for i := 0; i < len(w); i++ {
		if strings.IndexByte(expandable, w[i]) >= 0 || w[i] == '~' && !tildeLiteral(w[:i]) {
			return i
		}
	}
	return -1
}

// RememberRules are the allow rules a "remember" answer adds for line:
// one {command_glob} for each command that needs a rule (the built-in
// read-only list needs none), matching that command exactly and nothing
// else. The line may hold simple commands joined by ;, &&, || and pipes;
// it is refused whole, with an error matching ErrNotExact that says why,
// when a command
//
//   - is a builtin that changes the shell for the commands after it (cd,
//     export, set, alias, ...) or runs other code (eval, source, exec, ...),
//   - is a wrapper (sudo, env, timeout, xargs, sh -c, ...),
//   - holds an expansion ($VAR, $(...), backquotes, globs, braces, a ~
//     that starts a home folder), even quoted,
//   - reads a pipe or a redirection: its input would not be in the rule,
//   - writes to a file by redirection (2>&1 and >/dev/null are kept out
//     of the rule, since they write nothing),
//   - or only sets variables; or when the line has a subshell, a compound
//     command, a function, a comment or a background job.
//
// Quoting is read away ("git" log is git log), and leading options and
// assignments stay in the rule (git --no-pager log, FOO=1 make).
func RememberRules(line string) ([]Rule, error) {
	segs, err := segments(line)
	if err != nil {
		return nil, err
	}
	rules, err := exactRules(segs, line)
	if err != nil {
		return nil, fmt.Errorf("cannot remember %q: %w", strings.Join(strings.Fields(line), " "), err)
	}
	return rules, nil
}

func exactRules(segs []segment, line string) ([]Rule, error) {
	cmds, err := splitPlainLine(line)
	if err != nil {
		return nil, err
	}
	for _, c := range cmds {
		prog := ""
		for _, w := range c.words {
			if !isAssignment(w) {
				prog = w
				break
			}
		}
		if prog == "" {
			return nil, notExact("%s only sets shell variables for the commands after it", strings.Join(c.words, " "))
		}
		name := path.Base(prog)
		if why, ok := stateBuiltins[name]; ok {
			return nil, notExact("%s %s, which no rule can hold; remember the commands without it", name, why)
		}
		if name == "printf" && slices.ContainsFunc(c.words, func(w string) bool { return strings.HasPrefix(w, "-v") }) {
			return nil, notExact("printf -v sets a shell variable for the commands after it, which no rule can hold")
		}
		if wrapperPrograms[name] {
			return nil, notExact("%s runs another program, which corral checks as a command of its own: a rule for that program would allow it without %s; remember stores no wrappers (write the rules by hand if you mean both)", name, name)
		}
		for _, w := range c.words {
			if i := expansionAt(w); i >= 0 {
				return nil, notExact("the word %q holds %c, which corral cannot tell from an expansion (%s)", w, w[i], whyNotPlain(w[i]))
			}
		}
	}
	if len(segs) != len(cmds) {
		return nil, notExact("a command runs another program (corral reads %d commands where %d are written), which would need a rule of its own; remember stores no wrappers", len(segs), len(cmds))
	}
	var rules []Rule
	for i := range segs {
		s, c := &segs[i], cmds[i]
		if !slices.Equal(s.awords, c.words) || s.shell || len(s.expanding) > 0 || !slices.Equal(s.redirects, c.redirects) {
			return nil, notExact("corral reads %q otherwise than it is written", strings.Join(c.words, " "))
		}
		if readOnly(*s) {
			continue // the built-in list allows it
		}
		if c.piped {
			return nil, notExact("%s reads the output of the command before it, and a rule for it would allow it with any input; remember it without the pipe", s.atext)
		}
		r := Rule{CommandGlob: globLiteral(s.qtext)}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// globLiteral is a command_glob that matches s and nothing else.
func globLiteral(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`).Replace(s)
}

// quoteWord writes a word so that no other list of words is written the
// same once joined by spaces: one with a space, a quote or nothing in it
// goes in single quotes ("git commit -m 'fix bug'" is not "git commit -m
// fix bug").
func quoteWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n\r\v\f'") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// quotedText is how allow command_glob rules see a segment: its
// assignments (NAME=value, the value quoted), program (quoted when it
// reads as an assignment) and arguments, each quoted by quoteWord.
func quotedText(assigns, words []string) string {
	var parts []string
	for _, a := range assigns {
		name, value, _ := strings.Cut(a, "=")
		parts = append(parts, name+"="+quoteWord(value))
	}
	for i, w := range words {
		if i == 0 && isAssignment(w) {
			parts = append(parts, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
			continue
		}
		parts = append(parts, quoteWord(w))
	}
	return strings.Join(parts, " ")
}
