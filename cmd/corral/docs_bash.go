package main

import (
	"fmt"
	"io"
	"strings"
)

// writeBash writes the bash completion: command names, each command's
// flags, the values of flags that take files, folders or a fixed set of
// words, the words a command's first argument can be, and a command name
// after exec's --. It needs bash 4 and nothing from bash-completion.
func writeBash(w io.Writer, cmds []docCommand) {
	fmt.Fprintf(w, `# bash completion for corral, made by corral docs bash from the command
# table; do not edit.

_corral_reply() {
	mapfile -t COMPREPLY < <(compgen "$@")
}

_corral() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local flags='' takes=' ' words='' w i skip=0 n=0
	COMPREPLY=()
	# bash splits --flag=value at the =.
	if [ "$prev" = = ] && [ "$COMP_CWORD" -gt 2 ]; then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	fi
	if [ "$COMP_CWORD" -le 1 ]; then
		_corral_reply -W %s -- "$cur"
		return
	fi
	case ${COMP_WORDS[1]} in
`, shellQuote(strings.Join(append(docNames(cmds), "--version"), " ")))
	for _, c := range cmds {
		fmt.Fprintf(w, "\t%s)\n", c.name)
		bashValueCases(w, c.flags)
		var names, takes []string
		for _, f := range c.flags {
			names = append(names, "--"+f.name)
			if f.kind != valueNone {
				takes = append(takes, "--"+f.name)
			}
		}
		fmt.Fprintf(w, "\t\tflags=%s\n", shellQuote(strings.Join(names, " ")))
		if len(takes) > 0 {
			fmt.Fprintf(w, "\t\ttakes=%s\n", shellQuote(" "+strings.Join(takes, " ")+" "))
		}
		if len(c.words) > 0 {
			fmt.Fprintf(w, "\t\twords=%s\n", shellQuote(strings.Join(c.words, " ")))
		}
		fmt.Fprintf(w, "\t\t;;\n")
	}
	fmt.Fprintf(w, `	help)
		words=%s
		;;
	*)
		return
		;;
	esac
	# Count the arguments before this one, skipping flags' values; after
	# --, the rest is a command line of its own.
	for ((i = 2; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ "$w" = = ]; then
			skip=1
			continue
		elif [ "$skip" = 1 ]; then
			skip=0
			continue
		fi
		case $w in
		--)
			if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
				_corral_reply -c -- "$cur"
			fi
			return
			;;
		-*)
			w=${w#-}
			case $takes in *" --${w#-} "*) skip=1 ;; esac
			;;
		*) n=$((n + 1)) ;;
		esac
	done
	case $cur in
	-*) _corral_reply -W "$flags" -- "$cur" ;;
	*) if [ "$n" = 0 ] && [ -n "$words" ]; then _corral_reply -W "$words" -- "$cur"; fi ;;
	esac
}

complete -o default -F _corral corral
`, shellQuote(strings.Join(docNames(cmds), " ")))
}

// bashValueCases completes the value after a flag that takes one: files
// are left to bash's own completion (-o default), folders and words are
// offered, and other values (sizes, addresses) get nothing.
func bashValueCases(w io.Writer, flags []docFlag) {
	byKind := map[valueKind][]string{}
	var words []docFlag
	for _, f := range flags {
		if f.kind == valueWord {
			words = append(words, f)
			continue
		}
		byKind[f.kind] = append(byKind[f.kind], "-"+f.name+" | --"+f.name)
	}
	fmt.Fprintf(w, "\t\tcase $prev in\n")
	for _, c := range []struct {
		kind valueKind
		do   string
	}{
		{valueFile, "return"},
		{valueDir, `compopt -o filenames; _corral_reply -d -- "$cur"; return`},
		{valueText, "compopt +o default; return"},
	} {
		if len(byKind[c.kind]) > 0 {
			fmt.Fprintf(w, "\t\t%s) %s ;;\n", strings.Join(byKind[c.kind], " | "), c.do)
		}
	}
	for _, f := range words {
		fmt.Fprintf(w, "\t\t-%s | --%s) _corral_reply -W %s -- \"$cur\"; return ;;\n", f.name, f.name, shellQuote(strings.Join(f.values, " ")))
	}
	fmt.Fprintf(w, "\t\tesac\n")
}

// shellQuote quotes s for sh, bash, zsh and fish alike.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
