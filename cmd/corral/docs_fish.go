package main

import (
	"fmt"
	"io"
	"strings"
)

// writeFish writes the fish completion (corral.fish, for
// ~/.config/fish/completions): the same commands, flags, values and
// first arguments as writeBash.
func writeFish(w io.Writer, cmds []docCommand) {
	fmt.Fprintf(w, `# fish completion for corral, made by corral docs fish from the command
# table; do not edit.

# __corral_is NAME: the command line is corral NAME ...
function __corral_is
    set -l words (commandline -opc)
    test (count $words) -ge 2; and test "$words[2]" = "$argv[1]"
end

# __corral_first NAME FLAG...: corral NAME has no argument yet; the FLAGs
# take a value.
function __corral_first
    set -l words (commandline -opc)
    test (count $words) -ge 2; and test "$words[2]" = "$argv[1]"; or return 1
    set -l skip 0
    for w in $words[3..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '-*=*'
            case '-*'
                if contains -- --(string replace -r -- '^-+' '' $w) $argv[2..-1]
                    set skip 1
                end
            case '*'
                return 1
        end
    end
end

complete -c corral -n __fish_use_subcommand -f -l version -d "print corral's version"
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c corral -n __fish_use_subcommand -f -a %s -d %s\n", c.name, shellQuote(brief(c.summary)))
	}
	fmt.Fprintf(w, "complete -c corral -n __fish_use_subcommand -f -a help -d %s\n", shellQuote("show the commands, or a command's flags"))
	fmt.Fprintf(w, "complete -c corral -n '__corral_is help' -f -a %s\n", shellQuote(strings.Join(docNames(cmds), " ")))
	for _, c := range cmds {
		is := shellQuote("__corral_is " + c.name)
		var takes []string
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c corral -n %s -l %s", is, f.name)
			switch f.kind {
			case valueText:
				line += " -x"
			case valueFile:
				line += " -r -F"
			case valueDir:
				line += " -x -a '(__fish_complete_directories)'"
			case valueWord:
				line += " -x -a " + shellQuote(strings.Join(f.values, " "))
			}
			fmt.Fprintf(w, "%s -d %s\n", line, shellQuote(brief(f.usage)))
			if f.kind != valueNone {
				takes = append(takes, "--"+f.name)
			}
		}
		if len(c.words) > 0 {
			fmt.Fprintf(w, "complete -c corral -n %s -f -a %s\n", shellQuote(strings.Join(append([]string{"__corral_first", c.name}, takes...), " ")), shellQuote(strings.Join(c.words, " ")))
		}
	}
}
