// Package seccomp holds the sandbox's seccomp table and turns it into the
// classic BPF program the sandbox's init loads last, before execve.
//
// The table refuses (with an errno, never by killing) what the other
// protections leave open: new namespaces and mounts, debugging other
// processes, kernel attack surface such as bpf and io_uring, terminal
// injection, raw and packet sockets, MPTCP (which Landlock's TCP rules do
// not cover) and executable memfds. Everything else is allowed: Landlock,
// the namespaces and the dropped capabilities do the rest.
//
// The table is data with types (Rule, Arg, Op, Errno) built on the
// kernel's constants from golang.org/x/sys/unix; libseccomp compiles it,
// and the two programs corral's plans use are compiled into the binary
// for x86_64 and arm64 (builtin_linux.go). The tests run every rule's program
// through a BPF interpreter for refused and allowed argument values.
package seccomp

import (
	"fmt"
	"syscall"
)

// Rule is one seccomp rule: the syscall, the errno it returns, and up to
// two argument conditions that must both hold (without Arg the rule
// applies to every call; When is a second condition, such as open's
// O_CREAT beside its mode). The JSON form is the plan's (`corral explain
// --json`).
type Rule struct {
	Syscall string `json:"syscall"`
	Errno   Errno  `json:"errno"`
	Arg     *Arg   `json:"arg,omitempty"`
	When    *Arg   `json:"when,omitempty"`
	Why     string `json:"why"`
}

// Holds reports whether the rule's conditions hold for args: what the
// compiled program must answer, for tests and for explain.
func (r Rule) Holds(args [6]uint64) bool {
	return r.Arg.holds(args) && r.When.holds(args)
}

// holds reports whether the condition holds for args (a nil one always
// does).
func (a *Arg) holds(args [6]uint64) bool {
	if a == nil {
		return true
	}
	v := args[a.Index] & a.Mask
	switch a.Op {
	case MaskedEq:
		return v == a.Value
	case AnyBit:
		return v != 0
	}
	return false
}

// Arg is a condition on argument Index. The mask always covers only the
// bits the kernel reads, so high garbage bits cannot dodge the rule
// (ioctl's request and socket's domain are 32-bit ints to the kernel).
type Arg struct {
	Index uint   `json:"index"`
	Op    Op     `json:"op"`
	Mask  uint64 `json:"mask"`
	Value uint64 `json:"value,omitempty"`
}

// Op is how an Arg compares.
type Op uint8

const (
	// MaskedEq matches when (arg & Mask) == Value.
	MaskedEq Op = iota + 1
	// AnyBit matches when (arg & Mask) != 0: any of the bits is set.
	AnyBit
)

var opNames = map[Op]string{MaskedEq: "masked_eq", AnyBit: "any_bit"}

// String names the op: "masked_eq" or "any_bit".
func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// MarshalText names the op as the plan's JSON always has.
func (o Op) MarshalText() ([]byte, error) {
	if n, ok := opNames[o]; ok {
		return []byte(n), nil
	}
	return nil, fmt.Errorf("seccomp: unknown op %d", o)
}

// UnmarshalText reads an op's name.
func (o *Op) UnmarshalText(b []byte) error {
	for op, n := range opNames {
		if n == string(b) {
			*o = op
			return nil
		}
	}
	return fmt.Errorf("seccomp: unknown op %q", b)
}

// Errno is what a refused call returns.
type Errno syscall.Errno

const (
	// EPERM: the call is not permitted; programs report it and go on.
	EPERM = Errno(syscall.EPERM)
	// ENOSYS: the call does not exist; libc falls back to an older one.
	ENOSYS = Errno(syscall.ENOSYS)
	// EOPNOTSUPP: the file system does not support it; copying tools
	// (cp -a, tar, rsync) go on without extended attributes, quietly.
	EOPNOTSUPP = Errno(syscall.EOPNOTSUPP)
)

var errnoNames = map[Errno]string{EPERM: "EPERM", ENOSYS: "ENOSYS", EOPNOTSUPP: "EOPNOTSUPP"}

// String names the errno: "EPERM".
func (e Errno) String() string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return fmt.Sprintf("errno(%d)", uint(e))
}

// MarshalText names the errno ("EPERM").
func (e Errno) MarshalText() ([]byte, error) {
	if n, ok := errnoNames[e]; ok {
		return []byte(n), nil
	}
	return nil, fmt.Errorf("seccomp: errno %d is not one the table uses", e)
}

// UnmarshalText reads an errno's name.
func (e *Errno) UnmarshalText(b []byte) error {
	for v, n := range errnoNames {
		if n == string(b) {
			*e = v
			return nil
		}
	}
	return fmt.Errorf("seccomp: unknown errno %q", b)
}
