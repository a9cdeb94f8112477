// The landlock tier's part of the init: what takes the place of the
// namespaces on a host that refuses them (nsinit_linux.c chooses). The
// init then runs in the host's own namespaces: no new root (Landlock
// alone decides what the command reaches), no PID namespace (child
// subreapers and corral_kill_descendants end every process), no network
// namespace (corral_tier_filter: no socket but TCP, and connect only
// through corral's seccomp supervisor to its proxy).

#include "init_parts.h"

#include <linux/audit.h>
#include <linux/fs.h>
#include <stddef.h>

int corral_namespaces = 1;

// corral_children reads up to max pids of this process's children from
// /proc/self/task/TID/children (every thread of a single-threaded
// process: the init and the shim are). Returns how many, or -1.
static int corral_children_fd = -1;

// corral_keep_children opens the children file ahead: the init reads it
// after Landlock, which grants no /proc/self (a process's own /proc has
// no rule Landlock can express) but does not recheck an open file.
void corral_keep_children(void) {
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	corral_children_fd = open(path, O_RDONLY | O_CLOEXEC);
}

static int corral_children(pid_t *out, int max) {
	char path[64], buf[4096];
	int fd = corral_children_fd;
	if (fd < 0) {
		snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (fd != corral_children_fd)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	int count = 0;
	for (char *p = buf; *p && count < max;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		out[count++] = (pid_t)v;
		p = end;
		while (*p == ' ')
			p++;
	}
	return count;
}

// corral_kill_descendants kills and reaps every process below this one.
// It is a child subreaper: an orphan anywhere below is re-parented to it
// (or to a subreaper below it, which is itself below), never past it, so
// killing every child, reaping, and reading the list again until it is
// empty ends them all, however they forked. A pid read from the children
// file is an unreaped child, so it cannot have been reused; a child with
// SIGKILL pending can fork no more. Each pass reaps every child that is
// ready, not one: with thousands of children (a fork bomb without a pids
// cap) a pass per child took tens of seconds, long enough for a corral
// finishing a killed run's cleanup to give up on the shim. Without the
// children file (a kernel built without CONFIG_PROC_CHILDREN; Debian's and
// Ubuntu's have it) only what already exited is reaped: orphans may
// outlive the run, and nothing reports it (docs/tiers.md says so).
void corral_kill_descendants(void) {
	pid_t kids[512];
	for (;;) {
		int n = corral_children(kids, 512);
		if (n <= 0) {
			// None listed (or no list): reap what is left, if anything.
			pid_t w = waitpid(-1, NULL, WNOHANG);
			if (w > 0 || (w < 0 && errno == EINTR))
				continue;
			return;
		}
		for (int i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		// One at least (they are dying), then all that are ready.
		while (waitpid(-1, NULL, 0) < 0 && errno == EINTR)
			;
		for (;;) {
			pid_t w = waitpid(-1, NULL, WNOHANG);
			if (w > 0 || (w < 0 && errno == EINTR))
				continue;
			break;
		}
	}
}

// corral_scope_command puts the command, just before its execve, in a
// Landlock domain of its own below the init's, scoped for signals and
// abstract sockets: in the init's own domain it could SIGSTOP the init
// (no PID namespace protects it here), which then forwards nothing and
// kills nothing. -1 (errno set) on failure.
int corral_scope_command(const struct plan *pl) {
	if (corral_namespaces || !pl->scoped)
		return 0;
	// A layer always refuses moving a file to another folder (REFER)
	// unless it handles that right and grants it: it grants it
	// everywhere, leaving the decision to the init's layer.
	const uint64_t refer = 1ULL << 13;
	struct {
		uint64_t fs, net, scoped;
	} attr = {refer, 0, pl->scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		return -1;
	int root = open("/", O_PATH | O_CLOEXEC);
	struct {
		uint64_t allowed;
		int32_t fd;
	} __attribute__((packed)) rule = {refer, root};
	int r = root < 0 ? -1 : (int)syscall(SYS_landlock_add_rule, rs, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0);
	if (root >= 0)
		close(root);
	if (r == 0)
		r = (int)syscall(SYS_landlock_restrict_self, rs, 0);
	int err = errno;
	close(rs);
	errno = err;
	return r;
}

// ---- the landlock tier's seccomp filter ----

#if defined(__x86_64__)
#define CORRAL_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CORRAL_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the landlock tier's filter knows x86_64 and aarch64"
#endif

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

// A small assembler for classic BPF with forward jumps to labels.
enum { L_DENY, L_ALLOW, L_NOTIFY, L_SOCKET, L_SOCKETPAIR, L_IOCTL, L_INET, L_CONNECT, L_ARG3_FASTOPEN, L_ARG2_FASTOPEN, L_SECCOMP,
       L_CHOWN1, L_CHOWN1_GID, L_CHOWN2, L_CHOWN2_GID, L_PRETEND,
       L_NOTIFY_ARG0, L_NOTIFY_ARG5 = L_NOTIFY_ARG0 + 5, L_NLABELS };
#define MAX_NOTIFY 32
struct bpf_asm {
	struct sock_filter f[128 + 3 * MAX_NOTIFY];
	int n;
	int at[L_NLABELS];
	struct {
		int insn, t, f;
	} fix[96 + 2 * MAX_NOTIFY];
	int nfix;
};

static void op(struct bpf_asm *a, uint16_t code, uint32_t k) { a->f[a->n++] = (struct sock_filter)BPF_STMT(code, k); }

// jump adds a conditional jump to labels t and f (-1: the next insn).
static void jump(struct bpf_asm *a, uint16_t code, uint32_t k, int t, int f) {
	a->fix[a->nfix].insn = a->n;
	a->fix[a->nfix].t = t;
	a->fix[a->nfix].f = f;
	a->nfix++;
	a->f[a->n++] = (struct sock_filter)BPF_JUMP(code, k, 0, 0);
}

static void label(struct bpf_asm *a, int l) { a->at[l] = a->n; }

static uint8_t offset(int from, int to) {
	int d = to - from - 1;
	if (d < 0 || d > 255)
		corral_fail("seccomp", 0, "the landlock tier's filter has a jump of %d", d);
	return (uint8_t)d;
}

static void link_jumps(struct bpf_asm *a) {
	for (int i = 0; i < a->nfix; i++) {
		int at = a->fix[i].insn;
		if (a->fix[i].t >= 0)
			a->f[at].jt = offset(at, a->at[a->fix[i].t]);
		if (a->fix[i].f >= 0)
			a->f[at].jf = offset(at, a->at[a->fix[i].f]);
	}
}

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i)) // little-endian

// notify_jumps sends the plan's own notified syscalls (fs.deny: the
// calls that make a name, opens only with O_CREAT) to L_NOTIFY, or to the
// test of their argument (notify_args); each argument tested has one mask.
static void notify_jumps(struct bpf_asm *a, const struct plan *pl, uint64_t masks[6]) {
	memset(masks, 0, 6 * sizeof masks[0]);
	if (pl->nnotify > MAX_NOTIFY)
		corral_fail("seccomp", 0, "more than %d notified syscalls", MAX_NOTIFY);
	for (size_t i = 0; i < pl->nnotify; i++) {
		const struct notify_rule *r = &pl->notify[i];
		if (r->arg < -1 || r->arg > 5 || (r->arg >= 0 && (r->mask == 0 || r->mask > 0xffffffffu || (masks[r->arg] && masks[r->arg] != r->mask))))
			corral_fail("seccomp", 0, "notified syscall %d: bad argument %d or mask %#llx", r->nr, r->arg, (unsigned long long)r->mask);
		if (r->arg >= 0)
			masks[r->arg] = r->mask;
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, r->arg < 0 ? L_NOTIFY : L_NOTIFY_ARG0 + r->arg, -1);
	}
}

// notify_args places the argument tests notify_jumps jumps to.
static void notify_args(struct bpf_asm *a, const uint64_t masks[6]) {
	for (int i = 0; i < 6; i++) {
		if (!masks[i])
			continue;
		label(a, L_NOTIFY_ARG0 + i);
		op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(i));
		jump(a, BPF_JMP | BPF_JSET | BPF_K, (uint32_t)masks[i], L_NOTIFY, L_ALLOW);
	}
}

// chown_args places at label at the test of a chown call's owner (argument
// i) and group (i + 1): each the command's own or -1 (unchanged) goes to
// L_PRETEND, anything else to L_DENY. The kernel reads only their low 32
// bits.
static void chown_args(struct bpf_asm *a, int at, int gid_at, int i) {
	uint32_t ids[2] = {(uint32_t)geteuid(), (uint32_t)getegid()};
	int labels[2] = {at, gid_at}, next[2] = {gid_at, L_PRETEND};
	for (int k = 0; k < 2; k++) {
		label(a, labels[k]);
		op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(i + k));
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, ids[k], next[k], -1);
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, next[k], L_DENY);
	}
}

// corral_tier_program writes the filter: a mode change only through
// corral's supervisor, no change of owner or extended attributes; no
// socket but socketpair, or
// with network only TCP over IPv4 and IPv6, whose connect goes to corral's
// supervisor (SECCOMP_RET_USER_NOTIF); no bind or listen (a listening
// socket here would be on the host's own addresses); no TCP Fast Open
// (sendto and sendmsg with MSG_FASTOPEN connect too); no seccomp filter
// with a listener of its own (a newer filter's supervisor is asked first,
// and could let a connect through); nothing but the native ABI.
static int corral_tier_program(struct bpf_asm *a, int network, const struct plan *pl) {
	memset(a, 0, sizeof *a);
	op(a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, CORRAL_AUDIT_ARCH, -1, L_DENY);
	op(a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	jump(a, BPF_JMP | BPF_JGE | BPF_K, 0x40000000, L_DENY, -1); // x32
#endif
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, L_SOCKET, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, L_SOCKETPAIR, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, L_IOCTL, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, L_CONNECT, -1);
	// Landlock has no right for a file's mode, owner or extended
	// attributes: without these the command could chmod any file its
	// uid owns, granted or not (a setuid bit, a world-writable /etc file
	// when corral runs as root).
	// A mode change goes to corral's supervisor, which makes it itself
	// on a file it resolved inside the writable grants (git chmods its
	// lock files); owners and extended attributes (ACLs) cannot change.
	static const int modes[] = {
#ifdef __NR_chmod
		__NR_chmod,
#endif
		__NR_fchmod, __NR_fchmodat, 452 /* fchmodat2 */,
	};
	// A change of owner is refused, but one to the command's own uid
	// and gid (or -1, unchanged) is answered as done without being
	// made: tar -x, cp -a and rsync -a as root restore the owner of
	// each file they write, which is already the command's own, and fail
	// on EPERM. Nothing outside the grants changes (not even a group the
	// command's uid could set on its own files).
#ifdef __NR_chown
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_chown, L_CHOWN1, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_lchown, L_CHOWN1, -1);
#endif
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_fchown, L_CHOWN1, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_fchownat, L_CHOWN2, -1);
	static const int metadata[] = {
		__NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
		463 /* setxattrat */, 466 /* removexattrat */,
	};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)modes[i], L_NOTIFY, -1);
	for (size_t i = 0; i < sizeof metadata / sizeof metadata[0]; i++)
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)metadata[i], L_DENY, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_bind, L_DENY, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_listen, L_DENY, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, L_ARG3_FASTOPEN, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, L_ARG3_FASTOPEN, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, L_ARG2_FASTOPEN, -1);
	uint64_t masks[6];
	notify_jumps(a, pl, masks);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, L_SECCOMP, L_ALLOW);
	notify_args(a, masks);

	label(a, L_SOCKET);
	if (!network) {
		op(a, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	} else {
		op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0));
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, AF_INET, L_INET, -1);
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, L_INET, L_DENY);
		label(a, L_INET);
		op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1));
		op(a, BPF_ALU | BPF_AND | BPF_K, 0xf); // the type without SOCK_NONBLOCK, SOCK_CLOEXEC
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, -1, L_DENY);
		op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(2));
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, 0, L_ALLOW, -1);
		jump(a, BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, L_ALLOW, L_DENY);
	}
	// A datagram socketpair could still send to a host UNIX socket by
	// path (sendto with an address; Landlock before ABI 9 does not check
	// it): stream pairs only, whose sends take no address.
	label(a, L_SOCKETPAIR);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0));
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, -1, L_DENY);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1));
	op(a, BPF_ALU | BPF_AND | BPF_K, 0xf);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, L_ALLOW, L_DENY);
	// File attribute flags (chattr: nodump, noatime, sync, ...) are set
	// through an fd opened only for reading: not on the host's files.
	label(a, L_IOCTL);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1));
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, FS_IOC_SETFLAGS, L_DENY, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, FS_IOC32_SETFLAGS, L_DENY, -1);
	jump(a, BPF_JMP | BPF_JEQ | BPF_K, FS_IOC_FSSETXATTR, L_DENY, L_ALLOW);
	label(a, L_CONNECT);
	op(a, BPF_RET | BPF_K, network ? SECCOMP_RET_USER_NOTIF : (SECCOMP_RET_ERRNO | EPERM));
	label(a, L_ARG3_FASTOPEN);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(3));
	jump(a, BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, L_DENY, L_ALLOW);
	label(a, L_ARG2_FASTOPEN);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(2));
	jump(a, BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, L_DENY, L_ALLOW);
	// chown(path, uid, gid), fchown(fd, uid, gid): arguments 1 and 2;
	// fchownat(dirfd, path, uid, gid, flags): 2 and 3.
	chown_args(a, L_CHOWN1, L_CHOWN1_GID, 1);
	chown_args(a, L_CHOWN2, L_CHOWN2_GID, 2);
	label(a, L_PRETEND);
	op(a, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0);
	label(a, L_SECCOMP);
	op(a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1));
	jump(a, BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, L_DENY, L_ALLOW);
	label(a, L_DENY);
	op(a, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	label(a, L_ALLOW);
	op(a, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	label(a, L_NOTIFY);
	op(a, BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
	link_jumps(a);
	return a->n;
}

// corral_send_fd hands fd to corral over the socket (SCM_RIGHTS).
static int corral_send_fd(int fd) {
	char byte = 'N';
	struct iovec iov = {&byte, 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(CORRAL_FD_SOCKET, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

// corral_tier_filter loads the landlock tier's filter; its listener goes
// to corral, whose supervisor (sandbox/usernotif) makes the allowed mode
// changes and, with network (the plan has a proxy), connects each allowed
// socket to the proxy itself.
void corral_tier_filter(struct plan *pl) {
	struct bpf_asm a;
	int network = pl->proxy_port != 0;
	int n = corral_tier_program(&a, network, pl);
	struct sock_fprog prog = {(unsigned short)n, a.f};
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		corral_fail("seccomp", errno, "loading the landlock tier's filter");
	if (corral_send_fd((int)fd) < 0)
		corral_fail("network", errno, "handing the connect supervisor's fd to corral");
	close((int)fd);
}

// corral_supervised_filter loads the namespaces tier's filter with a
// listener, for corral's supervisor. With transparent egress (network)
// every native connect goes to the supervisor, which makes the ones aimed
// outside the sandbox land in the proxy and lets the rest go ahead; TCP
// Fast Open (sendto, sendmsg and sendmmsg with MSG_FASTOPEN), which
// connects without connect, is refused. With fs.deny the plan's notified
// syscalls (the calls that make a name) go to the supervisor too, which
// makes each allowed name itself. Anything else is left to the main
// filter, loaded later, which also decides on other ABIs. It returns the
// listener.
int corral_supervised_filter(const struct plan *pl, int network) {
	struct bpf_asm a;
	memset(&a, 0, sizeof a);
	op(&a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	jump(&a, BPF_JMP | BPF_JEQ | BPF_K, CORRAL_AUDIT_ARCH, -1, L_ALLOW);
	op(&a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	if (network) {
		jump(&a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, L_ARG3_FASTOPEN, -1);
		jump(&a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, L_ARG3_FASTOPEN, -1);
		jump(&a, BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, L_ARG2_FASTOPEN, -1);
		jump(&a, BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, L_NOTIFY, -1);
	}
	uint64_t masks[6];
	notify_jumps(&a, pl, masks);
	op(&a, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	notify_args(&a, masks);
	label(&a, L_ARG3_FASTOPEN);
	op(&a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(3));
	jump(&a, BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, L_DENY, L_ALLOW);
	label(&a, L_ARG2_FASTOPEN);
	op(&a, BPF_LD | BPF_W | BPF_ABS, ARG_LO(2));
	jump(&a, BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, L_DENY, L_ALLOW);
	label(&a, L_DENY);
	op(&a, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	label(&a, L_ALLOW);
	op(&a, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	label(&a, L_NOTIFY);
	op(&a, BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
	link_jumps(&a);
	struct sock_fprog prog = {(unsigned short)a.n, a.f};
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		corral_fail("seccomp", errno, "loading the filter of corral's supervisor (transparent egress, fs.deny)");
	return (int)fd;
}
