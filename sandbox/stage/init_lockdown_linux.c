// The sandbox's init (PID 1, init_linux.c), locking down: the late records
// (cgroup files, seccomp program), the cgroup, lo and the proxy's
// listeners, privileges, Landlock and seccomp.

#include "init_parts.h"

// corral_read_late receives what corral sends on the socket once the plan is on
// its way: the seccomp program's length, the number of cgroup files to
// join, whether to hold, and which of descriptors 0-2 to replace (4-byte
// little-endian each), then the program, with the cgroup files, open for
// writing, attached (SCM_RIGHTS): first the run's cgroup, then its
// parent's, to leave it by (none when there is no cgroup); then the
// replacements of 0-2, in order, which are put in place here, before
// anything of the command runs (corral copies the output through pipes of
// its own, to count it: an init forked early has corral's streams). It is
// read after the mounts, so corral makes the cgroup and compiles the
// filter while they are placed.
void corral_read_late(struct plan *pl) {
	unsigned char hdr[16];
	struct iovec iov = {hdr, sizeof hdr};
	union {
		char buf[CMSG_SPACE((MAX_CGROUP_FDS + 3) * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do {
		n = recvmsg(CORRAL_FD_SOCKET, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		corral_fail("plan", errno, "receiving the cgroup and the seccomp filter");
	// Take the fds before anything else can fail, so none is left open.
	int fds[MAX_CGROUP_FDS + 3];
	size_t nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && nfds < MAX_CGROUP_FDS + 3; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n != (ssize_t)sizeof hdr)
		corral_fail("plan", 0, "corral sent no cgroup and seccomp filter");
	if (msg.msg_flags & MSG_CTRUNC)
		corral_fail("plan", 0, "more than %d cgroup files", MAX_CGROUP_FDS);
	uint32_t replace = corral_le32(hdr + 12);
	size_t nreplace = 0;
	for (int i = 0; i < 3; i++)
		nreplace += (replace >> i) & 1;
	if ((replace & ~7u) || nreplace > nfds || nfds - nreplace > MAX_CGROUP_FDS)
		corral_fail("plan", 0, "replacements of descriptors %#x with %zu files", replace, nfds);
	for (size_t i = 0; i < nfds - nreplace; i++)
		pl->cgroup_fds[pl->ncgroup_fds++] = fds[i];
	for (int i = 0, k = (int)(nfds - nreplace); i < 3; i++) {
		if (!((replace >> i) & 1))
			continue;
		// dup2 clears close-on-exec: the command inherits it.
		if (dup2(fds[k], i) < 0)
			corral_fail("plan", errno, "putting corral's pipe in place of descriptor %d", i);
		close(fds[k++]);
	}
	size_t len = corral_le32(hdr), njoin = corral_le32(hdr + 4);
	if (njoin > pl->ncgroup_fds)
		corral_fail("plan", 0, "%zu cgroup files to join, %zu received", njoin, pl->ncgroup_fds);
	pl->njoin = njoin;
	pl->hold = corral_le32(hdr + 8) != 0;
	if (len > MAX_BPF)
		corral_fail("plan", 0, "seccomp program of %zu bytes", len);
	pl->bpf = (const unsigned char *)corral_alloc_read(CORRAL_FD_SOCKET, len, "the seccomp filter");
	pl->bpf_len = len;
}

// corral_join_cgroup moves PID 1 into the run's cgroup before it starts anything,
// so everything it starts, the command above all, is capped. corral opened
// the files (its credentials are the ones the kernel checks), since the
// host's cgroup folders are out of view after pivot_root. On cgroup v1 the
// files are the `tasks` files: writing "0" there moves the calling thread
// (PID 1 has one) without the kernel's global threadgroup lock, whose
// first taking costs an RCU grace period (about 10 ms here); on v2 only
// cgroup.procs exists.
void corral_join_cgroup(struct plan *pl) {
	for (size_t i = 0; i < pl->njoin; i++) {
		if (write(pl->cgroup_fds[i], "0", 1) != 1)
			corral_fail("cgroup", errno, "joining the run's cgroup");
		close(pl->cgroup_fds[i]);
	}
}

// corral_leave_cgroup moves PID 1 back to the run cgroup's parent once the
// command (and so all it starts) is in the run's cgroup: when PID 1 has
// killed and reaped everything at the end, the cgroup is empty, and corral
// can remove it without waiting for PID 1 and the shim to finish exiting.
// It returns whether PID 1 left (corral sends v1's parents only).
int corral_leave_cgroup(struct plan *pl) {
	int left = pl->ncgroup_fds > pl->njoin;
	for (size_t i = pl->njoin; i < pl->ncgroup_fds; i++) {
		if (write(pl->cgroup_fds[i], "0", 1) != 1)
			left = 0;
		close(pl->cgroup_fds[i]);
	}
	pl->ncgroup_fds = pl->njoin = 0;
	return left;
}

// ---- network, privileges, Landlock, seccomp ----

// corral_loopback_up brings lo up: every sandbox has it, and nothing else.
void corral_loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		corral_fail("network", errno, "socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		corral_fail("network", errno, "SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		corral_fail("network", errno, "SIOCSIFFLAGS lo");
	close(fd);
}

// listen_on makes a listening TCP socket on addr inside the sandbox's
// network namespace; optional sockets return -1 where the address is
// missing (IPv6 disabled on the host).
static int listen_on(int family, const void *addr, socklen_t len, int optional) {
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && optional && errno == EAFNOSUPPORT)
		return -1;
	if (fd < 0)
		corral_fail("network", errno, "proxy socket");
	int one = 1;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, addr, len) < 0) {
		if (optional && errno == EADDRNOTAVAIL) {
			close(fd);
			return -1;
		}
		corral_fail("network", errno, "binding the proxy port");
	}
	if (listen(fd, 4096) < 0)
		corral_fail("network", errno, "listen");
	return fd;
}

// dns_socket makes the UDP socket of the sandbox's resolver at
// 127.0.0.1:port, which corral's fake DNS answers from outside.
static int dns_socket(int port) {
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		corral_fail("network", errno, "resolver socket");
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		corral_fail("network", errno, "binding the resolver port");
	return fd;
}

// corral_hand_over hands corral what it serves from outside the sandbox:
// with a proxy, listeners on 127.0.0.1 and [::1] at the proxy port (the
// sandbox's one way out is a socket corral holds, with no helper process;
// [::1] is skipped when the host has IPv6 disabled); with transparent
// egress, the resolver's socket; and with transparent egress or fs.deny's
// notified syscalls, the listener of a seccomp filter whose calls corral's
// supervisor answers (connects, the calls that make a name). The
// message's bytes name each fd: L a proxy listener, D the resolver, N the
// seccomp listener.
void corral_hand_over(struct plan *pl) {
	int fds[4], n = 0;
	char roles[4];
	if (pl->proxy_port) {
		int port = pl->proxy_port;
		struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		roles[n] = 'L';
		fds[n++] = listen_on(AF_INET, &v4, sizeof v4, 0);
		int fd6 = listen_on(AF_INET6, &v6, sizeof v6, 1);
		if (fd6 >= 0) {
			roles[n] = 'L';
			fds[n++] = fd6;
		}
	}
	int network = pl->proxy_port && pl->dns_port;
	if (pl->dns_port) {
		// With transparent egress, or alone without network: corral
		// answers every name at once with "no such name".
		roles[n] = 'D';
		fds[n++] = dns_socket(pl->dns_port);
	}
	if (network || pl->nnotify) {
		roles[n] = 'N';
		fds[n++] = corral_supervised_filter(pl, network);
	}
	if (n == 0)
		return;
	struct iovec iov = {roles, (size_t)n};
	union {
		char buf[CMSG_SPACE(sizeof fds)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	if (sendmsg(CORRAL_FD_SOCKET, &msg, MSG_NOSIGNAL) < 0)
		corral_fail("network", errno, "handing the proxy listeners and the supervisor's listener to corral");
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

// Securebits that make uid 0 inside the user namespace an ordinary user,
// locked so the command cannot undo them: SECBIT_NOROOT,
// SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED and
// SECBIT_NO_CAP_AMBIENT_RAISE, each with its lock.
#define CORRAL_SECUREBITS (0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80)

// corral_drop_privileges locks the securebits, empties the bounding and
// ambient sets and sets no_new_privs.
void corral_drop_privileges(void) {
	if (!corral_namespaces && geteuid() != 0) {
		// The landlock tier as an ordinary user: nothing to drop but
		// what capset empties (no_new_privs keeps exec from adding
		// any), and no CAP_SETPCAP to lock the securebits with.
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
			corral_fail("capabilities", errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			corral_fail("capabilities", errno, "prctl(PR_SET_NO_NEW_PRIVS)");
		return;
	}
	if (prctl(PR_SET_SECUREBITS, CORRAL_SECUREBITS, 0, 0, 0) < 0)
		corral_fail("capabilities", errno, "prctl(PR_SET_SECUREBITS)");
	for (int c = 0; c <= 63; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; // past the kernel's last capability
			corral_fail("capabilities", errno, "prctl(PR_CAPBSET_DROP, %d)", c);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		corral_fail("capabilities", errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		corral_fail("capabilities", errno, "prctl(PR_SET_NO_NEW_PRIVS)");
}

// corral_clear_capabilities empties the permitted, effective and
// inheritable sets.
void corral_clear_capabilities(void) {
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		corral_fail("capabilities", errno, "capset");
}

struct ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port {
	uint64_t allowed_access;
	uint64_t port;
};

#define LL_FILE_RIGHTS (1 | 2 | 4 | (1 << 14) | (1 << 15))

// corral_build_landlock makes the plan's Landlock ruleset (-1 when the plan has
// none: best effort was asked for, and the kernel lacks Landlock). The
// rules' paths are opened in the new root, so they name what the command
// will see: after the pivot (root -1), or, ahead of the plan, below root,
// the new root before the pivot, resolved as if it were / already
// (RESOLVE_IN_ROOT: absolute symlinks and ".." stay inside it). Nothing
// is restricted until corral_restrict_landlock.
int corral_build_landlock(struct plan *pl, int root) {
	if (pl->abi < 1)
		return -1;
	struct ll_ruleset_attr attr = {pl->handled_fs, pl->handled_net, pl->scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		corral_fail("landlock", errno, "landlock_create_ruleset");
	for (size_t i = 0; i < pl->nrules; i++) {
		struct rule *r = &pl->rules[i];
		int fd;
		if (root >= 0) {
			// Ahead, no symlink is followed either: the rules' paths
			// are real paths, so one on the way is a host change the
			// probe may never see (changed back), and the plan's
			// build decides (ELOOP, EXDEV: the ahead build stops).
			struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
			fd = (int)syscall(SYS_openat2, root, r->path, &how, sizeof how);
		} else {
			fd = open(r->path, O_PATH | O_CLOEXEC);
		}
		if (fd < 0 && errno == ENOENT)
			continue; // gone since the plan: granting nothing is narrower
		if (fd < 0)
			corral_fail("landlock", errno, "opening %s for a rule", r->path);
		struct stat st;
		uint64_t access = r->access;
		if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
			access &= LL_FILE_RIGHTS;
		if (access) {
			struct ll_path_beneath pb = {access, fd};
			if (syscall(SYS_landlock_add_rule, rs, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0) < 0)
				corral_fail("landlock", errno, "rule for %s", r->path);
		}
		close(fd);
	}
	for (size_t i = 0; i < pl->nport_rules; i++) {
		struct ll_net_port np = {pl->port_rules[i].access, pl->port_rules[i].port};
		if (syscall(SYS_landlock_add_rule, rs, 2 /* LANDLOCK_RULE_NET_PORT */, &np, 0) < 0)
			corral_fail("landlock", errno, "rule for TCP port %llu", (unsigned long long)np.port);
	}
	return rs;
}

// corral_restrict_landlock applies the ruleset to PID 1 (and so to the
// command). flags are the log flags corral asked for: the command is a
// new execve after this, whose denials Landlock logs only when told to
// (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON), and only corral reading the
// audit records asks, so a host's audit log gets no more than before.
void corral_restrict_landlock(int rs, unsigned flags) {
	if (rs < 0)
		return;
	if (syscall(SYS_landlock_restrict_self, rs, flags) < 0)
		corral_fail("landlock", errno, "landlock_restrict_self");
	close(rs);
}

// corral_load_seccomp loads the program corral compiled (read_late): last,
// since after it nothing may set anything up.
void corral_load_seccomp(struct plan *pl) {
	if (pl->bpf_len == 0 || pl->bpf_len % sizeof(struct sock_filter) != 0)
		corral_fail("seccomp", 0, "seccomp program of %zu bytes", pl->bpf_len);
	struct sock_filter *filter = malloc(pl->bpf_len);
	if (!filter)
		corral_fail("seccomp", ENOMEM, "allocating");
	memcpy(filter, pl->bpf, pl->bpf_len);
	struct sock_fprog prog = {(unsigned short)(pl->bpf_len / sizeof(struct sock_filter)), filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		corral_fail("seccomp", errno, "loading the filter");
}
