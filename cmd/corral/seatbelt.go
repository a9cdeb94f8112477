package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/seatbelt"
)

var seatbeltCommand = command{
	name:  "seatbelt",
	usage: "",
	summary: `Print the macOS Seatbelt profile (SBPL) of the skills' permissions.
It is what corral exec enforces on macOS through sandbox-exec. User paths
are parameters, listed at the top: pass each to sandbox-exec as
-D NAME=VALUE, or use --inline. Warnings go to stderr.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		var pf policyFlags
		pf.register(fs)
		port := sandbox.ProxyPort
		fs.Func("proxy-port", "the egress proxy's `port` on localhost, the one address the profile lets the command reach (default 3128)", func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 65535 {
				return errors.New("must be a port number, 1-65535")
			}
			port = n
			return nil
		})
		inline := fs.Bool("inline", false, "write paths into the profile as string literals instead of parameters, for sandbox-exec -f FILE")
		asJSON := fs.Bool("json", false, `print {"profile", "params", "args", "warnings"} as JSON`)
		return func(args []string) error {
			if len(args) > 0 {
				return failed(fmt.Errorf("unexpected arguments %q", args))
			}
			// fs.Output() is the stderr run was given.
			return printSeatbelt(os.Stdout, fs.Output(), &sf, &pf, seatbelt.Options{ProxyPort: port, Inline: *inline}, *asJSON)
		}
	},
}

// printSeatbelt loads the skills (capped by the agent policy, as exec
// does), renders the profile and prints it; warnings go to stderr.
func printSeatbelt(stdout, stderr io.Writer, sf *skillFlags, pf *policyFlags, opts seatbelt.Options, asJSON bool) error {
	l, err := sf.load()
	if err != nil {
		return failed(err)
	}
	ev, err := pf.load(l)
	if err != nil {
		return failed(err)
	}
	capped, notes, err := l.Capped(ev)
	if err != nil {
		return failed(err)
	}
	prof, err := seatbelt.Render(capped.Perms, opts)
	if err != nil {
		return failed(fmt.Errorf("rendering the profile: %w", err))
	}
	warnings := append(notes, prof.Warnings...)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			*seatbelt.Profile
			Args     []string `json:"args"`
			Warnings []string `json:"warnings,omitempty"`
		}{prof, prof.Args(), warnings})
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "corral seatbelt: warning: %s\n", printable.Text(w))
	}
	_, err = io.WriteString(stdout, prof.Text)
	return err
}
