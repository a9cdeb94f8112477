package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"corral.dev/corral/agentpolicy"
)

var policyCommand = command{
	name:  "policy",
	usage: "schema | validate FILE... | remember --policy FILE COMMAND-LINE",
	summary: `Work with agent policy files: print the JSON Schema of the format, check
files, or remember a confirmed command line in the project's policy file
(the "remember" answer to a confirm): each command becomes a command_glob
rule that allows exactly that command, or, where no rule can hold exactly
what was approved (cd, sudo, $VAR, a pipe into it, a redirection to a
file...), nothing is stored and it exits 125 saying why.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		file := fs.String("policy", "", "the project's policy `file` (remember)")
		return func(args []string) error {
			if len(args) == 0 {
				return failed(errors.New("want schema, validate FILE... or remember --policy FILE COMMAND-LINE"))
			}
			switch args[0] {
			case "schema":
				os.Stdout.Write(agentpolicy.Schema)
				return nil
			case "validate":
				if len(args) < 2 {
					return failed(errors.New("validate needs at least one FILE"))
				}
				for _, f := range args[1:] {
					if _, err := agentpolicy.Load(f); err != nil {
						return failed(err)
					}
					fmt.Printf("%s: valid\n", f)
				}
				return nil
			case "remember":
				sub := flag.NewFlagSet("remember", flag.ContinueOnError)
				sub.StringVar(file, "policy", *file, "the project's policy file")
				if err := sub.Parse(args[1:]); err != nil {
					return failed(err)
				}
				args = append(args[:1], sub.Args()...)
				if *file == "" || len(args) != 2 {
					return failed(errors.New("write corral policy remember --policy FILE 'COMMAND LINE'"))
				}
				added, err := agentpolicy.Remember(*file, args[1])
				if err != nil {
					return failed(err)
				}
				if len(added) == 0 {
					fmt.Printf("%s: nothing to add: it has the rules, or the built-in read-only list allows the line\n", *file)
					return nil
				}
				for _, r := range added {
					fmt.Printf("%s: added permissions.allow %s\n", *file, r)
				}
				return nil
			}
			return failed(fmt.Errorf("unknown policy action %q", args[0]))
		}
	},
}
