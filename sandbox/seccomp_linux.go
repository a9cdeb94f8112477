package sandbox

import (
	"fmt"
	"io"
	"os"
	"reflect"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"corral/policyengine"
)

var errnos = map[string]int16{"EPERM": int16(unix.EPERM), "ENOSYS": int16(unix.ENOSYS)}

// compileSeccomp builds the filter for rules: allow by default, the rules'
// errnos, and kill the whole process for a foreign architecture (the
// default kills one thread, which hangs a Go program).
func compileSeccomp(rules []SysRule) (*seccomp.ScmpFilter, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("creating seccomp filter: %w", err)
	}
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
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
var newSyscalls = map[string]int{"open_tree_attr": 467}

func addRule(f *seccomp.ScmpFilter, r SysRule) error {
	nr, err := seccomp.GetSyscallFromName(r.Syscall)
	if err != nil {
		// The kernel may have a syscall this libseccomp is too old to
		// name (libseccomp 2.5.4 and open_tree_attr, in the kernel since
		// 6.15): refuse it by number, since a program can call it so.
		n, ok := newSyscalls[r.Syscall]
		if !ok {
			return fmt.Errorf("seccomp rule %s: libseccomp does not know this syscall and corral has no number for it", r.Syscall)
		}
		nr = seccomp.ScmpSyscall(n)
	}
	errno, ok := errnos[r.Errno]
	if !ok {
		return fmt.Errorf("seccomp rule %s: unknown errno %q", r.Syscall, r.Errno)
	}
	action := seccomp.ActErrno.SetReturnCode(errno)
	if r.Arg == nil {
		return wrapRule(r, f.AddRule(nr, action))
	}
	switch r.Arg.Op {
	case "masked_eq":
		c, err := seccomp.MakeCondition(r.Arg.Index, seccomp.CompareMaskedEqual, r.Arg.Mask, r.Arg.Value)
		if err != nil {
			return wrapRule(r, err)
		}
		return wrapRule(r, f.AddRuleConditional(nr, action, []seccomp.ScmpCondition{c}))
	case "any_bit":
		// (arg & mask) != 0 is one rule per bit: (arg & bit) == bit.
		for bit := uint64(1); bit != 0; bit <<= 1 {
			if r.Arg.Mask&bit == 0 {
				continue
			}
			c, err := seccomp.MakeCondition(r.Arg.Index, seccomp.CompareMaskedEqual, bit, bit)
			if err != nil {
				return wrapRule(r, err)
			}
			if err := f.AddRuleConditional(nr, action, []seccomp.ScmpCondition{c}); err != nil {
				return wrapRule(r, err)
			}
		}
		return nil
	}
	return fmt.Errorf("seccomp rule %s: unknown op %q", r.Syscall, r.Arg.Op)
}

func wrapRule(r SysRule, err error) error {
	if err != nil {
		return fmt.Errorf("seccomp rule %s: %w", r.Syscall, err)
	}
	return nil
}

// Seccomp is one run's seccomp program, compiled in the background from
// the moment the run's permissions are known. It belongs to that run
// alone: concurrent runs in one process (the Go API) each prepare their
// own, so none can load another's program.
type Seccomp struct {
	rules []SysRule
	done  chan struct{} // closed once prog and err are set
	prog  []byte
	err   error
}

// Prepare starts compiling the seccomp filter that a plan for p will
// need, so the ~1 ms of libseccomp work overlaps loading skills and
// starting the init. Pass the result to the run in RunOptions.Seccomp;
// the run uses it if its plan's table is the one prepared.
func Prepare(p policyengine.Permissions) *Seccomp {
	s := &Seccomp{rules: seccompFor(p.ExecRestricted()), done: make(chan struct{})}
	if prog := builtBPF(s.rules); prog != nil {
		// Compiled into the binary: ready now.
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

// program returns the compiled filter for rules: the prepared one when it
// is for the same table, else the one compiled into the binary, else one
// compiled now. A nil s prepared nothing.
func (s *Seccomp) program(rules []SysRule) ([]byte, error) {
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
func compileBPF(rules []SysRule) ([]byte, error) {
	f, err := compileSeccomp(rules)
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
