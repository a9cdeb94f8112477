// Package usernotif supervises the connects of a sandbox that runs in the
// host's network namespace (corral's namespace-free tier).
//
// The sandbox's init installs a seccomp filter that turns every connect(2)
// into a SECCOMP_RET_USER_NOTIF and hands the listener fd to corral. The
// Supervisor reads each connect's sockaddr out of the sandbox and allows
// exactly one destination: corral's egress proxy. It never lets the
// sandbox's own connect go ahead (SECCOMP_USER_NOTIF_FLAG_CONTINUE would
// let the sandbox rewrite the sockaddr after the check): it dials the
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
//     cannot be read from the sandbox (fail closed), and any notified
//     syscall that is not the native connect.
//   - EBADF: an fd argument that is negative, wider than 32 bits or not
//     open in the sandbox.
//   - ECONNREFUSED: the proxy itself could not be dialed.
//
// A connect that is allowed returns 0 at once, also on a non-blocking
// socket (the connection is already made, so there is no EINPROGRESS).
//
// Reading the sockaddr uses process_vm_readv, which needs ptrace access
// (PTRACE_MODE_ATTACH) to the sandbox: corral must be its ancestor under
// Yama ptrace_scope 1, and under ptrace_scope 2 or 3, or if the sandbox
// is not dumpable, every connect is refused.
package usernotif
