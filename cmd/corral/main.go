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
	"strconv"
	"strings"

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
	usage   string // the arguments after the flags; more lines: other forms
	summary string
	setup   func(fs *flag.FlagSet) func(args []string) error
	// badFlags, if set, handles a command line flag refused instead of
	// run: it gets the arguments, why (what corral would print) and
	// stderr, and returns as run does.
	badFlags func(args []string, err error, stderr io.Writer) error
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
			c := lookup(args[1])
			if c == nil {
				fmt.Fprintf(stderr, "corral help: unknown command %q%s (see 'corral help')\n", args[1], suggest(args[1], commandNames()))
				return corral.ExitFailed
			}
			fs := newFlagSet(c, stdout)
			c.setup(fs)
			fs.Usage()
			return 0
		}
		usage(stdout)
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "corral: unknown command %q%s (see 'corral help')\n", name, suggest(name, commandNames()))
		return corral.ExitFailed
	}
	// Help goes to stdout, as `corral help COMMAND` puts it; a flag
	// error is one line on stderr with the flag that was meant, not the
	// whole usage.
	fs := newFlagSet(c, stdout)
	runFn := c.setup(fs)
	fs.SetOutput(io.Discard)
	usage := fs.Usage
	fs.Usage = func() {} // package flag calls it on an error
	err := fs.Parse(args[1:])
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return 0
		}
		err = fmt.Errorf("%s (see 'corral %s -h')", flagError(fs, err), name)
		if c.badFlags == nil {
			fmt.Fprintf(stderr, "corral %s: %s\n", name, printable.Text(err.Error()))
			return corral.ExitFailed
		}
		// The command still answers (exec writes its report) and says
		// it where its messages go.
		err = c.badFlags(args[1:], err, stderr)
	} else {
		fs.SetOutput(stderr)
		err = runFn(fs.Args())
	}
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
	return hiddenCommand(name)
}

func commandNames() []string {
	names := []string{"help"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

func newFlagSet(c *command, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("corral "+c.name, flag.ContinueOnError)
	fs.SetOutput(out)
	// The usage goes to out whatever the flag set's output is then (the
	// commands use that as their stderr).
	fs.Usage = func() {
		prev := fs.Output()
		defer fs.SetOutput(prev)
		fs.SetOutput(out)
		fmt.Fprintf(out, "usage: %s\n\n%s\n", synopsis(c, fs, 80), c.summary)
		if hasFlags(fs) {
			fmt.Fprintf(out, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// synopsis is the command's usage line, wrapped at width: every flag,
// read from fs so the line cannot drift from the flags, then the
// arguments. A flag whose help says "(repeatable)" is shown with "...".
// Further forms of the command (lines of c.usage after the first) follow
// on lines of their own.
func synopsis(c *command, fs *flag.FlagSet, width int) string {
	words := []string{"corral", c.name}
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		w := "--" + f.Name
		if arg != "" {
			w += " " + strings.ToUpper(arg)
		}
		w = "[" + w + "]"
		if strings.Contains(help, "(repeatable)") {
			w += "..."
		}
		words = append(words, w)
	})
	first, more, _ := strings.Cut(c.usage, "\n")
	if first != "" {
		words = append(words, first)
	}
	indent := strings.Repeat(" ", len("corral "+c.name+" "))
	var b strings.Builder
	line := 0
	for i, w := range words {
		switch {
		case i == 0:
		case i > 1 && line+1+len(w) > width:
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	for _, m := range strings.Split(more, "\n") {
		if m = strings.TrimSpace(m); m != "" {
			b.WriteString("\n" + m)
		}
	}
	return b.String()
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "corral runs commands in a Linux sandbox built from agent skills' permissions.\n\nusage: corral COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, wrap(firstSentence(c.summary), 68, strings.Repeat(" ", 11)))
	}
	fmt.Fprintf(w, "  %-8s %s\n\nRun 'corral help COMMAND' or 'corral COMMAND -h' for a command's flags.\n", "help", "Show this help, or a command's.")
}

// firstSentence is s up to its first full stop, on one line: the
// command list shows whole sentences, not the summary's first line cut
// where it was wrapped.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// wrap breaks s into lines of at most width, each after the first
// starting with indent.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && line+1+len(w) > width {
			b.WriteString("\n" + indent)
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// flagError rewrites an error of package flag the way corral's flags are
// written (--name), naming the flag a mistyped one probably meant.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return "unknown flag --" + name + strings.Replace(suggest(name, names), "did you mean ", "did you mean --", 1)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "--" + strings.TrimLeft(name, "-") + " needs a value"
	}
	var value, name, why string
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag %s", &value, &name); n == 2 {
		if _, rest, ok := strings.Cut(msg, ": "); ok {
			why = rest
		}
		return "--" + strings.TrimSuffix(strings.TrimLeft(name, "-"), ":") + " " + strconv.Quote(value) + ": " + why
	}
	return msg
}

// suggest says which of names word was probably meant to be: the
// closest within a small edit distance, or the one it is a prefix of.
// It returns "" when none is close.
func suggest(word string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		d := editDistance(strings.ToLower(word), n)
		if strings.HasPrefix(n, word) && len(word) >= 3 {
			d = min(d, 1)
		}
		if best == "" || d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > max(1, len(word)/3) || bestD >= len(best) {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the edit distance of a and b (bytes) counting a swap
// of neighbours as one edit (optimal string alignment).
func editDistance(a, b string) int {
	before := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1) // a transposition
			}
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(b)]
}

// failed wraps err as a corral failure (exit 125).
func failed(err error) error { return &exitError{Code: corral.ExitFailed, Err: err} }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
