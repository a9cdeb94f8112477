package policyengine

import (
	"path"
	"strings"
)

// Invocation is one program a command line runs, found the way CheckExec
// finds them: inside sh -c scripts, eval, wrappers (env, sudo, timeout,
// xargs...), find -exec, trap and alias.
type Invocation struct {
	// Name is the program's base name ("rm" for "/bin/rm").
	Name string
	// Words are the program as written and its arguments.
	Words []string
	// Redirects are the invocation's redirections.
	Redirects []Redirect
	// Wrapped is set when a wrapper, shell or eval ran the program.
	Wrapped bool
	// Shell is set on a shell's -c or eval: it only runs the script,
	// whose programs are the following invocations.
	Shell bool
}

// Invocations lists every program line runs, outermost first.
func Invocations(line string) ([]Invocation, error) {
	var out []Invocation
	err := invocationsOf(line, 0, false, &out)
	return out, err
}

func invocationsOf(line string, depth int, wrapped bool, out *[]Invocation) error {
	if depth > maxShellDepth {
		return errTooDeep
	}
	cmds, err := SplitCommandLine(line)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := invocationOf(c, depth, wrapped, true, out); err != nil {
			return err
		}
	}
	return nil
}

func invocationOf(c Command, depth int, isWrapped, inShell bool, out *[]Invocation) error {
	if depth > maxShellDepth {
		return errTooDeep
	}
	if c.Program == "" {
		return nil
	}
	name := path.Base(c.Program)
	*out = append(*out, Invocation{Name: name, Words: append([]string{c.Program}, c.Args...), Redirects: c.Redirects, Wrapped: isWrapped})
	self := len(*out) - 1
	switch {
	case name == "eval" && inShell:
		(*out)[self].Shell = true
		return invocationsOf(strings.Join(c.Args, " "), depth+1, true, out)
	case inShell && name == "trap" && len(c.Args) > 1 && !strings.HasPrefix(c.Args[0], "-"):
		return invocationsOf(c.Args[0], depth+1, true, out)
	case inShell && name == "alias":
		for _, a := range c.Args {
			if _, value, ok := strings.Cut(a, "="); ok && strings.TrimSpace(value) != "" {
				if err := invocationsOf(value, depth+1, true, out); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if opts, ok := wrappers[name]; ok {
		if inner, rest := wrapped(name, c.Args, opts); inner != "" {
			return invocationOf(Command{Program: inner, Args: rest}, depth+1, true, false, out)
		}
	}
	if shells[name] {
		if script, ok := shellScript(c.Args); ok {
			(*out)[self].Shell = true
			return invocationsOf(script, depth+1, true, out)
		}
	}
	if name == "find" {
		for i, a := range c.Args {
			if (a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir") && i+1 < len(c.Args) {
				end := len(c.Args)
				for j := i + 1; j < len(c.Args); j++ {
					if c.Args[j] == ";" || c.Args[j] == "+" {
						end = j
						break
					}
				}
				if err := invocationOf(Command{Program: c.Args[i+1], Args: c.Args[i+2 : end]}, depth+1, true, false, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
