// Package usernotif supervises the connects, mode changes and (with
// fs.deny) the names made by a sandbox that runs in the host's namespaces
// (corral's namespace-free tier).
//
// The sandbox's init installs a seccomp filter that turns every connect(2)
// and every chmod, fchmod, fchmodat and fchmodat2 into a
// SECCOMP_RET_USER_NOTIF and hands the listener fd to corral. The
// Supervisor never lets the sandbox's own connect or chmod go ahead
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE would let the sandbox rewrite its
// arguments, or relink a path, after the check): corral makes each
// allowed connect and mode change itself, on what it checked.
//
// # Connects
//
// The Supervisor reads each connect's sockaddr out of the sandbox and
// allows exactly one destination: corral's egress proxy. It dials the
// proxy itself and puts its own connected socket in place of the
// sandbox's fd (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SETFD),
// so what the sandbox gets is connected to the proxy whatever its memory
// says by then.
//
// Refusals, as the sandbox's connect sees them:
//
//   - EACCES: an AF_INET or AF_INET6 address other than the proxy's (for
//     a proxy at 127.0.0.1:P only 127.0.0.1:P and ::ffff:127.0.0.1 port P
//     pass; ::1, 127.0.0.2, 0.0.0.0 and other ports do not).
//   - EPERM: anything else: other families (AF_UNIX, AF_UNSPEC, ...), a
//     sockaddr too short for its family, longer than 128 bytes, or that
//     cannot be read from the sandbox (fail closed), every connect when
//     there is no proxy, and any notified syscall that is neither the
//     native connect nor a native chmod.
//   - EBADF: an fd argument that is negative, wider than 32 bits or not
//     open in the sandbox.
//   - ECONNREFUSED: the proxy itself could not be dialed.
//
// A connect that is allowed returns 0 at once, also on a non-blocking
// socket (the connection is already made, so there is no EINPROGRESS).
//
// # Mode changes
//
// Landlock has no right for a file's mode: without the Supervisor the
// command could chmod any file its uid owns, granted or not. The
// Supervisor reads the path, opens (O_PATH) the file the call names as
// the sandbox would (from its cwd or dirfd through /proc, following a
// symlink unless AT_SYMLINK_NOFOLLOW), checks the file it opened and
// changes that file's mode through its own fd, so nothing the sandbox
// does meanwhile can redirect it. It answers with chmod's own result, or:
//
//   - EPERM: a mode with setuid, setgid or sticky bits; a file that is not
//     at or below one of Config.Writable (by its real path, so a symlink
//     or ".." out of them is refused), is deleted, or is owned by another
//     uid than corral's; a path that cannot be read (fail closed). EPERM
//     is chmod's "not the owner", which tools report sensibly.
//   - EOPNOTSUPP: a symlink itself (AT_SYMLINK_NOFOLLOW), as Linux says.
//   - EINVAL: fchmodat2 flags beyond AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH.
//   - EFAULT, ENAMETOOLONG, ENOENT, ENOTDIR, EBADF, ...: as the kernel
//     says for a bad path, a missing file or a bad fd (fchmod of an
//     O_PATH fd is EBADF).
//
// # Names (fs.deny)
//
// With Config.Create, the filter also notifies the calls that make a name
// (open and openat with O_CREAT, openat2, creat, mkdir, mknod, symlink,
// link, rename and their *at forms) and the caller has taken every make
// right out of the sandbox's Landlock rules. The Supervisor opens the
// folder of the new name as the sandbox would, checks it against the
// rules as they were and the new path against the deny globs, and makes
// the name itself, serving on a thread with the sandbox's uid, umask and
// no capability; a denied name gets EACCES. This is the one place it lets
// the sandbox's own syscall go ahead (CONTINUE): where that makes no name
// (an open of an existing file, a form it does not emulate), which the
// kernel then refuses the sandbox whatever its memory says by then
// (create_linux.go has the reasoning).
//
// Every refusal is logged, up to 64 lines per Supervisor.
//
// Reading the sockaddr or path uses process_vm_readv, which needs ptrace
// access (PTRACE_MODE_ATTACH) to the sandbox: corral must be its ancestor
// under Yama ptrace_scope 1, and under ptrace_scope 2 or 3, or if the
// sandbox is not dumpable, every connect and chmod by path is refused.
package usernotif
