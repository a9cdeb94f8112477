// Command corral runs a command inside a Linux sandbox built from the
// permissions that agent skills declare, and answers questions about those
// permissions (check, explain).
//
// This file holds the subcommand table and maps errors to exit codes; each
// subcommand lives in its own file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"corral.dev/corral"
	"corral.dev/corral/printable"
)

// Exit statuses of check (see the README); the ones every subcommand
// shares, and exec's, are package corral's (corral.ExitFailed, …).
const (
	exitDeny    = 1 // check: denied
	exitConfirm = 2 // check: needs confirmation
)

// exitError carries an exit code out of a subcommand. A nil Err means the
// subcommand already said what it had to.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// command is one subcommand: its flags are registered on fs by setup, and
// run receives the arguments left after flag parsing.
type command struct {
	name    string
	usage   string // argument synopsis after "corral NAME"
	summary string
	setup   func(fs *flag.FlagSet) func(args []string) error
}

// commands is the subcommand table, in the order help lists them.
var commands = []*command{&execCommand, &proxyCommand, &checkCommand, &policyCommand, &explainCommand, &seatbeltCommand, &doctorCommand, &setupCommand, &versionCommand}

// The sandbox's init stage never reaches Go: the C constructor
// (sandbox/stage/nsinit_linux.c) takes over a process started as the init.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return corral.ExitFailed
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				fs := newFlagSet(c, stdout)
				c.setup(fs)
				fs.Usage()
				return 0
			}
		}
		usage(stdout)
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "corral: unknown command %q (see 'corral help')\n", name)
		return corral.ExitFailed
	}
	fs := newFlagSet(c, stderr)
	runFn := c.setup(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return corral.ExitFailed // flag already printed the problem and the usage
	}
	err := runFn(fs.Args())
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.Err != nil {
			fmt.Fprintf(stderr, "corral %s: %s\n", name, printable.Text(ee.Err.Error()))
		}
		return ee.Code
	default:
		fmt.Fprintf(stderr, "corral %s: %s\n", name, printable.Text(err.Error()))
		return corral.ExitFailed
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func newFlagSet(c *command, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("corral "+c.name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: corral %s %s\n\n%s\n\nflags:\n", c.name, c.usage, c.summary)
		fs.PrintDefaults()
	}
	return fs
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "corral runs commands in a Linux sandbox built from agent skills' permissions.\n\nusage: corral COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, firstLine(c.summary))
	}
	fmt.Fprintf(w, "  %-8s %s\n\nRun 'corral help COMMAND' or 'corral COMMAND -h' for a command's flags.\n", "help", "show this help")
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// failed wraps err as a corral failure (exit 125).
func failed(err error) error { return &exitError{Code: corral.ExitFailed, Err: err} }
