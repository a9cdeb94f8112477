package seccomp

import "golang.org/x/sys/unix"

// nsFlags are the clone and unshare flags that make new namespaces: the
// sandbox must not make any (a new user namespace would hand the command
// every capability inside it).
const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// int32Mask covers an argument the kernel reads as a 32-bit int.
const int32Mask = 0xffffffff

// sockTypeMask is the part of socket's type argument that is the type;
// the bits above are SOCK_NONBLOCK and SOCK_CLOEXEC.
const sockTypeMask = 0xf

// Rules is the table for a plan: Table, and with an exec allowlist
// (restricted) no memfds at all, since one can hold a copy of any binary,
// and even a memfd sealed against exec can be mapped and run by the
// dynamic loader.
func Rules(restricted bool) []Rule {
	rules := Table()
	if restricted {
		rules = append(rules, always("memfd_create", EPERM, "with an exec allowlist, a memfd could hold and run any binary"))
	}
	return rules
}

// Table is the seccomp table every sandbox gets.
func Table() []Rule {
	var r []Rule
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
		anyBit("clone", 0, nsFlags, "new namespaces"),
		anyBit("unshare", 0, nsFlags, "new namespaces"),
		always("clone3", ENOSYS, "clone3's flags are in memory seccomp cannot read; ENOSYS makes libc fall back to clone"),
		argEq("ioctl", 1, unix.TIOCSTI, "TIOCSTI pushes input into the terminal"),
		argEq("ioctl", 1, unix.TIOCLINUX, "TIOCLINUX can push input into the console"),
		// The terminal the command inherits is the caller's: corral puts
		// its termios back after the run, and what it cannot put back
		// without undoing the user's own changes is refused.
		argEq("ioctl", 1, unix.TIOCSWINSZ, "TIOCSWINSZ would change the caller's terminal size"),
		argEq("ioctl", 1, unix.TIOCEXCL, "TIOCEXCL would keep everyone else from opening the caller's terminal"),
		argEq("ioctl", 1, unix.TCXONC, "TCXONC could stop the caller's terminal's output"),
		argEq("ioctl", 1, unix.TIOCSETD, "TIOCSETD would change the caller's terminal's line discipline"),
		argEq("socket", 0, unix.AF_PACKET, "AF_PACKET sees and forges raw frames"),
		argEq("socket", 0, unix.AF_VSOCK, "AF_VSOCK reaches the hypervisor and host"),
		argEq("socket", 0, unix.AF_KEY, "AF_KEY manages IPsec keys"),
		argEq("socket", 2, unix.IPPROTO_MPTCP, "MPTCP is not covered by Landlock's TCP rules"),
		Rule{Syscall: "socket", Errno: EPERM, Arg: &Arg{Index: 1, Op: MaskedEq, Mask: sockTypeMask, Value: unix.SOCK_RAW}, Why: "SOCK_RAW sockets forge packets past Landlock's TCP rules"},
		Rule{Syscall: "socket", Errno: EPERM, Arg: &Arg{Index: 1, Op: MaskedEq, Mask: sockTypeMask, Value: unix.SOCK_PACKET}, Why: "SOCK_PACKET sockets see and forge raw frames"},
		anyBit("memfd_create", 1, unix.MFD_EXEC, "MFD_EXEC memfds run a copy of any binary"),
	)
	r = append(r, specialModes()...)
	r = append(r, eopnotsupp("extended attributes hold ACLs that open files to other users and file capabilities; the table cannot tell those names from others",
		"setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat")...)
	return r
}

// setIDBits are the mode bits that make a program run as its file's
// owner or group. The sandbox's files stay on the host after the run,
// where anyone who can reach one would run it with the ids of corral's
// user (as root: euid 0), so no call may set them. The sticky bit gives
// no privilege and is left alone.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// createFlags are the open flags with which the mode argument counts: a
// new file (O_CREAT) or an unnamed one that linkat can name later
// (O_TMPFILE without O_DIRECTORY, which it includes).
const createFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY

// specialModes refuse, with EPERM, every call that can give a file its
// setuid or setgid bit: the chmod family, and the calls that make a file
// with a mode (open and openat with createFlags, creat, mknod). mkdir
// cannot: the kernel keeps only the permission bits and the sticky bit of
// its mode (a folder's setgid comes from its parent alone). openat2's
// mode sits in a struct seccomp cannot read: ENOSYS, which every caller
// of it handles (Linux before 5.6 has none), so libraries fall back to
// openat, whose mode the rule reads.
func specialModes() []Rule {
	const why = "a setuid or setgid file left in a writable folder would run with corral's user's ids outside the sandbox"
	mode := func(name string, index uint) Rule {
		return Rule{Syscall: name, Errno: EPERM, Arg: &Arg{Index: index, Op: AnyBit, Mask: setIDBits}, Why: why}
	}
	creating := func(name string, flags, index uint) Rule {
		r := mode(name, index)
		r.When = &Arg{Index: flags, Op: AnyBit, Mask: createFlags}
		return r
	}
	return []Rule{
		mode("chmod", 1), mode("fchmod", 1), mode("fchmodat", 2), mode("fchmodat2", 2),
		creating("open", 1, 2), creating("openat", 2, 3), mode("creat", 1),
		mode("mknod", 1), mode("mknodat", 2),
		always("openat2", ENOSYS, "its mode and flags are in a struct seccomp cannot read; ENOSYS makes callers fall back to openat"),
	}
}

func eopnotsupp(why string, names ...string) []Rule {
	out := make([]Rule, len(names))
	for i, n := range names {
		out[i] = always(n, EOPNOTSUPP, why)
	}
	return out
}

func always(name string, errno Errno, why string) Rule {
	return Rule{Syscall: name, Errno: errno, Why: why}
}

func eperm(why string, names ...string) []Rule {
	out := make([]Rule, len(names))
	for i, n := range names {
		out[i] = always(n, EPERM, why)
	}
	return out
}

// argEq refuses name when its 32-bit argument index is value.
func argEq(name string, index uint, value uint64, why string) Rule {
	return Rule{Syscall: name, Errno: EPERM, Arg: &Arg{Index: index, Op: MaskedEq, Mask: int32Mask, Value: value}, Why: why}
}

// anyBit refuses name when its argument index has any bit of mask set.
func anyBit(name string, index uint, mask uint64, why string) Rule {
	return Rule{Syscall: name, Errno: EPERM, Arg: &Arg{Index: index, Op: AnyBit, Mask: mask}, Why: why}
}
