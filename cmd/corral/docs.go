package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"corral.dev/corral/sandbox"
)

// docsCommand writes the man page or a shell's completion script. Both
// are made here, from the command table and each command's flag set, so
// they list what the binary accepts and cannot drift from it; the release
// script ships their output (a hidden command: see hiddenCommand).
var docsCommand = command{
	name:    "docs",
	usage:   docsFormats,
	summary: "Print corral's man page (corral.1) or the completion script for bash, zsh or fish, made from the command table.",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) != 1 {
				return failed(errors.New("want one of man, bash, zsh, fish"))
			}
			write, ok := docWriters[args[0]]
			if !ok {
				return failed(fmt.Errorf("unknown format %q (man, bash, zsh or fish)", args[0]))
			}
			w := bufio.NewWriter(os.Stdout)
			write(w, docCommands())
			return w.Flush()
		}
	},
}

// docsFormats are the formats docs writes (the man page names them too).
const docsFormats = "man|bash|zsh|fish"

// docWriters write each of docsFormats.
var docWriters = map[string]func(io.Writer, []docCommand){
	"man":  writeMan,
	"bash": writeBash,
	"zsh":  writeZsh,
	"fish": writeFish,
}

// docCommand is one subcommand as the man page and the completions
// show it.
type docCommand struct {
	name, summary string
	synopsis      string // as help shows it, on one line (more lines: other forms)
	flags         []docFlag
	words         []string // what its first argument can be (check's questions, policy's actions)
}

// docFlag is one flag: what it is called, the name of its value ("" for
// a switch), its help text and what completes its value.
type docFlag struct {
	name, arg, usage, def string
	kind                  valueKind
	values                []string // kind valueWord: the values it takes
}

// valueKind says what a flag's value is, for completion.
type valueKind int

const (
	valueNone valueKind = iota // a switch: no value
	valueText                  // a value nothing can complete
	valueFile
	valueDir
	valueWord // one of docFlag.values
)

// flagValues are the flags whose values are a fixed set of words.
// TestDocFlagValues checks that each flag takes each of them.
var flagValues = map[string][]string{
	"tier": {string(sandbox.TierAuto), string(sandbox.TierNamespaces), string(sandbox.TierLandlock)},
}

// docCommands reads the command table: every command's flags, as its
// setup registers them.
func docCommands() []docCommand {
	out := make([]docCommand, 0, len(commands))
	for _, c := range commands {
		fs := flag.NewFlagSet("corral "+c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.setup(fs)
		d := docCommand{name: c.name, summary: c.summary, synopsis: synopsis(c, fs, math.MaxInt), words: usageWords(c.name, c.usage)}
		fs.VisitAll(func(f *flag.Flag) { d.flags = append(d.flags, docFlagOf(f)) })
		out = append(out, d)
	}
	return out
}

func docFlagOf(f *flag.Flag) docFlag {
	arg, usage := flag.UnquoteUsage(f)
	d := docFlag{name: f.Name, arg: arg, usage: usage, kind: valueText}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		d.arg, d.kind = "", valueNone
	} else if v, ok := flagValues[f.Name]; ok {
		d.kind, d.values = valueWord, v
	} else {
		// The value's name in the help text says what it is
		// (--cgroup-parent's `PATH` is a cgroup's, not a file's).
		switch arg {
		case "file", "path", "BIN":
			d.kind = valueFile
		case "dir", "DIR":
			d.kind = valueDir
		}
	}
	switch f.DefValue {
	case "", "false", "0":
	default:
		d.def = neutralPath(f.DefValue)
	}
	return d
}

// neutralPath writes a default that names the home or config folder of
// whoever runs docs as ~ or $XDG_CONFIG_HOME, so the page says what
// every user gets (--global-policy's default is ~/.config/corral/policy.yaml).
func neutralPath(s string) string {
	for _, v := range []struct{ env, as string }{{"XDG_CONFIG_HOME", "$XDG_CONFIG_HOME"}, {"XDG_DATA_HOME", "$XDG_DATA_HOME"}, {"HOME", "~"}} {
		if dir := os.Getenv(v.env); strings.HasPrefix(dir, "/") && len(dir) > 1 && strings.HasPrefix(s, dir+"/") {
			return v.as + s[len(dir):]
		}
	}
	return s
}

// usageWords reads the words a command's first argument can be from its
// usage: the lower-case words outside [brackets], between |s
// ("read|write|net ARG | tool NAME" gives read, write, net and tool).
func usageWords(name, usage string) []string {
	var words []string
	depth := 0
	for _, tok := range strings.Fields(usage) {
		open := depth > 0 || strings.HasPrefix(tok, "[")
		depth += strings.Count(tok, "[") - strings.Count(tok, "]")
		if open {
			continue
		}
		for _, w := range strings.Split(tok, "|") {
			if w != "corral" && w != name && isWord(w) {
				words = append(words, w)
			}
		}
	}
	return words
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// brief is the start of a help text, for a completion menu: up to the
// first ". ", ": ", "; " or " (" of its first sentence.
func brief(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for _, stop := range []string{". ", ": ", "; ", " ("} {
		if i := strings.Index(s, stop); i > 0 {
			s = s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

// docNames are the words that can follow corral: the table's commands
// and help.
func docNames(cmds []docCommand) []string {
	names := make([]string, 0, len(cmds)+1)
	for _, c := range cmds {
		names = append(names, c.name)
	}
	return append(names, "help")
}
