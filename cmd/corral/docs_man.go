package main

import (
	"fmt"
	"io"
	"strings"
)

// writeMan writes corral.1: a synopsis, then each command's usage, help
// text and flags, as `corral help COMMAND` shows them.
func writeMan(w io.Writer, cmds []docCommand) {
	fmt.Fprintf(w, `.\" corral.1, made by corral docs man from the command table; do not edit.
.TH CORRAL 1 "" "corral %s" "User Commands"
.SH NAME
corral \- run a command in a Linux sandbox built from agent skills' permissions
.SH SYNOPSIS
.B corral
.I command
.RI [ flags ]
.RI [ args ]
.br
.B corral help
.RI [ command ]
.br
.B corral \-\-version
.SH DESCRIPTION
corral runs one command inside a Linux sandbox built from the permissions
that agent skills declare, and answers questions about those permissions
without running anything.
Each skill is a folder with a SKILL.md whose YAML front matter lists what
the skill needs: files to read and write, hosts to reach, programs to run,
environment variables to keep and resource limits.
The kernel enforces their union: a new root holding only the granted paths,
Landlock rules, an exec allowlist, a seccomp filter, no capabilities and a
private network namespace.
If the kernel cannot enforce a protection, the command does not run.
.PP
Flags take one dash or two
.RB ( \-json ", " \-\-json ),
and a value as the next argument or after
.BR = .
Flags come before the command's other arguments; a
.B \-\-
ends them.
.SH COMMANDS
`, roffText(versionString()))
	for _, c := range cmds {
		fmt.Fprintf(w, ".SS %s\n", c.name)
		roffSynopsis(w, c.name, c.synopsis)
		fmt.Fprintln(w, ".PP")
		roffParagraphs(w, c.summary)
		for _, f := range c.flags {
			fmt.Fprintf(w, ".TP\n\\fB\\-\\-%s\\fR", roffText(f.name))
			if f.arg != "" {
				fmt.Fprintf(w, " \\fI%s\\fR", roffText(f.arg))
			}
			fmt.Fprintf(w, "\n%s", roffLine(f.usage))
			if f.def != "" {
				fmt.Fprintf(w, " (default %s)", roffText(f.def))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, `.SH SHELL COMPLETION
.B corral %s
prints this page or the completion script for a shell, made from the
same command table.
A release ships them next to its binaries as corral.1,
completions/corral.bash, completions/_corral and completions/corral.fish.
.SH SEE ALSO
.BR landlock (7),
.BR seccomp (2),
.BR namespaces (7),
.BR user_namespaces (7),
.BR cgroups (7)
`, roffText("docs "+docsFormats))
}

// roffSynopsis writes a command's synopsis lines, each starting
// "corral NAME" in bold, left-aligned and unhyphenated; a [bracketed
// flag] is not broken across lines.
func roffSynopsis(w io.Writer, name, synopsis string) {
	fmt.Fprintln(w, ".ad l\n.nh")
	defer fmt.Fprintln(w, ".ad\n.hy")
	for i, line := range strings.Split(synopsis, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "corral "+name))
		if i > 0 {
			fmt.Fprintln(w, ".br")
		}
		fmt.Fprintf(w, ".B corral %s\n", name)
		if line == "" {
			continue
		}
		var b strings.Builder
		depth := 0
		for _, r := range roffText(line) {
			switch {
			case r == '[':
				depth++
			case r == ']':
				depth--
			case r == ' ' && depth > 0:
				b.WriteString(`\ `)
				continue
			}
			b.WriteRune(r)
		}
		fmt.Fprintln(w, roffStart(b.String()))
	}
}

// roffParagraphs writes text as filled paragraphs: a blank line starts
// a new one.
func roffParagraphs(w io.Writer, text string) {
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			fmt.Fprintln(w, ".PP")
		}
		for _, line := range strings.Split(para, "\n") {
			fmt.Fprintln(w, roffLine(strings.TrimSpace(line)))
		}
	}
}

// roffLine is text as a line of its own: one that starts with . or '
// would be read as a request.
func roffLine(s string) string {
	return roffStart(roffText(s))
}

// roffStart protects an escaped line's first character.
func roffStart(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText escapes text inside a line: backslashes, and every hyphen as
// a minus, so flags copied from the page work.
func roffText(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}
