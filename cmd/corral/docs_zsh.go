package main

import (
	"fmt"
	"io"
	"strings"
)

// writeZsh writes the zsh completion (_corral, for a folder on $fpath):
// commands with their summaries, each command's flags with their help,
// and what completes their values and arguments, as writeBash does.
func writeZsh(w io.Writer, cmds []docCommand) {
	fmt.Fprintf(w, `#compdef corral
# zsh completion for corral, made by corral docs zsh from the command
# table; do not edit.

_corral() {
	local curcontext=$curcontext state state_descr line ret=1
	typeset -A opt_args
	local -a corral_commands
	corral_commands=(
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t\t%s\n", shellQuote(c.name+":"+brief(c.summary)))
	}
	fmt.Fprintf(w, "\t\t%s\n", shellQuote("help:show the commands, or a command's flags"))
	fmt.Fprintf(w, `	)
	_arguments -C \
		'(- :)--version[print corral'\''s version]' \
		'1: :->command' \
		'*:: :->argument' && ret=0
	case $state in
	command)
		_describe -t commands 'corral command' corral_commands && ret=0
		;;
	argument)
		curcontext=${curcontext%%:*:*}:corral-$words[1]:
		case $words[1] in
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t\t%s)\n", c.name)
		specs := make([]string, 0, len(c.flags)+2)
		for _, f := range c.flags {
			specs = append(specs, zshFlagSpec(f))
		}
		switch {
		case c.name == execCommand.name:
			specs = append(specs, "(-)1:command:_command_names -e", "*::argument:_normal")
		case len(c.words) > 0:
			specs = append(specs, "1:argument:("+strings.Join(c.words, " ")+")", "*:argument:_files")
		case c.name != versionCommand.name:
			specs = append(specs, "*:argument:_files")
		}
		if len(specs) == 0 {
			fmt.Fprintf(w, "\t\t\t_message 'no arguments'\n\t\t\t;;\n")
			continue
		}
		fmt.Fprintf(w, "\t\t\t_arguments -S")
		for _, s := range specs {
			fmt.Fprintf(w, " \\\n\t\t\t\t%s", shellQuote(s))
		}
		fmt.Fprintf(w, " && ret=0\n\t\t\t;;\n")
	}
	fmt.Fprintf(w, `		help)
			_describe -t commands 'corral command' corral_commands && ret=0
			;;
		esac
		;;
	esac
	return ret
}

_corral "$@"
`)
}

// zshFlagSpec is an _arguments spec for f: --name=[help]:value:action,
// starred when the flag may be given more than once.
func zshFlagSpec(f docFlag) string {
	spec := "--" + f.name
	if strings.Contains(f.usage, "repeatable") {
		spec = "*" + spec
	}
	if f.kind == valueNone {
		return spec + "[" + zshEscape(brief(f.usage)) + "]"
	}
	action := " "
	switch f.kind {
	case valueFile:
		action = "_files"
	case valueDir:
		action = "_files -/"
	case valueWord:
		action = "(" + strings.Join(f.values, " ") + ")"
	}
	return spec + "=[" + zshEscape(brief(f.usage)) + "]:" + zshEscape(f.arg) + ":" + action
}

// zshEscape escapes what _arguments reads in a spec's help and message.
func zshEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}
