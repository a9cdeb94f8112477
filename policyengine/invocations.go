package policyengine

import (
	"errors"
	"fmt"
	"path"
)

// Invocation is one program a command line runs, found the way CheckExec
// finds them: inside sh -c scripts, eval, wrappers (env, sudo, timeout,
// xargs...), find -exec, trap and alias.
type Invocation struct {
	// Name is the program's base name ("rm" for "/bin/rm"); "" for a
	// command that only assigns variables.
	Name string
	// Words are the program as written and its arguments (the
	// assignments, for a command that only assigns).
	Words []string
	// Redirects are the invocation's redirections.
	Redirects []Redirect
	// Assigns are the NAME=value words before the program.
	Assigns []string
	// Expanding are the indices in Words of the arguments whose start the
	// shell decides (Command.Expanding): they may be options.
	Expanding []int
	// Wrapped is set when a wrapper, shell or eval ran the program.
	Wrapped bool
	// Shell is set on a shell's -c or eval: it only runs the script,
	// whose programs are the following invocations.
	Shell bool
}

// Invocations lists every program line runs, outermost first. The line
// and the scripts of sh -c are read as both sh (dash) and bash read them,
// those of bash -c with bash's grammar. Where the words do not tell which
// program a wrapper runs, it is an error.
func Invocations(line string) ([]Invocation, error) {
	var out []Invocation
	err := invocationsOf(line, 0, false, shEither, &out)
	return out, err
}

func invocationsOf(line string, depth int, wrapped bool, sh lineShell, out *[]Invocation) error {
	if depth > maxShellDepth {
		return errTooDeep
	}
	cmds, err := splitLine(line, sh)
	if errors.Is(err, ErrEmptyCommand) && depth > 0 {
		return nil // a nested line that runs nothing (trap '' TERM)
	}
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := invocationOf(c, depth, wrapped, true, sh, out); err != nil {
			return err
		}
	}
	return nil
}

func invocationOf(c Command, depth int, isWrapped, inShell bool, sh lineShell, out *[]Invocation) error {
	if depth > maxShellDepth {
		return errTooDeep
	}
	if c.Program == "" {
		if len(c.Assigns) > 0 {
			*out = append(*out, Invocation{Words: c.Assigns, Redirects: c.Redirects, Assigns: c.Assigns, Wrapped: isWrapped})
		}
		return nil
	}
	name := path.Base(c.Program)
	inv := Invocation{Name: name, Words: append([]string{c.Program}, c.Args...), Redirects: c.Redirects, Assigns: c.Assigns, Wrapped: isWrapped}
	for _, i := range c.Expanding {
		inv.Expanding = append(inv.Expanding, i+1)
	}
	*out = append(*out, inv)
	self := len(*out) - 1
	if isOpaqueRunner(name) {
		return fmt.Errorf("%s runs the program its arguments name, and corral does not read %s's options: %w", name, name, ErrUnclear)
	}
	if why := bashEvaluates(c.Program, c.Args); inShell && why != "" {
		return fmt.Errorf("%s: %w", why, ErrUnclear)
	}
	runs, err := nested(c, inShell)
	if err != nil {
		return err
	}
	for _, r := range runs {
		switch {
		case r.write != "":
			(*out)[self].Redirects = append((*out)[self].Redirects, Redirect{Op: ">", Target: r.write})
		case r.isLine:
			if name == "eval" || shells[name] || name == "busybox" && len(c.Args) > 0 && shells[c.Args[0]] {
				(*out)[self].Shell = true
			}
			next := sh
			if !r.sameShell {
				next = nestedShell(r)
			}
			err = invocationsOf(r.line, depth+1, true, next, out)
		default:
			err = invocationOf(r.cmd, depth+1, true, r.inShell, sh, out)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
