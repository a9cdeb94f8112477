package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestScanFlagsAgreesWithParse: on command lines flag accepts, scanFlags
// sets the same flags and finds the same command.
func TestScanFlagsAgreesWithParse(t *testing.T) {
	for _, line := range []string{
		"--report r.json -- sh -c x",
		"-report=r.json --quiet --work-dir /w true",
		"--report-fd 3 --log-fd=4 --best-effort=false -- -x",
		"--skill a --skill b --quiet=true cmd --report x",
		"--report - -",
		"--tier landlock --",
		"",
	} {
		args := strings.Fields(line)
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		want := newExecFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
		got := newExecFlags(fs2)
		rest := scanFlags(fs2, args)
		if !slices.Equal(rest, fs.Args()) && len(rest)+len(fs.Args()) > 0 {
			t.Errorf("%q: command %q, flag says %q", line, rest, fs.Args())
		}
		if got.out != want.out || !slices.Equal(got.sf.skills, want.sf.skills) || got.sf.workDir != want.sf.workDir || got.rf != want.rf {
			t.Errorf("%q: scanned %+v, parsed %+v", line, got, want)
		}
	}
}

// TestScanFlagsPastErrors: the report flags are found around what flag
// refuses (an unknown flag, with or without a value; a bad value), and
// the command after --.
func TestScanFlagsPastErrors(t *testing.T) {
	for _, c := range []struct {
		line, report string
		fd           int
		argv         string
	}{
		{"--frob --report r.json -- true", "r.json", -1, "true"},
		{"--frob=x --report-fd 3 -- echo hi", "", 3, "echo hi"},
		// An unknown flag's value, or the command without --, ends the
		// flags: the command's arguments are never corral's.
		{"--frob x --report-fd 3 -- echo hi", "", -1, "x --report-fd 3 -- echo hi"},
		{"--no-network cat --report /etc/victim", "", -1, "cat --report /etc/victim"},
		{"--memory 12XB --report=r.json --report-fd 7 -- a b", "r.json", 7, "a b"},
		{"--report r.json --tier nope -- a", "r.json", -1, "a"},
		{"---bad --report r.json true", "r.json", -1, "true"},
		{"--report-fd x --report r.json", "r.json", -1, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := newExecFlags(fs)
		argv := scanFlags(fs, strings.Fields(c.line))
		if f.out.report != c.report || f.out.reportFD != c.fd || strings.Join(argv, " ") != c.argv {
			t.Errorf("%q: report %q, fd %d, command %q; want %q, %d, %q", c.line, f.out.report, f.out.reportFD, argv, c.report, c.fd, c.argv)
		}
	}
}
