package sandbox

import (
	"fmt"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
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

func addRule(f *seccomp.ScmpFilter, r SysRule) error {
	nr, err := seccomp.GetSyscallFromName(r.Syscall)
	if err != nil {
		// A syscall this libseccomp does not know cannot be called by
		// name on this architecture either; nothing to refuse.
		return nil
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
