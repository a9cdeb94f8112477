package seccomp

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// compileSeccomp builds the filter for rules: allow by default, the rules'
// errnos, and kill the whole process for a foreign architecture (the
// default kills one thread, which hangs a Go program).
func compileFilter(rules []Rule) (*libseccomp.ScmpFilter, error) {
	f, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("creating seccomp filter: %w", err)
	}
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("setting seccomp bad-arch action: %w", err)
	}
	for _, r := range rules {
		if err := addRule(f, r); err != nil {
			f.Release()
			return nil, err
		}
	}
	return f, nil
}

// newSyscalls are numbers of syscalls newer than some libseccomp
// releases. Syscalls added since Linux 5.1 have the same number on every
// architecture corral builds for (x86_64, arm64).
var newSyscalls = map[string]int{"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466, "open_tree_attr": 467}

func addRule(f *libseccomp.ScmpFilter, r Rule) error {
	nr, err := libseccomp.GetSyscallFromName(r.Syscall)
	if err != nil {
		// The kernel may have a syscall this libseccomp is too old to
		// name (libseccomp 2.5.4 and open_tree_attr, in the kernel since
		// 6.15): refuse it by number, since a program can call it so.
		n, ok := newSyscalls[r.Syscall]
		if !ok {
			return fmt.Errorf("seccomp rule %s: libseccomp does not know this syscall and corral has no number for it", r.Syscall)
		}
		nr = libseccomp.ScmpSyscall(n)
	}
	if _, ok := errnoNames[r.Errno]; !ok {
		return fmt.Errorf("seccomp rule %s: errno %d is not one the table uses", r.Syscall, r.Errno)
	}
	action := libseccomp.ActErrno.SetReturnCode(int16(r.Errno))
	if r.Arg == nil {
		if r.When != nil {
			return fmt.Errorf("seccomp rule %s: a second condition without a first", r.Syscall)
		}
		return wrapRule(r, f.AddRule(nr, action))
	}
	// Each condition is one or more alternatives (AnyBit: one per bit);
	// the rule is one libseccomp rule per pair.
	first, err := alternatives(r, r.Arg)
	if err != nil {
		return err
	}
	second := [][]libseccomp.ScmpCondition{nil}
	if r.When != nil {
		if second, err = alternatives(r, r.When); err != nil {
			return err
		}
	}
	for _, a := range first {
		for _, b := range second {
			if err := f.AddRuleConditional(nr, action, append(slices.Clone(a), b...)); err != nil {
				return wrapRule(r, err)
			}
		}
	}
	return nil
}

// alternatives are the libseccomp conditions of which any one makes the
// condition a hold: itself for MaskedEq; for AnyBit, (arg & mask) != 0,
// one per bit: (arg & bit) == bit.
func alternatives(r Rule, a *Arg) ([][]libseccomp.ScmpCondition, error) {
	var out [][]libseccomp.ScmpCondition
	add := func(mask, value uint64) error {
		c, err := libseccomp.MakeCondition(a.Index, libseccomp.CompareMaskedEqual, mask, value)
		if err != nil {
			return wrapRule(r, err)
		}
		out = append(out, []libseccomp.ScmpCondition{c})
		return nil
	}
	switch a.Op {
	case MaskedEq:
		return out, add(a.Mask, a.Value)
	case AnyBit:
		for bit := uint64(1); bit != 0; bit <<= 1 {
			if a.Mask&bit != 0 {
				if err := add(bit, bit); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("seccomp rule %s: unknown op %d", r.Syscall, a.Op)
}

func wrapRule(r Rule, err error) error {
	if err != nil {
		return fmt.Errorf("seccomp rule %s: %w", r.Syscall, err)
	}
	return nil
}

// Prepared is one run's seccomp program, compiled in the background from
// the moment the run's permissions are known. It belongs to that run
// alone: concurrent runs in one process (the Go API) each prepare their
// own, so none can load another's program.
type Prepared struct {
	rules []Rule
	done  chan struct{} // closed once prog and err are set
	prog  []byte
	err   error
}

// Prepare starts compiling the program for rules, so the ~1 ms of
// libseccomp work overlaps loading skills and starting the init (a table
// compiled into the binary is ready at once). The run asks Program for
// its plan's table.
func Prepare(rules []Rule) *Prepared {
	s := &Prepared{rules: rules, done: make(chan struct{})}
	if prog := builtBPF(s.rules); prog != nil {
		s.prog = prog
		close(s.done)
		return s
	}
	go func() {
		s.prog, s.err = compileBPF(s.rules)
		close(s.done)
	}()
	return s
}

// Program returns the compiled filter for rules: the prepared one when it
// is for the same table, else the one compiled into the binary, else one
// compiled now. A nil s prepared nothing.
func (s *Prepared) Program(rules []Rule) ([]byte, error) {
	if s != nil && reflect.DeepEqual(s.rules, rules) {
		<-s.done
		return s.prog, s.err
	}
	if prog := builtBPF(rules); prog != nil {
		return prog, nil
	}
	return compileBPF(rules)
}

// compileBPF compiles rules to a classic BPF program (struct sock_filter
// array) that the init stage (C, init_linux.c) loads with one prctl, so
// the init needs neither libseccomp nor its ~1 ms of filter generation.
func compileBPF(rules []Rule) ([]byte, error) {
	f, err := compileFilter(rules)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	done := make(chan []byte)
	go func() {
		data, _ := io.ReadAll(r)
		done <- data
	}()
	err = f.ExportBPF(w)
	w.Close()
	prog := <-done
	if err != nil {
		return nil, fmt.Errorf("exporting seccomp filter: %w", err)
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		return nil, fmt.Errorf("seccomp filter export is %d bytes, not a whole number of instructions", len(prog))
	}
	return prog, nil
}
