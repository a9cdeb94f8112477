package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"corral.dev/corral"
	"corral.dev/corral/printable"
)

// exec's own output beside the command's: the report (--report FILE,
// --report -, --report-fd N; docs/report.md) and corral's messages
// (stderr, or --log-fd N; --quiet). An orchestrator that passes
// --report-fd and --log-fd gets the command's stdout and stderr with
// nothing of corral's in them.

// outputFlags say where exec's report and messages go.
type outputFlags struct {
	report   string // --report FILE; "-" is stdout
	reportFD int    // --report-fd N; -1: none
	logFD    int    // --log-fd N; -1: stderr
	quiet    bool
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	o.reportFD, o.logFD = -1, -1
	fs.StringVar(&o.report, "report", "", "write a JSON report of the run (docs/report.md) to `file` (outside the work dir and the write grants; not a symlink); - writes it to stdout, after the command's own output")
	fs.Func("report-fd", "write the JSON report to descriptor `N` (3 or more, open for writing), apart from the command's output", fdFlag(&o.reportFD))
	fs.Func("log-fd", "write corral's own messages (warnings, notices, why it stopped the run) to descriptor `N` (3 or more) instead of stderr, which is then the command's alone", fdFlag(&o.logFD))
	fs.BoolVar(&o.quiet, "quiet", false, "write none of corral's messages but the one line saying why it stopped the run (exit 125, 126, 127); the report has them all")
}

// fdFlag parses a descriptor number; which ones corral takes is checked
// when it opens them, so a bad one is one line, not flag's usage.
func fdFlag(to *int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a descriptor number", s)
		}
		*to = n
		return nil
	}
}

// reporting reports whether a report was asked for.
func (o *outputFlags) reporting() bool { return o.report != "" || o.reportFD >= 0 }

// openReports opens every report asked for. It returns those that opened
// and the first error: a run with a refused report writes to the others.
func (o *outputFlags) openReports(roots []string) ([]*outFile, error) {
	var files []*outFile
	var first error
	add := func(f *outFile, err error) {
		if err != nil {
			if first == nil {
				first = err
			}
			return
		}
		files = append(files, f)
	}
	if o.report != "" {
		name := o.report
		if name == "-" {
			name = "/dev/stdout"
		}
		add(openOutput("--report", name, roots, false))
	}
	if o.reportFD >= 0 {
		if err := callerFD("--report-fd", o.reportFD); err != nil {
			add(nil, err)
		} else {
			add(openOutput("--report-fd", "/dev/fd/"+strconv.Itoa(o.reportFD), nil, false))
		}
	}
	return files, first
}

// callerFD checks a descriptor the caller passed for --report-fd or
// --log-fd: 3 or more (0-2 are the command's own), inherited, open for
// writing.
// It is marked close-on-exec: corral writes through a copy, and nothing
// it starts may inherit it.
func callerFD(flag string, n int) error {
	if n < 3 {
		hint := ""
		if flag == "--report-fd" && n == 1 {
			hint = "; --report - writes the report to stdout"
		}
		return fmt.Errorf("%s %d: descriptors 0, 1 and 2 are the command's stdin, stdout and stderr: pass 3 or more, as in %s 3 3>FILE%s", flag, n, flag, hint)
	}
	// What the caller passed came through execve, so it is not
	// close-on-exec; everything corral opens itself (the constructor's
	// pipes to the init, Go's poller) is.
	fdFlags, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	if err == nil && fdFlags&unix.FD_CLOEXEC != 0 {
		err = errors.New("not one corral inherited")
	}
	if err != nil {
		return fmt.Errorf("%s %d: not an open descriptor (%v): open it for corral, as in %s %d %d>FILE", flag, n, err, flag, n, n)
	}
	fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("%s %d: %v", flag, n, err)
	}
	if fl&unix.O_ACCMODE == unix.O_RDONLY {
		return fmt.Errorf("%s %d: open for reading only", flag, n)
	}
	if _, err := unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fmt.Errorf("%s %d: %v", flag, n, err)
	}
	return nil
}

// messages are corral's own lines, on stderr or --log-fd: warnings and
// notices (note), which --quiet drops, and the line saying why corral
// stopped the run (exit), which it keeps. Every line is escaped
// (printable.Text).
type messages struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
}

// messages opens the message stream: stderr, or --log-fd's descriptor.
// With an error, the stream is stderr.
func (o *outputFlags) messages(stderr io.Writer) (*messages, error) {
	m := &messages{w: stderr, quiet: o.quiet}
	if o.logFD < 0 {
		return m, nil
	}
	if o.logFD == o.reportFD {
		return m, failed(fmt.Errorf("--log-fd and --report-fd are both %d: the report is a JSON document of its own, give corral's messages another descriptor", o.logFD))
	}
	if err := callerFD("--log-fd", o.logFD); err != nil {
		return m, failed(err)
	}
	fd, err := unix.FcntlInt(uintptr(o.logFD), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return m, failed(fmt.Errorf("--log-fd %d: %v", o.logFD, err))
	}
	m.w = os.NewFile(uintptr(fd), "--log-fd")
	return m, nil
}

func (m *messages) write(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.w.(*os.File); ok {
		writeBlocking(f, []byte(printable.Text(s)))
		return
	}
	io.WriteString(m.w, printable.Text(s))
}

// note writes a warning or a notice (dropped with --quiet).
func (m *messages) note(s string) {
	if !m.quiet {
		m.write(s)
	}
}

// trace writes a CORRAL_TRACE step, which the caller asked for.
func (m *messages) trace(s string) { m.write(s) }

// exit says why corral stopped the run, if it did, and returns err with
// its message said: main then only exits with its code.
func (m *messages) exit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{Code: corral.ExitFailed, Err: err}
	}
	if ee.Err != nil {
		m.write("corral exec: " + ee.Err.Error() + "\n")
	}
	return &exitError{Code: ee.Code}
}

// scanFlags reads args as fs.Parse would but goes on past what it
// refuses, setting every flag it can, and returns the arguments after the
// flags: the command. Like fs.Parse it stops at the first argument that
// is no flag: an unknown flag never takes the next argument as its value,
// since that may be the command, and the command's own arguments
// (`cat --report FILE`) must never be read as corral's.
func scanFlags(fs *flag.FlagSet, args []string) []string {
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' {
			return args
		}
		args = args[1:]
		if a == "--" {
			return args
		}
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			continue
		}
		name, value, hasValue := strings.Cut(name, "=")
		fl := fs.Lookup(name)
		if fl == nil {
			continue
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if len(args) == 0 {
				return nil
			}
			value, args = args[0], args[1:]
		}
		fs.Set(name, value)
	}
	return args
}
