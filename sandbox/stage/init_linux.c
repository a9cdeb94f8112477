// The sandbox's init stage, PID 1 of its namespaces (see nsinit_linux.c,
// which calls corral_init_main in the new PID namespace).
//
// It is C, not Go, because it runs on every tool call: a Go init spent
// about 6 ms starting its runtime and decoding a JSON plan, this one well
// under one. It does, in order: read the plan (CORRAL_FD_PLAN, protocol.h), build a new root
// holding only the plan's mounts and pivot into it, bring lo up, drop every
// capability and lock the securebits, set no_new_privs, apply Landlock,
// load the seccomp filter the parent compiled (last), then fork the command
// in its own session, forward signals to it, reap every orphan, and report
// on CORRAL_FD_STATUS (the handshake table is in handshake.go).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sched.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init_linux.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define STAGING "/tmp"
#define MAX_PLAN (16 << 20)
#define MAX_BPF (1 << 20)
#define MAX_CGROUP_FDS 8

// ---- reporting ----

static int trace;
static int legacy_mounts; // bind, then set flags by path (as on kernels without open_tree)
static unsigned long mount_pause_us; // between opening the bind sources and placing them (tests)
static struct timespec last;

// wall_us is the wall clock's microseconds modulo 10 s, as corral's own
// trace prints them ("at"), to line the two timelines up.
static long wall_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (long)((t.tv_sec % 10) * 1000000L + t.tv_nsec / 1000);
}

static void step(const char *name) {
	if (!trace)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long us = (now.tv_sec - last.tv_sec) * 1000000L + (now.tv_nsec - last.tv_nsec) / 1000;
	dprintf(2, "corral init: %-12s %6ld µs [at %ld]\n", name, us, wall_us());
	last = now;
}

// json_append appends s to buf as the inside of a JSON string.
static size_t json_append(char *buf, size_t n, size_t size, const char *s) {
	for (; *s && n + 7 < size; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(buf + n, size - n, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = 0;
	return n;
}

static void report(const char *line) {
	size_t len = strlen(line);
	(void)!write(CORRAL_FD_STATUS, line, len);
}

// While mounts are placed ahead of the plan (mounts_ahead), a failure
// jumps back there instead of ending the init; ahead_why says what failed.
static jmp_buf *ahead_jmp;
static char ahead_why[1200];

// fail reports a failed stage and ends the init (and with it the sandbox).
static void fail(const char *stage, int err, const char *fmt, ...) {
	char msg[1024], buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (err) {
		size_t n = strlen(msg);
		snprintf(msg + n, sizeof msg - n, ": %s", strerror(err));
	}
	size_t n = (size_t)snprintf(buf, sizeof buf, "{\"error\":{\"stage\":\"%s\",\"message\":\"", stage);
	n = json_append(buf, n, sizeof buf - 64, msg);
	snprintf(buf + n, sizeof buf - n, "\",\"errno\":%d}}\n", err);
	if (ahead_jmp) {
		// Placing the mounts ahead of the plan failed: nothing is
		// reported; the plan's own mounts are made once it comes.
		snprintf(ahead_why, sizeof ahead_why, "%s: %s", stage, msg);
		longjmp(*ahead_jmp, 1);
	}
	report(buf);
	_exit(1);
}

// ---- the plan ----

struct mount_step {
	char kind;  // CORRAL_MOUNT_* (protocol.h)
	int ro, noexec, dir;
	const char *source, *target;
	int fd;
};

// is_bound reports whether m binds a host file or folder (a device node
// included): its source is opened before the new root hides it.
static int is_bound(const struct mount_step *m) {
	return m->kind == CORRAL_MOUNT_BIND || m->kind == CORRAL_MOUNT_DEV;
}

struct rule {
	uint64_t access;
	const char *path;
};

struct port_rule {
	uint64_t access;
	uint64_t port;
};

// held_file is a protected path and the file corral holds for it (Hold in
// held_linux.go): its device and inode when corral opened it.
struct held_file {
	const char *path;
	int held; // 0: corral could not hold it (gone)
	unsigned major, minor;
	uint64_t ino;
};

struct plan {
	const char *hostname, *dir, *path;
	const char **argv, **env;
	size_t nargv, nenv;
	struct mount_step *mounts;
	size_t nmounts;
	int abi;
	uint64_t handled_fs, handled_net, scoped;
	struct rule *rules;
	size_t nrules;
	struct port_rule *port_rules;
	size_t nport_rules;
	struct held_file *held;
	size_t nheld;
	int proxy_port; // 0: no proxy
	int cgroup_fds[MAX_CGROUP_FDS]; // the first njoin: the run's cgroup; the rest: its parent
	size_t ncgroup_fds, njoin;
	const unsigned char *bpf;
	size_t bpf_len;
};

static void *grow(void *p, size_t n, size_t size) {
	if ((n & (n - 1)) == 0) { // n is 0 or a power of two: double
		p = realloc(p, (n ? 2 * n : 8) * size);
		if (!p)
			fail("plan", ENOMEM, "allocating");
	}
	return p;
}

// next returns the next NUL-terminated field of a record payload.
static const char *next(const char **p, const char *end) {
	const char *s = *p;
	if (s >= end)
		fail("plan", 0, "truncated record");
	const char *z = memchr(s, 0, (size_t)(end - s));
	if (!z)
		fail("plan", 0, "unterminated field");
	*p = z + 1;
	return s;
}

// read_plan reads records: one tag byte, a 4-byte little-endian length,
// then the payload (fields separated by NUL bytes).
static void read_full(int fd, char *buf, size_t want) {
	size_t got = 0;
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("plan", errno, "reading plan");
		if (n == 0)
			fail("plan", 0, "plan ends after %zu of %zu bytes", got, want);
		got += (size_t)n;
	}
}

// le32 reads a 4-byte little-endian number.
static uint32_t le32(const void *p) {
	const unsigned char *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

// alloc_read reads len bytes from fd into a new buffer (what, for errors).
static char *alloc_read(int fd, size_t len, const char *what) {
	char *buf = malloc(len ? len : 1);
	if (!buf)
		fail("plan", ENOMEM, "reading %s", what);
	read_full(fd, buf, len);
	return buf;
}

// cacheable_record reports whether a record may be in a cached mount
// block: not W, which would hold the init (corral never saves one).
static int cacheable_record(char tag) {
	return tag == CORRAL_REC_LEGACY_MOUNTS || tag == CORRAL_REC_MOUNT || tag == CORRAL_REC_LANDLOCK || tag == CORRAL_REC_RULE || tag == CORRAL_REC_PORT_RULE;
}

// mount_record reports whether a record tag belongs to the mount block:
// the records setup_staging and build_landlock read, which corral sends
// one after another. The block is what the mount cache holds
// (mounts_ahead).
static int mount_record(char tag) {
	return cacheable_record(tag) || tag == CORRAL_REC_MOUNT_PAUSE;
}

// canonical reports whether p is an absolute path without empty, "." or
// ".." components (and without a trailing slash), as corral writes them.
static int canonical(const char *p) {
	if (p[0] != '/')
		return 0;
	if (p[1] == 0)
		return 1;
	for (const char *c = p; *c; c++) {
		if (*c != '/')
			continue;
		const char *n = c + 1;
		if (*n == 0 || *n == '/')
			return 0;
		if (n[0] == '.' && (n[1] == 0 || n[1] == '/'))
			return 0;
		if (n[0] == '.' && n[1] == '.' && (n[2] == 0 || n[2] == '/'))
			return 0;
	}
	return 1;
}

// parse_plan parses len bytes of records (one tag byte, a 4-byte
// little-endian length, then the payload, its fields ended by NUL bytes)
// into pl, which points into buf. With only_mounts, a record outside the
// mount block is refused (a cached block). *block is set to the mount
// block's bytes (NULL when its records are not all together).
static void parse_plan(struct plan *pl, const char *buf, size_t len, int only_mounts, const char **block, size_t *block_len) {
	memset(pl, 0, sizeof *pl);
	legacy_mounts = 0;
	mount_pause_us = 0;
	size_t off = 0, first = 0, last = 0;
	int in_block = 0, after_block = 0, scattered = 0;
	while (off < len) {
		if (len - off < 5)
			fail("plan", 0, "truncated record header");
		size_t at = off;
		char tag = buf[off];
		uint32_t n = le32(buf + off + 1);
		off += 5;
		if (n > len - off)
			fail("plan", 0, "truncated record");
		const char *p = buf + off, *end = buf + off + n;
		off += n;
		if (only_mounts && !cacheable_record(tag))
			fail("plan", 0, "record %c in a cached mount block", tag);
		if (mount_record(tag)) {
			if (after_block)
				scattered = 1;
			if (!in_block)
				first = at;
			in_block = 1;
			last = off;
		} else if (in_block) {
			after_block = 1;
		}
		switch (tag) {
		case CORRAL_REC_TRACE:
			trace = 1;
			break;
		case CORRAL_REC_LEGACY_MOUNTS:
			legacy_mounts = 1;
			break;
		case CORRAL_REC_MOUNT_PAUSE:
			mount_pause_us = strtoul(next(&p, end), NULL, 10);
			break;
		case CORRAL_REC_HOSTNAME:
			pl->hostname = next(&p, end);
			break;
		case CORRAL_REC_DIR:
			pl->dir = next(&p, end);
			break;
		case CORRAL_REC_PATH:
			pl->path = next(&p, end);
			break;
		case CORRAL_REC_ARG:
			pl->argv = grow(pl->argv, pl->nargv, sizeof *pl->argv);
			pl->argv[pl->nargv++] = next(&p, end);
			break;
		case CORRAL_REC_ENV:
			pl->env = grow(pl->env, pl->nenv, sizeof *pl->env);
			pl->env[pl->nenv++] = next(&p, end);
			break;
		case CORRAL_REC_MOUNT: {
			pl->mounts = grow(pl->mounts, pl->nmounts, sizeof *pl->mounts);
			struct mount_step *m = &pl->mounts[pl->nmounts++];
			const char *kind = next(&p, end), *flags = next(&p, end);
			m->kind = kind[0];
			m->ro = strchr(flags, CORRAL_MOUNT_FLAG_RO) != NULL;
			m->noexec = strchr(flags, CORRAL_MOUNT_FLAG_NOEXEC) != NULL;
			m->dir = strchr(flags, CORRAL_MOUNT_FLAG_DIR) != NULL;
			m->source = next(&p, end);
			m->target = next(&p, end);
			m->fd = -1;
			// A cached block is checked as a plan never needs to be:
			// every path as corral writes them.
			if (only_mounts && (!canonical(m->target) || ((is_bound(m) || m->kind == CORRAL_MOUNT_COPY) && !canonical(m->source))))
				fail("plan", 0, "a path that is not canonical in a cached mount block");
			break;
		}
		case CORRAL_REC_HELD:
			pl->held = grow(pl->held, pl->nheld, sizeof *pl->held);
			pl->held[pl->nheld].path = next(&p, end);
			pl->held[pl->nheld].held = next(&p, end)[0] == '1';
			pl->held[pl->nheld].major = strtoul(next(&p, end), NULL, 10);
			pl->held[pl->nheld].minor = strtoul(next(&p, end), NULL, 10);
			pl->held[pl->nheld++].ino = strtoull(next(&p, end), NULL, 10);
			break;
		case CORRAL_REC_LANDLOCK:
			pl->abi = atoi(next(&p, end));
			pl->handled_fs = strtoull(next(&p, end), NULL, 10);
			pl->handled_net = strtoull(next(&p, end), NULL, 10);
			pl->scoped = strtoull(next(&p, end), NULL, 10);
			break;
		case CORRAL_REC_RULE:
			pl->rules = grow(pl->rules, pl->nrules, sizeof *pl->rules);
			pl->rules[pl->nrules].access = strtoull(next(&p, end), NULL, 10);
			pl->rules[pl->nrules++].path = next(&p, end);
			break;
		case CORRAL_REC_PORT_RULE:
			pl->port_rules = grow(pl->port_rules, pl->nport_rules, sizeof *pl->port_rules);
			pl->port_rules[pl->nport_rules].access = strtoull(next(&p, end), NULL, 10);
			pl->port_rules[pl->nport_rules++].port = strtoull(next(&p, end), NULL, 10);
			break;
		case CORRAL_REC_PROXY:
			pl->proxy_port = atoi(next(&p, end));
			break;
		default:
			fail("plan", 0, "unknown record %c", tag);
		}
	}
	*block = in_block && !scattered ? buf + first : NULL;
	*block_len = in_block && !scattered ? last - first : 0;
}

// read_plan reads the plan from corral: a 4-byte little-endian length,
// then the records (parse_plan). *block is its mount block.
static void read_plan(struct plan *pl, const char **block, size_t *block_len) {
	unsigned char hdr[4];
	read_full(CORRAL_FD_PLAN, (char *)hdr, 4);
	size_t len = le32(hdr);
	if (len > MAX_PLAN)
		fail("plan", 0, "plan larger than %d bytes", MAX_PLAN);
	char *buf = alloc_read(CORRAL_FD_PLAN, len, "plan");
	if (len == 0)
		fail("plan", 0, "no plan");
	parse_plan(pl, buf, len, 0, block, block_len);
	if (!pl->path || !pl->dir || !pl->hostname || pl->nargv == 0)
		fail("plan", 0, "plan lacks the command, folder or hostname");
	pl->argv = grow(pl->argv, pl->nargv, sizeof *pl->argv);
	pl->argv[pl->nargv] = NULL;
	pl->env = grow(pl->env, pl->nenv, sizeof *pl->env);
	pl->env[pl->nenv] = NULL;
}

// ---- mounts ----

// While the root is built ahead of the plan (mounts_ahead), the init makes
// nothing outside the tmpfs mounts it made itself: a mount point, folder,
// copy, file or symlink in a bound host folder would change the host for
// a root that may never be used, from a cache the plan has not vouched
// for. (The plan's own build may: it makes the mount points of protected
// paths in a writable work dir.) The ahead build then fails, and the
// plan's build does it.
static int building_ahead;
#define MAX_OWN_TMPFS 64
static dev_t own_tmpfs[MAX_OWN_TMPFS];
static size_t n_own_tmpfs;

// own_tmpfs_mounted records the tmpfs just mounted at path as one the
// init may make things in while building ahead.
static void own_tmpfs_mounted(const char *path) {
	struct stat st;
	if (!building_ahead)
		return;
	if (n_own_tmpfs == MAX_OWN_TMPFS || stat(path, &st) < 0)
		fail("mounts", errno, "more than %d tmpfs mounts, or %s is gone", MAX_OWN_TMPFS, path);
	own_tmpfs[n_own_tmpfs++] = st.st_dev;
}

// own_parent opens the folder path is in and sets *base to its last
// component, for a *at call that makes it; -1 with errno EXDEV when the
// folder is not on one of the init's own tmpfs mounts (EEXIST when path
// exists there: nothing would be made).
static int own_parent(const char *path, char *dir, size_t size, const char **base) {
	const char *slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	*base = slash + 1;
	int fd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	for (size_t i = 0; i < n_own_tmpfs; i++)
		if (own_tmpfs[i] == st.st_dev)
			return fd;
	errno = fstatat(fd, *base, &st, AT_SYMLINK_NOFOLLOW) == 0 ? EEXIST : EXDEV;
	close(fd);
	return -1;
}

// make_at makes path: a folder (kind 'd', mode), a file (kind 'f', open
// flags and mode; O_CREAT added) or a symlink to link (kind 'l'). While
// building ahead it makes it only on the init's own tmpfs mounts, through
// the checked folder (own_parent); otherwise by path.
static int make_at(char kind, const char *path, int flags, mode_t mode, const char *link) {
	char dir[4096];
	const char *base = path;
	int fd = AT_FDCWD;
	if (building_ahead) {
		if ((fd = own_parent(path, dir, sizeof dir, &base)) < 0)
			return -1;
		flags |= O_NOFOLLOW;
	}
	int r = kind == 'd' ? mkdirat(fd, base, mode) : kind == 'l' ? symlinkat(link, fd, base) : openat(fd, base, flags | O_CREAT, mode);
	int e = errno;
	if (fd != AT_FDCWD)
		close(fd);
	errno = e;
	return r;
}

static void mkdir_p(const char *path, mode_t mode) {
	// Most parents exist already: try the folder itself first and walk up
	// only on ENOENT, which keeps the common case at one syscall.
	if (make_at('d', path, 0, mode, NULL) == 0 || errno == EEXIST)
		return;
	if (errno != ENOENT)
		fail("mounts", errno, "mkdir %s", path);
	char tmp[4096];
	size_t len = strlen(path);
	if (len >= sizeof tmp)
		fail("mounts", ENAMETOOLONG, "%s", path);
	memcpy(tmp, path, len + 1);
	char *slash = strrchr(tmp, '/');
	if (!slash || slash == tmp)
		fail("mounts", ENOENT, "mkdir %s", path);
	*slash = 0;
	mkdir_p(tmp, mode);
	if (make_at('d', path, 0, mode, NULL) < 0 && errno != EEXIST)
		fail("mounts", errno, "mkdir %s", path);
}

static void parent_dirs(const char *path) {
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s", path);
	char *slash = strrchr(tmp, '/');
	if (slash && slash != tmp) {
		*slash = 0;
		mkdir_p(tmp, 0755);
	}
}

// host_tmp is the host's /tmp, opened before the staging tmpfs covers
// it: a bind source below /tmp looked up after that (to open it again, or
// to see whether it is gone) is looked up from here, not in the staging
// tree.
static int host_tmp = -1;

// source_at returns the path to look source up by and sets *dirfd to the
// folder to look it up from.
static const char *source_at(const char *source, int *dirfd) {
	size_t n = strlen(STAGING);
	*dirfd = AT_FDCWD;
	if (host_tmp >= 0 && strncmp(source, STAGING, n) == 0 && (source[n] == '/' || source[n] == 0)) {
		*dirfd = host_tmp;
		return source[n] ? source + n + 1 : ".";
	}
	return source;
}

// open_source opens m's source the legacy way (an O_PATH fd).
static int open_source(const struct mount_step *m) {
	int dirfd;
	const char *p = source_at(m->source, &dirfd);
	return openat(dirfd, p, O_PATH | O_CLOEXEC);
}

// read_only_tmpfs reports whether the private tmpfs m ends up read-only:
// /dev, which holds only the bound devices; /tmp and /dev/shm stay
// writable.
static int read_only_tmpfs(const struct mount_step *m) {
	return m->kind == CORRAL_MOUNT_TMPFS && strcmp(m->target, "/dev") == 0;
}

// ro_above reports whether the folder that holds mount i's target is
// read-only in the sandbox by the plan: the nearest mount placed above it
// is a read-only bind or the private /dev, or there is none and it is the
// new root itself. The flags of a legacy bind are set only after every
// mount is placed, so the plan, not the mount, says so there.
static int ro_above(const struct plan *pl, size_t i) {
	const char *t = pl->mounts[i].target;
	const struct mount_step *above = NULL;
	size_t best = 0;
	for (size_t j = 0; j < i; j++) {
		const struct mount_step *m = &pl->mounts[j];
		size_t n = strlen(m->target);
		if (m->kind == CORRAL_MOUNT_SYMLINK || m->kind == CORRAL_MOUNT_DIR || m->kind == CORRAL_MOUNT_COPY || m->kind == CORRAL_MOUNT_FILE || (is_bound(m) && m->fd < 0))
			continue;
		if (strcmp(m->target, "/") == 0)
			n = 0;
		else if (strncmp(t, m->target, n) != 0 || t[n] != '/')
			continue;
		if (!above || n >= best) {
			above = m;
			best = n;
		}
	}
	return !above || (is_bound(above) && above->ro) || read_only_tmpfs(above);
}

// vanished_below_ro reports whether source, a bind's source, has been
// removed from the host since the plan and the mount point target is gone
// too, below a read-only folder (planned_ro, or a read-only mount).
// Nothing in the sandbox can make that path, so leaving the bind out is
// narrower. Where the folder above target is writable the mount point is
// made as planned: a protected file must not be left for the command to
// create.
static int vanished_below_ro(const char *target, const char *source, int planned_ro) {
	struct stat st;
	struct statvfs vfs;
	int dirfd;
	const char *p = source_at(source, &dirfd);
	if (fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT || lstat(target, &st) == 0)
		return 0;
	if (planned_ro)
		return 1;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s", target);
	for (;;) {
		char *slash = strrchr(tmp, '/');
		if (!slash || slash == tmp)
			return 0;
		*slash = 0;
		if (lstat(tmp, &st) == 0)
			return S_ISDIR(st.st_mode) && statvfs(tmp, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
	}
}

// copy_file copies a small system file into the new root; a file that
// vanished since the plan is skipped (narrower).
static void copy_file(const char *source, const char *target) {
	int in = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (in < 0 && errno == ENOENT)
		return;
	if (in < 0)
		fail("mounts", errno, "opening %s", source);
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		fail("mounts", 0, "%s is not a regular file", source);
	parent_dirs(target);
	int out = make_at('f', target, O_WRONLY | O_EXCL | O_CLOEXEC, 0644, NULL);
	if (out < 0)
		fail("mounts", errno, "creating %s", target);
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("mounts", errno, "reading %s", source);
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0)
				fail("mounts", errno, "writing %s", target);
			off += w;
		}
	}
	close(in);
	close(out);
}

// write_file makes target, in the new root, with content.
static void write_file(const char *target, const char *content) {
	parent_dirs(target);
	int out = make_at('f', target, O_WRONLY | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644, NULL);
	if (out < 0)
		fail("mounts", errno, "creating %s", target);
	for (size_t off = 0, n = strlen(content); off < n;) {
		ssize_t w = write(out, content + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			fail("mounts", errno, "writing %s", target);
		off += (size_t)w;
	}
	close(out);
}

struct mount_attr_v0 {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int setattr(const char *path, unsigned flags, uint64_t set, uint64_t clr) {
	struct mount_attr_v0 a = {set, clr, 0, 0};
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags | AT_SYMLINK_NOFOLLOW, &a, sizeof a);
}

// remount is the fallback for kernels without mount_setattr: one remount
// per bind, keeping the flags the source mount had.
static void remount(const char *target, const struct mount_step *m) {
	struct statfs st;
	if (statfs(target, &st) < 0)
		fail("mounts", errno, "statfs %s", target);
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (unsigned long)(st.f_flags & (MS_RDONLY | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME));
	if (m->ro)
		flags |= MS_RDONLY;
	if (m->noexec)
		flags |= MS_NOEXEC;
	if (m->kind != CORRAL_MOUNT_DEV)
		flags |= MS_NODEV;
	if (mount(NULL, target, NULL, flags, NULL) < 0)
		fail("mounts", errno, "remount %s", target);
}

// detached reports whether the bind placed at target went with its
// folder: the host removed the folder since, which detaches every mount
// on it, so the path is gone or is a new folder that is no mount. Only
// below a folder the plan keeps read-only, where nothing in the sandbox
// can make that path, is the bind then left out; a kernel that cannot
// tell a mount's root (before 5.8) gets the flags set, or fails.
static int detached(const struct plan *pl, size_t i, const char *target) {
	struct statx stx;
	if (statx(AT_FDCWD, target, AT_SYMLINK_NOFOLLOW, 0, &stx) < 0)
		return errno == ENOENT && ro_above(pl, i);
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) && ro_above(pl, i);
}

// set_flags makes the new root read-only, nosuid and nodev with one
// recursive mount_setattr, then sets each mount's flags in plan order:
// noexec recursively (nothing under a noexec grant escapes it), read-only
// set or lifted and nodev lifted on the mount itself only, never below (a
// read-only bind inside a writable one stays read-only).
static void set_flags(const char *root, struct plan *pl) {
	char target[4096];
	if (setattr(root, AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0) < 0) {
		if (errno != ENOSYS)
			fail("mounts", errno, "mount_setattr %s", root);
		for (size_t i = 0; i < pl->nmounts; i++) {
			struct mount_step *m = &pl->mounts[i];
			snprintf(target, sizeof target, "%s%s", root, m->target);
			if (is_bound(m) && m->fd >= 0 && !detached(pl, i, target))
				remount(target, m);
		}
		if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755") < 0)
			fail("mounts", errno, "remount new root read-only");
		return;
	}
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		uint64_t set = 0, clr = 0;
		snprintf(target, sizeof target, "%s%s", root, m->target);
		if (is_bound(m) && (m->fd < 0 || detached(pl, i, target)))
			continue;
		if (m->noexec && setattr(target, AT_RECURSIVE, MOUNT_ATTR_NOEXEC, 0) < 0)
			fail("mounts", errno, "mount_setattr noexec %s", m->target);
		switch (m->kind) {
		case CORRAL_MOUNT_TMPFS:
			if (!read_only_tmpfs(m))
				clr = MOUNT_ATTR_RDONLY;
			break;
		case CORRAL_MOUNT_PROC:
			clr = MOUNT_ATTR_RDONLY;
			break;
		case CORRAL_MOUNT_DEV:
			clr = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
			break;
		case CORRAL_MOUNT_BIND:
			// Flags land on the topmost mount at the path: when two
			// binds share a target, the later one (a protected path or
			// a restriction over a grant) decides, both ways. Read-only
			// is already set (the recursive call above) unless an
			// earlier bind at the same path lifted it.
			if (!m->ro)
				clr = MOUNT_ATTR_RDONLY;
			else
				for (size_t j = 0; j < i; j++)
					if (pl->mounts[j].kind == CORRAL_MOUNT_BIND && !pl->mounts[j].ro && strcmp(pl->mounts[j].target, m->target) == 0)
						set = MOUNT_ATTR_RDONLY;
			if (!m->noexec)
				clr |= MOUNT_ATTR_NOEXEC;
			break;
		}
		// EPERM: the host locked the flag on this mount; it stays, which
		// is narrower than the plan.
		if ((set || clr) && setattr(target, 0, set, clr) < 0 && errno != EPERM)
			fail("mounts", errno, "mount_setattr %s", m->target);
	}
}

// set_root_flags finishes a root whose binds came with their flags: the
// root itself read-only, nosuid and nodev (its folders, copies and
// symlinks with it), and the private /dev read-only. The other private
// mounts (/tmp, /dev/shm, /proc) stay writable, made nosuid and nodev
// (and noexec where the plan says) when they were mounted.
static void set_root_flags(const char *root, struct plan *pl) {
	char target[4096];
	if (setattr(root, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0) < 0)
		fail("mounts", errno, "mount_setattr %s", root);
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		if (!read_only_tmpfs(m))
			continue;
		snprintf(target, sizeof target, "%s%s", root, m->target);
		if (setattr(target, 0, MOUNT_ATTR_RDONLY, 0) < 0)
			fail("mounts", errno, "mount_setattr %s", m->target);
	}
}

// clone_bind makes the bind of m as a detached copy of its source (with
// the source's submounts) and gives it its flags before it is attached:
// read-only, nosuid and nodev on the whole copy, noexec on all of it for
// a noexec bind; then read-only (and nodev for a device) lifted on the
// copy's top mount only, so a read-only submount stays read-only. One
// open_tree and a move_mount replace the bind mount and the two path
// lookups set_flags would do later. -1 with errno ENOSYS: the kernel
// predates open_tree or mount_setattr.
static int clone_bind(const struct mount_step *m) {
	int dirfd;
	const char *p = source_at(m->source, &dirfd);
	int fd;
	if (building_ahead) {
		// Ahead of the plan, a source is looked up without following
		// any symlink: corral's sources are real paths, so a symlink
		// on the way means the host changed them since the block was
		// saved (one the probe may not see again, if it is changed
		// back), and the plan's build decides instead.
		struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
		int src = (int)syscall(SYS_openat2, dirfd, p, &how, sizeof how);
		if (src < 0) {
			if (errno == ENOSYS)
				errno = EOPNOTSUPP; // not the old-kernel fallback: no ahead build
			return -1;
		}
		fd = (int)syscall(SYS_open_tree, src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		int e = errno;
		close(src);
		errno = e;
	} else {
		fd = (int)syscall(SYS_open_tree, dirfd, p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	}
	if (fd < 0)
		return -1;
	struct mount_attr_v0 all = {MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m->noexec ? MOUNT_ATTR_NOEXEC : 0), 0, 0, 0};
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &all, sizeof all) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	uint64_t clr = (m->ro ? 0 : MOUNT_ATTR_RDONLY) | (m->kind == CORRAL_MOUNT_DEV ? MOUNT_ATTR_NODEV : 0) | (m->noexec ? 0 : MOUNT_ATTR_NOEXEC);
	struct mount_attr_v0 top = {0, clr, 0, 0};
	// EPERM: the host locked the flag on this mount; it stays, which is
	// narrower than the plan.
	if (clr && syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &top, sizeof top) < 0 && errno != EPERM) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

// place_bind attaches the bind of m (opened as m->fd) at target in the
// new root, making its mount point. A bind whose source the host removes
// since the plan is left out, as when it is gone before it is opened: its
// place is read-only or empty. One the host replaces (move_mount refuses
// a copy of a removed folder with ENOENT) is opened again, so the new
// folder gets the plan's flags.
static void place_bind(struct plan *pl, size_t i, const char *target, int cloned) {
	struct mount_step *m = &pl->mounts[i];
	char src[64];
	struct stat st;
	for (int tries = 1;; tries++) {
		if (lstat(target, &st) < 0) {
			if (vanished_below_ro(target, m->source, ro_above(pl, i))) {
				close(m->fd);
				m->fd = -1; // nothing for set_flags either
				return;
			}
			if (m->dir) {
				mkdir_p(target, 0755);
			} else {
				parent_dirs(target);
				int fd = make_at('f', target, O_WRONLY | O_CLOEXEC, 0644, NULL);
				if (fd < 0)
					fail("mounts", errno, "mount point %s", m->target);
				close(fd);
			}
		}
		int r;
		if (cloned) {
			r = (int)syscall(SYS_move_mount, m->fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH);
		} else {
			snprintf(src, sizeof src, "/proc/self/fd/%d", m->fd);
			r = mount(src, target, NULL, MS_BIND | MS_REC, NULL);
		}
		if (r == 0)
			return;
		if (errno != ENOENT || tries == 3)
			fail("mounts", errno, "binding %s", m->target);
		close(m->fd);
		m->fd = cloned ? clone_bind(m) : open_source(m);
		if (m->fd < 0 && errno == ENOENT && ro_above(pl, i))
			return; // removed since the plan, below a read-only folder: narrower
		if (m->fd < 0)
			fail("mounts", errno, "opening %s again (the host replaced it since the plan)", m->source);
	}
}

// setup_staging builds, on a tmpfs over /tmp, a new root holding only the
// plan's mounts (enter_root pivots into it). Bind sources are opened
// first, so the staging tmpfs cannot hide a work dir under /tmp.
static void setup_staging(struct plan *pl) {
	char target[4096];
	int cloned = !legacy_mounts; // binds are detached copies with their flags set
	if (building_ahead && !cloned)
		fail("mounts", 0, "legacy mounts are not built ahead");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("mounts", errno, "making / private");
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		if (!is_bound(m))
			continue;
		if (cloned) {
			m->fd = clone_bind(m);
			if (m->fd < 0 && errno == ENOSYS && building_ahead)
				fail("mounts", ENOSYS, "open_tree");
			if (m->fd < 0 && errno == ENOSYS) {
				cloned = 0; // an old kernel: bind, then set flags by path
				for (size_t j = 0; j < i; j++)
					if (pl->mounts[j].fd >= 0) {
						close(pl->mounts[j].fd);
						pl->mounts[j].fd = -1;
					}
				i = (size_t)-1; // open them all again, the old way
				continue;
			}
		} else {
			m->fd = open_source(m);
		}
		// A source removed since the plan is left out below a read-only
		// folder, where nothing can take its place; elsewhere the
		// command could make the path itself.
		if (m->fd < 0 && (errno != ENOENT || !ro_above(pl, i)))
			fail("mounts", errno, "opening %s", m->source);
	}
	host_tmp = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (mount_pause_us)
		usleep((useconds_t)mount_pause_us);
	if (mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		fail("mounts", errno, "mounting the new root");
	own_tmpfs_mounted(STAGING);
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		struct stat st;
		if ((size_t)snprintf(target, sizeof target, "%s%s", STAGING, m->target) >= sizeof target)
			fail("mounts", ENAMETOOLONG, "%s", m->target);
		switch (m->kind) {
		case CORRAL_MOUNT_TMPFS:
			mkdir_p(target, 0755);
			if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | (m->noexec ? MS_NOEXEC : 0),
				  read_only_tmpfs(m) ? "mode=0755" : "mode=1777") < 0)
				fail("mounts", errno, "tmpfs on %s", m->target);
			own_tmpfs_mounted(target);
			break;
		case CORRAL_MOUNT_PROC:
			mkdir_p(target, 0555);
			if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				fail("mounts", errno, "proc on %s", m->target);
			break;
		case CORRAL_MOUNT_DIR:
			mkdir_p(target, 0755);
			break;
		case CORRAL_MOUNT_COPY:
			copy_file(m->source, target);
			break;
		case CORRAL_MOUNT_FILE:
			write_file(target, m->source);
			break;
		case CORRAL_MOUNT_SYMLINK:
			if (lstat(target, &st) == 0)
				break; // a bound folder already holds it
			parent_dirs(target);
			if (make_at('l', target, 0, 0, m->source) < 0)
				fail("mounts", errno, "symlink %s", m->target);
			break;
		case CORRAL_MOUNT_BIND:
		case CORRAL_MOUNT_DEV:
			if (m->fd >= 0)
				place_bind(pl, i, target, cloned);
			break;
		default:
			fail("mounts", 0, "unknown mount kind %c", m->kind);
		}
	}
	if (cloned)
		set_root_flags(STAGING, pl);
	else
		set_flags(STAGING, pl);
	for (size_t i = 0; i < pl->nmounts; i++)
		if (pl->mounts[i].fd >= 0)
			close(pl->mounts[i].fd);
	if (host_tmp >= 0)
		close(host_tmp); // nothing of the host's stays open in PID 1
	host_tmp = -1;
}

// The root is built ahead in a mount namespace of its own (home_ns is
// PID 1's first one, kept open), so whatever a cached block mounted, and
// wherever, is gone with it when the block is not the plan's.
static int home_ns = -1;
static int in_ahead_ns;

// drop_ahead leaves a root built ahead of the plan that is not the plan's:
// back in the first mount namespace, which the ahead build never touched,
// with every fd above the five PID 1 started with closed (what building
// it left open, and home_ns).
static void drop_ahead(void) {
	if (in_ahead_ns && syscall(SYS_setns, home_ns, CLONE_NEWNS) < 0)
		fail("mounts", errno, "leaving the mounts built ahead of the plan");
	in_ahead_ns = 0;
	corral_close_from(6);
	home_ns = host_tmp = -1;
}

// held_still reports whether each protected path in a root built ahead is
// still a bind of the file corral holds for it. The root was built before
// corral probed and held them: a file the host renamed over a protected
// path since then detached its read-only bind (the sandbox would see the
// new file, writable) or was held as the new one. Such a root is dropped,
// and the plan's build binds the file corral holds.
static int held_still(const struct plan *pl) {
	char target[4096];
	struct statx stx;
	for (size_t i = 0; i < pl->nheld; i++) {
		const struct held_file *h = &pl->held[i];
		if (!h->held)
			return 0; // gone since the root was built: the plan's build decides
		snprintf(target, sizeof target, "%s%s", STAGING, h->path);
		if (statx(AT_FDCWD, target, AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) < 0 ||
		    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ||
		    stx.stx_dev_major != h->major || stx.stx_dev_minor != h->minor || stx.stx_ino != h->ino)
			return 0;
	}
	return 1;
}

// enter_root pivots into the new root and detaches the old one.
static void enter_root(void) {
	if (chdir(STAGING) < 0)
		fail("mounts", errno, "chdir new root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		fail("mounts", errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		fail("mounts", errno, "detaching the old root");
	if (chdir("/") < 0)
		fail("mounts", errno, "chdir /");
}

// ---- mounts placed ahead of the plan ----

// A mount cache file: this header (the magic, then the cache key as 8
// little-endian bytes), then a mount block as corral sent it in a plan.
#define MOUNT_CACHE_MAGIC "corral mounts 1\n"
#define MOUNT_CACHE_HEADER (sizeof MOUNT_CACHE_MAGIC - 1 + 8)
#define MAX_MOUNT_CACHE (1 << 20)

struct ahead {
	const char *block; // the cached block the new root was built from
	size_t len;
	int built;
	int ruleset; // its Landlock ruleset (-1: none)
	const char *why; // why nothing was built ahead (for the trace)
};

static int build_landlock(struct plan *pl, int root);

// mounts_ahead builds the new root from the mount block in this run's
// mount cache, which the last run with the same options, folder and user
// left there (nsinit_linux.c chooses the file, corral writes it), while
// corral still probes the host and builds the plan. The plan decides: the
// root is used only if the plan's mount block is byte for byte the cached
// one (the same mounts in the same order), so the cache can make a run
// faster but never different; any other root is dropped and the plan's
// built. A failure here (a cached source gone, say) only drops the root.
// The file must be this user's and writable by nobody else.
static void mounts_ahead(struct ahead *a) {
	static jmp_buf jb;
	static struct plan cached;
	memset(a, 0, sizeof *a);
	a->ruleset = -1;
	a->why = "no cache";
	if (!corral_mount_cache)
		return;
	if (setjmp(jb)) {
		ahead_jmp = NULL;
		building_ahead = 0;
		drop_ahead();
		a->why = ahead_why;
		return;
	}
	ahead_jmp = &jb;
	int fd = open(corral_mount_cache, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		fail("cache", errno, "open");
	struct stat st;
	if (fstat(fd, &st) < 0)
		fail("cache", errno, "fstat");
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) || st.st_size <= (off_t)MOUNT_CACHE_HEADER || st.st_size > MAX_MOUNT_CACHE)
		fail("cache", 0, "not this user's, or the wrong size");
	size_t len = (size_t)st.st_size;
	char *buf = alloc_read(fd, len, "the mount cache");
	close(fd);
	uint64_t key = (uint64_t)le32(buf + MOUNT_CACHE_HEADER - 8) | (uint64_t)le32(buf + MOUNT_CACHE_HEADER - 4) << 32;
	if (memcmp(buf, MOUNT_CACHE_MAGIC, MOUNT_CACHE_HEADER - 8) != 0 || key != corral_mount_cache_key)
		fail("cache", 0, "another run's");
	const char *block;
	size_t block_len;
	parse_plan(&cached, buf + MOUNT_CACHE_HEADER, len - MOUNT_CACHE_HEADER, 1, &block, &block_len);
	if (!block || block_len != len - MOUNT_CACHE_HEADER)
		fail("cache", 0, "no mount block");
	home_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (home_ns < 0)
		fail("mounts", errno, "opening /proc/self/ns/mnt");
	if (unshare(CLONE_NEWNS) < 0)
		fail("mounts", errno, "unshare(CLONE_NEWNS)");
	in_ahead_ns = 1;
	building_ahead = 1;
	n_own_tmpfs = 0;
	setup_staging(&cached);
	int root = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		fail("mounts", errno, "opening the new root");
	a->ruleset = build_landlock(&cached, root);
	close(root);
	building_ahead = 0;
	ahead_jmp = NULL;
	a->block = block;
	a->len = block_len;
	a->built = 1;
}

// read_late receives what corral sends on the socket once the plan is on
// its way: the seccomp program's length and the number of cgroup files to
// join (4-byte little-endian each), then the program, with the cgroup
// files, open for writing, attached (SCM_RIGHTS): first the run's cgroup,
// then its parent's, to leave it by (none when there is no cgroup). It is
// read after the mounts, so corral makes the cgroup and compiles the
// filter while they are placed.
static void read_late(struct plan *pl) {
	unsigned char hdr[8];
	struct iovec iov = {hdr, sizeof hdr};
	union {
		char buf[CMSG_SPACE(MAX_CGROUP_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do {
		n = recvmsg(CORRAL_FD_SOCKET, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		fail("plan", errno, "receiving the cgroup and the seccomp filter");
	// Take the fds before anything else can fail, so none is left open.
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && pl->ncgroup_fds < MAX_CGROUP_FDS; i++)
			memcpy(&pl->cgroup_fds[pl->ncgroup_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n != (ssize_t)sizeof hdr)
		fail("plan", 0, "corral sent no cgroup and seccomp filter");
	if (msg.msg_flags & MSG_CTRUNC)
		fail("plan", 0, "more than %d cgroup files", MAX_CGROUP_FDS);
	size_t len = le32(hdr), njoin = le32(hdr + 4);
	if (njoin > pl->ncgroup_fds)
		fail("plan", 0, "%zu cgroup files to join, %zu received", njoin, pl->ncgroup_fds);
	pl->njoin = njoin;
	if (len > MAX_BPF)
		fail("plan", 0, "seccomp program of %zu bytes", len);
	pl->bpf = (const unsigned char *)alloc_read(CORRAL_FD_SOCKET, len, "the seccomp filter");
	pl->bpf_len = len;
}

// join_cgroup moves PID 1 into the run's cgroup before it starts anything,
// so everything it starts, the command above all, is capped. corral opened
// the files (its credentials are the ones the kernel checks), since the
// host's cgroup folders are out of view after pivot_root. On cgroup v1 the
// files are the `tasks` files: writing "0" there moves the calling thread
// (PID 1 has one) without the kernel's global threadgroup lock, whose
// first taking costs an RCU grace period (about 10 ms here); on v2 only
// cgroup.procs exists.
static void join_cgroup(struct plan *pl) {
	for (size_t i = 0; i < pl->njoin; i++) {
		if (write(pl->cgroup_fds[i], "0", 1) != 1)
			fail("cgroup", errno, "joining the run's cgroup");
		close(pl->cgroup_fds[i]);
	}
}

// leave_cgroup moves PID 1 back to the run cgroup's parent once the
// command (and so all it starts) is in the run's cgroup: when PID 1 has
// killed and reaped everything at the end, the cgroup is empty, and corral
// can remove it without waiting for PID 1 and the shim to finish exiting.
// It returns whether PID 1 left (corral sends v1's parents only).
static int leave_cgroup(struct plan *pl) {
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

static void loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fail("network", errno, "socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		fail("network", errno, "SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		fail("network", errno, "SIOCSIFFLAGS lo");
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
		fail("network", errno, "proxy socket");
	int one = 1;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, addr, len) < 0) {
		if (optional && errno == EADDRNOTAVAIL) {
			close(fd);
			return -1;
		}
		fail("network", errno, "binding the proxy port");
	}
	if (listen(fd, 4096) < 0)
		fail("network", errno, "listen");
	return fd;
}

// proxy_listeners listens on 127.0.0.1 and [::1] at the proxy port and
// hands both sockets to corral, which serves the proxy from outside the
// namespace: the sandbox's one way out is a socket corral holds, with no
// helper process. [::1] is skipped when the host has IPv6 disabled.
static void proxy_listeners(int port) {
	struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fds[2], n = 0;
	fds[n++] = listen_on(AF_INET, &v4, sizeof v4, 0);
	int fd6 = listen_on(AF_INET6, &v6, sizeof v6, 1);
	if (fd6 >= 0)
		fds[n++] = fd6;
	char byte = 'L';
	struct iovec iov = {&byte, 1};
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
		fail("network", errno, "handing the proxy listeners to corral");
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

// Securebits that make uid 0 inside the user namespace an ordinary user,
// locked so the command cannot undo them: SECBIT_NOROOT,
// SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED and
// SECBIT_NO_CAP_AMBIENT_RAISE, each with its lock.
#define CORRAL_SECUREBITS (0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80)

static void drop_privileges(void) {
	if (prctl(PR_SET_SECUREBITS, CORRAL_SECUREBITS, 0, 0, 0) < 0)
		fail("capabilities", errno, "prctl(PR_SET_SECUREBITS)");
	for (int c = 0; c <= 63; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; // past the kernel's last capability
			fail("capabilities", errno, "prctl(PR_CAPBSET_DROP, %d)", c);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		fail("capabilities", errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("capabilities", errno, "prctl(PR_SET_NO_NEW_PRIVS)");
}

static void clear_capabilities(void) {
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		fail("capabilities", errno, "capset");
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

// build_landlock makes the plan's Landlock ruleset (-1 when the plan has
// none: best effort was asked for, and the kernel lacks Landlock). The
// rules' paths are opened in the new root, so they name what the command
// will see: after the pivot (root -1), or, ahead of the plan, below root,
// the new root before the pivot, resolved as if it were / already
// (RESOLVE_IN_ROOT: absolute symlinks and ".." stay inside it). Nothing
// is restricted until restrict_landlock.
static int build_landlock(struct plan *pl, int root) {
	if (pl->abi < 1)
		return -1;
	struct ll_ruleset_attr attr = {pl->handled_fs, pl->handled_net, pl->scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		fail("landlock", errno, "landlock_create_ruleset");
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
			fail("landlock", errno, "opening %s for a rule", r->path);
		struct stat st;
		uint64_t access = r->access;
		if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
			access &= LL_FILE_RIGHTS;
		if (access) {
			struct ll_path_beneath pb = {access, fd};
			if (syscall(SYS_landlock_add_rule, rs, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0) < 0)
				fail("landlock", errno, "rule for %s", r->path);
		}
		close(fd);
	}
	for (size_t i = 0; i < pl->nport_rules; i++) {
		struct ll_net_port np = {pl->port_rules[i].access, pl->port_rules[i].port};
		if (syscall(SYS_landlock_add_rule, rs, 2 /* LANDLOCK_RULE_NET_PORT */, &np, 0) < 0)
			fail("landlock", errno, "rule for TCP port %llu", (unsigned long long)np.port);
	}
	return rs;
}

// restrict_landlock applies the ruleset to PID 1 (and so to the command).
static void restrict_landlock(int rs) {
	if (rs < 0)
		return;
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		fail("landlock", errno, "landlock_restrict_self");
	close(rs);
}

static void load_seccomp(struct plan *pl) {
	if (pl->bpf_len == 0 || pl->bpf_len % sizeof(struct sock_filter) != 0)
		fail("seccomp", 0, "seccomp program of %zu bytes", pl->bpf_len);
	struct sock_filter *filter = malloc(pl->bpf_len);
	if (!filter)
		fail("seccomp", ENOMEM, "allocating");
	memcpy(filter, pl->bpf, pl->bpf_len);
	struct sock_fprog prog = {(unsigned short)(pl->bpf_len / sizeof(struct sock_filter)), filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail("seccomp", errno, "loading the filter");
}

// ---- running the command ----

static volatile pid_t command_pid;

static void forward(int sig) {
	if (command_pid > 0)
		kill(command_pid, sig);
}


void corral_init_main(void) {
	struct plan pl;
	clock_gettime(CLOCK_MONOTONIC, &last);
	fcntl(CORRAL_FD_STATUS, F_SETFD, FD_CLOEXEC);
	// Nothing may trace or dump this process's memory.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// Every sandbox has lo up and nothing else: done while the plan is
	// still being built.
	loopback_up();
	// Private first: mounts made in the namespace the root is built
	// ahead in then reach no other, nor mounts made here that one.
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("mounts", errno, "making / private");
	struct ahead ahead;
	mounts_ahead(&ahead);
	struct timespec built;
	clock_gettime(CLOCK_MONOTONIC, &built);
	long ahead_at = wall_us();
	long ahead_us = (built.tv_sec - last.tv_sec) * 1000000L + (built.tv_nsec - last.tv_nsec) / 1000;
	last = built;
	const char *mounts;
	size_t mounts_len;
	read_plan(&pl, &mounts, &mounts_len);
	close(CORRAL_FD_PLAN);
	if (trace)
		dprintf(2, "corral init: %-12s %6ld µs [at %ld] (%s)\n", "ahead", ahead_us, ahead_at, ahead.built ? "built" : ahead.why);
	step("plan");
	int ruleset = -1;
	if (ahead.built && mounts && mounts_len == ahead.len && memcmp(mounts, ahead.block, mounts_len) == 0 && held_still(&pl)) {
		close(home_ns);
		home_ns = -1;
		ruleset = ahead.ruleset;
		enter_root();
		step("pivot");
	} else {
		if (ahead.built)
			drop_ahead();
		setup_staging(&pl);
		enter_root();
		step(legacy_mounts ? "mounts legacy" : "mounts");
	}
	// The ruleset is made while corral may still be making the cgroup
	// and compiling the seccomp filter; it applies further down.
	if (ruleset < 0)
		ruleset = build_landlock(&pl, -1);
	step("landlock rules");
	read_late(&pl);
	step("late");
	join_cgroup(&pl);
	// A cgroup namespace rooted at the run's cgroup: /proc/self/cgroup
	// shows "/", not the host's cgroup path. A kernel without them
	// (before 4.6, EINVAL) shows the path, which is all they hide.
	if (unshare(CLONE_NEWCGROUP) < 0 && errno != EINVAL)
		fail("cgroup", errno, "unshare(CLONE_NEWCGROUP)");
	step("cgroup");
	if (pl.proxy_port)
		proxy_listeners(pl.proxy_port);
	close(CORRAL_FD_SOCKET);
	if (sethostname(pl.hostname, strlen(pl.hostname)) < 0)
		fail("hostname", errno, "sethostname");
	step("proxy, hostname");
	drop_privileges();
	restrict_landlock(ruleset);
	clear_capabilities();
	step("landlock");

	// Signals that arrive from now on are forwarded; until the command
	// exists they wait, blocked (the shim forked PID 1 with them blocked,
	// so none sent during the set-up was lost: a PID namespace's init
	// drops a signal it has no handler for, unless it is blocked).
	sigset_t block, none;
	corral_forwarded_set(&block);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &block, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
		sigaction(corral_forwarded[i], &sa, NULL);

	// Seccomp goes last: after it, nothing may set up anything.
	load_seccomp(&pl);
	step("seccomp");

	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0)
		fail("exec", errno, "pipe");
	pid_t pid = fork();
	if (pid < 0)
		fail("exec", errno, "fork");
	if (pid == 0) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
			sigaction(corral_forwarded[i], &dfl, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		// Belt and braces: nothing but stdio crosses into the command.
		if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
			for (int fd = 3; fd < 65536; fd++)
				if (fd != errpipe[1])
					close(fd);
		int err[2] = {0, 0};
		if (setsid() < 0) {
			err[0] = 1, err[1] = errno;
		} else if (chdir(pl.dir) < 0) {
			err[0] = 2, err[1] = errno;
		} else {
			execve(pl.path, (char *const *)pl.argv, (char *const *)pl.env);
			err[0] = 3, err[1] = errno;
		}
		(void)!write(errpipe[1], err, sizeof err);
		_exit(127);
	}
	command_pid = pid;
	int left = leave_cgroup(&pl);
	close(errpipe[1]);
	int err[2];
	ssize_t n;
	do {
		n = read(errpipe[0], err, sizeof err);
	} while (n < 0 && errno == EINTR);
	close(errpipe[0]);
	if (n == (ssize_t)sizeof err) {
		waitpid(pid, NULL, 0);
		if (err[0] == 3)
			fail("exec", err[1], "%s", pl.path);
		fail(err[0] == 2 ? "chdir" : "setsid", err[1], "%s", err[0] == 2 ? pl.dir : "setsid");
	}
	char line[64];
	snprintf(line, sizeof line, "{\"started\":%d}\n", (int)pid);
	report(line);
	step("fork+exec");
	sigprocmask(SIG_UNBLOCK, &block, NULL);

	// Reap every child (orphans are re-parented to PID 1) until the
	// command itself ends.
	int status = 0;
	for (;;) {
		pid_t w = waitpid(-1, &status, 0);
		if (w == pid)
			break;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			fail("wait", errno, "waiting for the command");
	}
	// Then every process left in the PID namespace: killed and reaped
	// before the exit is reported, so when corral reads it nothing of the
	// command runs any more (and, when PID 1 left it, the cgroup is empty).
	kill(-1, SIGKILL);
	for (;;) {
		if (waitpid(-1, NULL, 0) < 0 && errno != EINTR)
			break;
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	char buf[192];
	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	snprintf(buf, sizeof buf, "{\"exit\":{\"code\":%d,\"signal\":%d,\"max_rss_kb\":%ld,\"alone\":%s}}\n", code, sig, ru.ru_maxrss, left ? "true" : "false");
	report(buf);
	close(CORRAL_FD_STATUS);
	_exit(0);
}
