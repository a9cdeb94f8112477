// What the parts of the sandbox's init share. The init is one program in
// six files, one per section (the file names follow each part below);
// what one part uses of another is declared here, with the corral_ prefix,
// since cgo links the C of every package into one binary.
#ifndef CORRAL_INIT_PARTS_H
#define CORRAL_INIT_PARTS_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <poll.h>
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
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
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

// ---- the plan ----

struct mount_step {
	char kind;  // CORRAL_MOUNT_* (protocol.h)
	int ro, noexec, dir;
	const char *source, *target;
	int fd;
};

// is_bound reports whether m binds a host file or folder (a device node
// included): its source is opened before the new root hides it.
static inline int is_bound(const struct mount_step *m) {
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

// notify_rule is a syscall the landlock tier's filter notifies: always
// (arg -1), or when its argument arg has a bit of mask set.
struct notify_rule {
	int nr, arg;
	uint64_t mask;
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
	int dns_port;   // transparent egress (0: none): the fake resolver's UDP port
	unsigned landlock_log; // landlock_restrict_self's flags: log the command's denials for corral
	struct notify_rule *notify; // more syscalls a filter notifies (fs.deny), for corral's supervisor
	size_t nnotify;
	int hold; // wait after the exit report until corral read the cgroup (read_late)
	int cgroup_fds[MAX_CGROUP_FDS]; // the first njoin: the run's cgroup; the rest: its parent
	size_t ncgroup_fds, njoin;
	const unsigned char *bpf;
	size_t bpf_len;
};

// ahead is what corral_mounts_ahead built (or why it built nothing).
struct ahead {
	const char *block; // the cached block the new root was built from
	size_t len;
	int built;
	int ruleset; // its Landlock ruleset (-1: none)
	const char *why; // why nothing was built ahead (for the trace)
};

// ---- init_report_linux.c ----

extern jmp_buf *corral_ahead_jmp;
extern char corral_ahead_why[1200];
extern struct timespec corral_last_step;
extern int corral_legacy_mounts; // bind, then set flags by path (as on kernels without open_tree)
extern unsigned long corral_mount_pause_us; // between opening the bind sources and placing them (tests)
extern int corral_trace;
void corral_fail(const char *stage, int err, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
void corral_report(const char *line);
void corral_step(const char *name);
long corral_wall_us(void);

// ---- init_plan_linux.c ----

char *corral_alloc_read(int fd, size_t len, const char *what);
uint32_t corral_le32(const void *p);
void corral_parse_plan(struct plan *pl, const char *buf, size_t len, int only_mounts, const char **block, size_t *block_len);
void corral_read_plan(struct plan *pl, const char **block, size_t *block_len);

// ---- init_mounts_linux.c ----

extern int corral_building_ahead;
extern int corral_host_tmp;
extern size_t corral_n_own_tmpfs;
void corral_enter_root(void);
void corral_setup_staging(struct plan *pl);

// ---- init_ahead_linux.c ----

extern int corral_home_ns;
void corral_drop_ahead(void);
int corral_held_still(const struct plan *pl);
void corral_mounts_ahead(struct ahead *a);

// ---- init_lockdown_linux.c ----

int corral_build_landlock(struct plan *pl, int root);
void corral_clear_capabilities(void);
void corral_drop_privileges(void);
void corral_join_cgroup(struct plan *pl);
int corral_leave_cgroup(struct plan *pl);
void corral_load_seccomp(struct plan *pl);
void corral_loopback_up(void);
void corral_hand_over(struct plan *pl);
void corral_read_late(struct plan *pl);
void corral_restrict_landlock(int rs, unsigned flags);

// ---- init_tier_linux.c ----

extern int corral_namespaces; // 0: the landlock tier (nsinit_linux.c)
void corral_kill_descendants(void);
void corral_keep_children(void);
int corral_scope_command(const struct plan *pl);
void corral_tier_filter(struct plan *pl);
int corral_supervised_filter(const struct plan *pl, int network);

#endif
