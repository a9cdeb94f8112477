package sandbox

// SysRule is one seccomp rule: the syscall, the errno it returns, and an
// optional argument condition (the rule applies only when the argument,
// masked, equals Value; with Mask 0 it applies always).
type SysRule struct {
	Syscall string `json:"syscall"`
	Errno   string `json:"errno"` // "EPERM" or "ENOSYS"
	Arg     *Arg   `json:"arg,omitempty"`
	Why     string `json:"why"`
}

// Arg matches argument Index: (arg & Mask) == Value when Op is "masked_eq",
// or (arg & Mask) != 0 when Op is "any_bit". The mask always covers only
// the bits the kernel reads, so high garbage bits cannot dodge the rule
// (ioctl's request and socket's domain are 32-bit ints to the kernel).
type Arg struct {
	Index uint   `json:"index"`
	Op    string `json:"op"`
	Mask  uint64 `json:"mask"`
	Value uint64 `json:"value,omitempty"`
}

// Namespace flags refused on clone and unshare: the sandbox must not make
// new namespaces (a new user namespace would hand the command every
// capability inside it).
const nsFlags = 0x10000000 | // CLONE_NEWUSER
	0x00020000 | // CLONE_NEWNS
	0x20000000 | // CLONE_NEWPID
	0x40000000 | // CLONE_NEWNET
	0x08000000 | // CLONE_NEWIPC
	0x04000000 | // CLONE_NEWUTS
	0x02000000 | // CLONE_NEWCGROUP
	0x00000080 // CLONE_NEWTIME

const int32Mask = 0xffffffff

func always(name, errno, why string) SysRule { return SysRule{Syscall: name, Errno: errno, Why: why} }

func eperm(why string, names ...string) []SysRule {
	out := make([]SysRule, len(names))
	for i, n := range names {
		out[i] = always(n, "EPERM", why)
	}
	return out
}

func argEq(name string, index uint, value uint64, why string) SysRule {
	return SysRule{Syscall: name, Errno: "EPERM", Arg: &Arg{Index: index, Op: "masked_eq", Mask: int32Mask, Value: value}, Why: why}
}

// SeccompRules is the seccomp table: everything else is allowed, since
// Landlock, namespaces and dropped capabilities do the rest.
func SeccompRules() []SysRule {
	var r []SysRule
	r = append(r, eperm("mounts would rearrange the sandbox's view of files",
		"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr")...)
	r = append(r, eperm("debugging another process reads and changes its memory",
		"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp")...)
	r = append(r, eperm("kernel attack surface the command has no need for",
		"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"open_by_handle_at", "name_to_handle_at", "acct", "swapon", "swapoff", "reboot",
		"syslog", "quotactl", "quotactl_fd", "lookup_dcookie", "uselib", "vhangup",
		"iopl", "ioperm", "fanotify_init", "setns")...)
	r = append(r,
		SysRule{Syscall: "clone", Errno: "EPERM", Arg: &Arg{Index: 0, Op: "any_bit", Mask: nsFlags}, Why: "new namespaces"},
		SysRule{Syscall: "unshare", Errno: "EPERM", Arg: &Arg{Index: 0, Op: "any_bit", Mask: nsFlags}, Why: "new namespaces"},
		always("clone3", "ENOSYS", "clone3's flags are in memory seccomp cannot read; ENOSYS makes libc fall back to clone"),
		argEq("ioctl", 1, 0x5412, "TIOCSTI pushes input into the terminal"),
		argEq("ioctl", 1, 0x541C, "TIOCLINUX can push input into the console"),
		// The terminal the command inherits is the caller's: corral puts
		// its termios back after the run, and what it cannot put back
		// without undoing the user's own changes is refused.
		argEq("ioctl", 1, 0x5414, "TIOCSWINSZ would change the caller's terminal size"),
		argEq("ioctl", 1, 0x540C, "TIOCEXCL would keep everyone else from opening the caller's terminal"),
		argEq("ioctl", 1, 0x540A, "TCXONC could stop the caller's terminal's output"),
		argEq("ioctl", 1, 0x5423, "TIOCSETD would change the caller's terminal's line discipline"),
		argEq("socket", 0, 17, "AF_PACKET sees and forges raw frames"),
		argEq("socket", 0, 40, "AF_VSOCK reaches the hypervisor and host"),
		argEq("socket", 0, 15, "AF_KEY manages IPsec keys"),
		argEq("socket", 2, 262, "MPTCP is not covered by Landlock's TCP rules"),
		SysRule{Syscall: "socket", Errno: "EPERM", Arg: &Arg{Index: 1, Op: "masked_eq", Mask: 0xf, Value: 3}, Why: "SOCK_RAW sockets forge packets past Landlock's TCP rules"},
		SysRule{Syscall: "socket", Errno: "EPERM", Arg: &Arg{Index: 1, Op: "masked_eq", Mask: 0xf, Value: 10}, Why: "SOCK_PACKET sockets see and forge raw frames"},
		SysRule{Syscall: "memfd_create", Errno: "EPERM", Arg: &Arg{Index: 1, Op: "any_bit", Mask: 0x10}, Why: "MFD_EXEC memfds run a copy of any binary"},
	)
	return r
}

// seccompFor is the table for a plan. With an exec allowlist memfds are
// refused outright: one can hold a copy of any binary, and even a memfd
// sealed against exec can be mapped and run by the dynamic loader.
func seccompFor(restricted bool) []SysRule {
	rules := SeccompRules()
	if restricted {
		rules = append(rules, always("memfd_create", "EPERM", "with an exec allowlist, a memfd could hold and run any binary"))
	}
	return rules
}
