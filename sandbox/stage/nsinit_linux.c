// The sandbox's namespaces are made here, in a C constructor that runs
// before the Go runtime starts, when corral is executed as the init stage.
// unshare(CLONE_NEWUSER) needs a single-threaded process, which a started
// Go program never is; doing it here lets corral's launcher start the
// init with a cheap vfork instead of a fork of the whole Go process, and
// lets the process map its own uid, as `unshare -r` does.
//
// This process becomes a small shim: it forks the sandbox's PID 1 (which
// runs corral_init_main, init_linux.c), forwards signals to it and exits
// with its status. Both die with their parent
// (PR_SET_PDEATHSIG), so nothing outlives corral.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_linux.h"
#include "spawn_linux.h"


static pid_t corral_init_pid;

static void corral_fail_in(const char *stage, const char *what) {
	int err = errno;
	char buf[512];
	int n = snprintf(buf, sizeof buf,
		"{\"error\":{\"stage\":\"%s\",\"message\":\"%s: %s\",\"errno\":%d}}\n",
		stage, what, strerror(err), err);
	if (n > 0)
		(void)!write(CORRAL_FD_STATUS, buf, (size_t)n);
	_exit(125);
}

static void corral_fail(const char *what) { corral_fail_in("namespaces", what); }

static int corral_write_file(const char *path, const char *data) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = (ssize_t)strlen(data);
	ssize_t n = write(fd, data, (size_t)len);
	int err = errno;
	close(fd);
	errno = err;
	return n == len ? 0 : -1;
}

static void corral_forward(int sig) {
	if (corral_init_pid > 0)
		kill(corral_init_pid, sig);
}

// corral_close_from closes every fd from first up.
void corral_close_from(int first) {
	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
		return;
	for (int fd = first; fd < 65536; fd++)
		close(fd);
}

#ifdef CORRAL_TESTHOOKS
// CORRAL_TEST_IDMAP_REFUSED=1 (read by the constructor) makes the id maps
// fail after the user namespace was made, as on Ubuntu 23.10+: the tests'
// way to the restart in the landlock tier.
static int corral_test_idmap_refused;
#endif

// refused reports whether err from unshare(CLONE_NEWUSER) means the host
// refuses user namespaces (rather than that something failed): ENOSPC
// (user.max_user_namespaces=0), EPERM (Debian's
// kernel.unprivileged_userns_clone=0, a container's seccomp profile),
// EACCES (AppArmor's or an LSM's refusal), ENOSYS (a seccomp profile that
// hides unshare), EINVAL (a kernel without user namespaces), EUSERS
// (nesting too deep).
static int corral_userns_refused(int err) {
	return err == ENOSPC || err == EPERM || err == EACCES || err == ENOSYS || err == EINVAL || err == EUSERS;
}

// corral_tier_report writes the status line naming the tier this init
// runs in (handshake.go): corral builds its plan for it.
static void corral_tier_report(const char *name, const char *why, int err) {
	char buf[512];
	int n = snprintf(buf, sizeof buf, "{\"tier\":{\"name\":\"%s\",\"why\":\"%s%s%s\",\"errno\":%d}}\n",
		name, why, err ? ": " : "", err ? strerror(err) : "", err);
	if (n > 0)
		(void)!write(CORRAL_FD_STATUS, buf, (size_t)n);
}

// corral_enter_namespaces makes the user namespace and the others; 0 when
// the host refuses a user namespace and tier allows going on without
// (the landlock tier). Writing the id maps can fail after the namespace
// was made (Ubuntu's AppArmor moves the process to a profile without
// capabilities): too late to go on here, so that failure is reported
// under its own stage, "userns-refused", and corral starts a landlock
// tier init instead (auto).
static int corral_enter_namespaces(int tier) {
	if (tier == CORRAL_TIER_LANDLOCK) {
		corral_tier_report("landlock", "asked for (--tier landlock)", 0);
		return 0;
	}
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	if (unshare(CLONE_NEWUSER) < 0) {
		if (tier == CORRAL_TIER_AUTO && corral_userns_refused(errno)) {
			corral_tier_report("landlock", "the kernel refused a user namespace: unshare(CLONE_NEWUSER)", errno);
			return 0;
		}
		corral_fail("unshare(CLONE_NEWUSER)");
	}
	const char *stage = tier == CORRAL_TIER_AUTO ? "userns-refused" : "namespaces";
#ifdef CORRAL_TESTHOOKS
	if (corral_test_idmap_refused) {
		errno = EPERM; // as Ubuntu's AppArmor restriction refuses
		corral_fail_in(stage, "writing /proc/self/uid_map");
	}
#endif
	if (corral_write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		corral_fail_in(stage, "writing /proc/self/setgroups");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
	if (corral_write_file("/proc/self/uid_map", map) < 0)
		corral_fail_in(stage, "writing /proc/self/uid_map");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
	if (corral_write_file("/proc/self/gid_map", map) < 0)
		corral_fail_in(stage, "writing /proc/self/gid_map");
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		corral_fail_in(stage, "unshare(mount, pid, network, ipc, uts namespaces)");
	corral_tier_report("namespaces", "", 0);
	return 1;
}

// In the landlock tier there is no PID namespace whose end takes every
// process of the sandbox with it: the shim and the init are child
// subreapers instead (whatever double-forks is re-parented to the nearest,
// never past them), and each kills what is left below it before it exits
// (corral_kill_descendants). corral's death reaches the shim as
// CORRAL_SHIM_DEATHSIG, which it handles by doing the same.
#define CORRAL_SHIM_DEATHSIG (SIGRTMIN + 3)
static volatile sig_atomic_t corral_parent_died;

static void corral_on_parent_death(int sig) {
	(void)sig;
	corral_parent_died = 1;
	if (corral_init_pid > 0)
		kill(corral_init_pid, SIGKILL);
}

// corral_shim_wait waits for PID 1 (the init) and exits with its status.
static void corral_shim_wait(pid_t pid, int namespaces) {
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			_exit(125);
	}
	if (!namespaces)
		corral_kill_descendants();
	if (WIFSIGNALED(status))
		_exit(128 + WTERMSIG(status));
	_exit(WEXITSTATUS(status));
}

// corral_init_stage makes the namespaces (unless tier is the landlock
// tier, or auto on a host that refuses them) and becomes the shim; it
// never returns. CORRAL_FD_PLAN, _STATUS and _SOCKET (protocol.h) are the
// plan, the status and the socket.
static void corral_init_stage(int tier) {
	// Keep only stdio and corral's three pipes: any other fd corral
	// inherited without close-on-exec was opened outside the sandbox and
	// would carry that access into it.
	corral_close_from(6);
	// The sandbox starts with every signal at its default: corral starts
	// the init with every signal blocked (spawn_linux.c), and the early
	// fork inherits the mask and the ignored signals of whatever started
	// corral (an ignored SIGCHLD would make the kernel reap PID 1's
	// children for it; an ignored SIGPIPE would reach the command).
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	// Every signal unblocked but the ones corral forwards: those wait,
	// blocked, until the shim can forward them (corral may forward one
	// as soon as this process runs; at its default it would kill the
	// shim, and the run would end with no word of why).
	sigset_t block, none;
	corral_forwarded_set(&block);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &block, NULL);
	int namespaces = corral_enter_namespaces(tier);
	corral_namespaces = namespaces;
	if (!namespaces) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
			corral_fail("prctl(PR_SET_CHILD_SUBREAPER)");
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = corral_on_parent_death;
		sigemptyset(&sa.sa_mask);
		sigaction(CORRAL_SHIM_DEATHSIG, &sa, NULL);
		if (prctl(PR_SET_PDEATHSIG, CORRAL_SHIM_DEATHSIG, 0, 0, 0) < 0)
			corral_fail("prctl(PR_SET_PDEATHSIG)");
	}

	pid_t pid = fork();
	if (pid < 0)
		corral_fail("fork");
	if (pid == 0) {
		// PID 1 of the sandbox: dies with the shim. (Its parent is
		// outside its PID namespace, so getppid() cannot tell whether
		// the shim already died; if it did, corral died too and the
		// plan pipe reads EOF.) The Go runtime never starts here.
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		// The forwarded signals stay blocked until PID 1 has its
		// handlers (corral_init_main unblocks them once the command
		// runs): blocked, a signal the shim forwards waits; unblocked
		// without a handler, PID 1 of a PID namespace would drop it.
		if (!namespaces) {
			struct sigaction d;
			memset(&d, 0, sizeof d);
			d.sa_handler = SIG_DFL;
			sigaction(CORRAL_SHIM_DEATHSIG, &d, NULL);
			if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
				_exit(125);
		}
		corral_init_main();
	}

	// The shim: keep no pipe to corral open, forward signals, pass on
	// PID 1's exit status.
	close(CORRAL_FD_PLAN);
	close(CORRAL_FD_STATUS);
	close(CORRAL_FD_SOCKET);
	corral_init_pid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = corral_forward;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
		sigaction(corral_forwarded[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (corral_parent_died)
		kill(pid, SIGKILL);
	corral_shim_wait(pid, namespaces);
}

// The init stage that `corral exec` forks in this constructor, before the
// Go runtime starts: the namespaces are made while Go starts up and the
// skills load, instead of after, and no second exec of this binary (nor
// a second start-up of its C library) is needed. Go adopts it in
// sandbox.Start (takeEarlyInit) when the command's stdio is corral's own;
// otherwise, and when the command is refused, it ends with corral
// (PR_SET_PDEATHSIG on the main thread, which lives as long as corral).
static struct {
	int plan, status, sock; // corral's ends
	int pid, pidfd;
	int taken;
} corral_early = {-1, -1, -1, -1, -1, 1};

// corral_scrub zeroes the strings of argv and the environment in this
// copy of corral's memory, argv[0] but "corral": /proc/1/cmdline of the
// sandbox is world-readable, and neither belongs to the command. (The
// kernel still shows the zeroed area, so its length says how long
// corral's command line was.)
static void corral_scrub(int argc, char **argv, char **envp) {
	size_t n0 = strlen(argv[0]);
	memset(argv[0], 0, n0);
	memcpy(argv[0], "corral", n0 < 6 ? n0 : 6);
	for (int i = 1; i < argc; i++)
		memset(argv[i], 0, strlen(argv[i]));
	for (char **e = envp; e && *e; e++)
		memset(*e, 0, strlen(*e));
}

const char *corral_mount_cache;
uint64_t corral_mount_cache_key;

// corral_hash folds s, with its NUL, into the FNV-1a hash h.
static uint64_t corral_hash(uint64_t h, const char *s) {
	do
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	while (*s++);
	return h;
}

// corral_run_dir sets real to dir's real path and reports whether that is
// a folder below /run (where no sandbox sees it, and no grant may reach:
// sandbox/build.go) that is uid's or root's and that no one else can write,
// as the program index requires of XDG_RUNTIME_DIR (programs_linux.go).
static int corral_run_dir(const char *dir, uid_t uid, char *real) {
	struct stat st;
	if (dir[0] != '/' || !realpath(dir, real) || strncmp(real, "/run/", 5) != 0)
		return 0;
	return stat(real, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == uid || st.st_uid == 0) && !(st.st_mode & 022);
}

// corral_choose_mount_cache picks the file the init builds its new root
// ahead from (corral_mounts_ahead, init_ahead_linux.c) and corral saves the plan's
// mounts to: one of 256 per user, chosen by a hash of the user, the
// current folder and corral's arguments before "--" (the skills, the
// folders, the flags), since those decide the mounts. The folder is
// /run/corral/mounts for root, $XDG_RUNTIME_DIR/corral/mounts for
// others, or CORRAL_MOUNT_CACHE when that is a path ("0": no cache); the
// last two only below /run (corral_run_dir). A wrong pick costs time
// only: the plan decides what is mounted.
static void corral_choose_mount_cache(int argc, char **argv) {
	static char path[4096];
	const char *dir = getenv("CORRAL_MOUNT_CACHE");
	if (dir && strcmp(dir, "0") == 0)
		return;
	uint64_t h = 14695981039346656037ULL;
	char buf[4096];
	uid_t uid = geteuid();
	snprintf(buf, sizeof buf, "%u", (unsigned)uid);
	h = corral_hash(h, buf);
	if (!getcwd(buf, sizeof buf))
		return;
	h = corral_hash(h, buf);
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		h = corral_hash(h, argv[i]);
	int n;
	char real[PATH_MAX];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (dir && dir[0] == '/') {
		if (!corral_run_dir(dir, uid, real))
			return;
		n = snprintf(path, sizeof path, "%s/%02x", real, (unsigned)(h & 255));
	} else if (uid == 0) {
		n = snprintf(path, sizeof path, "/run/corral/mounts/%02x", (unsigned)(h & 255));
	} else if (xdg && corral_run_dir(xdg, uid, real)) {
		n = snprintf(path, sizeof path, "%s/corral/mounts/%02x", real, (unsigned)(h & 255));
	} else {
		return;
	}
	if (n <= 0 || (size_t)n >= sizeof path)
		return;
	corral_mount_cache = path;
	corral_mount_cache_key = h;
}

// The forked child starts on another CPU than corral's. Left to the
// scheduler, it waited on corral's CPU, behind Go's start-up, for about
// 0.75 ms after the fork while the other CPU idled. The parent moves it
// (sched_setaffinity on the child) to the CPUs corral may use other than
// its current one; the child, once that is done (a byte on a pipe tells
// it), takes corral's whole set again, so the sandbox is never pinned.
struct corral_away {
	cpu_set_t all, others;
	int sync[2];
	int on;
};

static void corral_away_prepare(struct corral_away *a) {
	a->on = 0;
	if (sched_getaffinity(0, sizeof a->all, &a->all) < 0 || CPU_COUNT(&a->all) < 2)
		return;
	int here = sched_getcpu();
	a->others = a->all;
	if (here >= 0 && here < CPU_SETSIZE)
		CPU_CLR(here, &a->others);
	if (CPU_COUNT(&a->others) == 0 || pipe2(a->sync, O_CLOEXEC) < 0)
		return;
	a->on = 1;
}

static void corral_away_parent(struct corral_away *a, pid_t child) {
	if (!a->on)
		return;
	sched_setaffinity(child, sizeof a->others, &a->others);
	(void)!write(a->sync[1], "", 1);
	close(a->sync[0]);
	close(a->sync[1]);
}

static void corral_away_child(struct corral_away *a) {
	if (!a->on)
		return;
	char c;
	close(a->sync[1]);
	while (read(a->sync[0], &c, 1) < 0 && errno == EINTR)
		;
	close(a->sync[0]);
	sched_setaffinity(0, sizeof a->all, &a->all);
}

// corral_tier_named reads a tier's name (protocol.h).
static int corral_tier_named(const char *name) {
	if (strcmp(name, "landlock") == 0)
		return CORRAL_TIER_LANDLOCK;
	if (strcmp(name, "namespaces") == 0)
		return CORRAL_TIER_NAMESPACES;
	return CORRAL_TIER_AUTO;
}

// corral_tier_flag reads --tier from corral's flags (before "--"), as
// Go's flag package takes it: -tier or --tier, "=VALUE" or the next
// argument. Go checks the tier the init reports against the one it
// parsed, so a misreading here fails the run, never weakens it.
static int corral_tier_flag(int argc, char **argv) {
	int tier = CORRAL_TIER_AUTO;
	// The last one counts, as in Go's flag package.
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];
		if (a[0] != '-')
			continue;
		a += a[1] == '-' ? 2 : 1;
		if (strncmp(a, "tier", 4) != 0)
			continue;
		if (a[4] == '=')
			tier = corral_tier_named(a + 5);
		else if (a[4] == 0 && i + 1 < argc)
			tier = corral_tier_named(argv[++i]);
	}
	return tier;
}

static void corral_early_start(int argc, char **argv, char **envp) {
	int tier = corral_tier_flag(argc, argv);
	// With a standard fd closed, the pipes would take its number (and Go
	// its place as os.Stdin, os.Stdout or os.Stderr): leave the init to
	// the thread, once Go has put /dev/null there.
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			return;
	// A standard stream that is a TCP or UDP socket (inetd, systemd's
	// Accept=yes, socat) is the host's network namespace's: the command
	// could disconnect and reconnect it anywhere. Go copies such a
	// stream through a pipe instead (corral's stdio.go), with an init
	// it starts itself.
	for (int fd = 0; fd < 3; fd++) {
		struct stat st;
		int domain;
		socklen_t len = sizeof domain;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_UNIX))
			return;
	}
	int plan[2], status[2], sock[2];
	if (pipe2(plan, O_CLOEXEC) < 0)
		return;
	if (pipe2(status, O_CLOEXEC) < 0) {
		close(plan[0]);
		close(plan[1]);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) < 0) {
		close(plan[0]);
		close(plan[1]);
		close(status[0]);
		close(status[1]);
		return;
	}
	corral_choose_mount_cache(argc, argv);
	// The child starts with the forwarded signals blocked: corral may
	// forward one (corral_signals_start) before the child has set its
	// own mask, and at its default it would end the child.
	sigset_t block, old;
	corral_forwarded_set(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct corral_away away;
	corral_away_prepare(&away);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0)
		sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid > 0)
		corral_away_parent(&away, pid);
	if (pid == 0) {
		corral_away_child(&away);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
			_exit(125);
		// Terminal signals reach corral only, which forwards them.
		setpgid(0, 0);
		corral_scrub(argc, argv, envp);
		// The plan, status and socket fds, as the exec'd init gets them.
		int src[3] = {plan[0], status[1], sock[1]};
		if (corral_place_fds(src, CORRAL_FD_PLAN, 3) < 0)
			_exit(125);
		corral_init_stage(tier);
	}
	close(plan[0]);
	close(status[1]);
	close(sock[1]);
	if (pid < 0) {
		close(plan[1]);
		close(status[0]);
		close(sock[0]);
		if (away.on) {
			close(away.sync[0]);
			close(away.sync[1]);
		}
		return;
	}
	// Go's poller takes non-blocking pipes.
	fcntl(plan[1], F_SETFL, O_NONBLOCK);
	fcntl(status[0], F_SETFL, O_NONBLOCK);
	corral_early.plan = plan[1];
	corral_early.status = status[0];
	corral_early.sock = sock[0];
	corral_early.pid = pid;
	corral_early.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (corral_early.pidfd >= 0)
		fcntl(corral_early.pidfd, F_SETFD, FD_CLOEXEC);
	corral_early.taken = 0;
}

int corral_take_early(int out[5]) {
	if (__atomic_exchange_n(&corral_early.taken, 1, __ATOMIC_SEQ_CST))
		return -1;
	out[0] = corral_early.plan;
	out[1] = corral_early.status;
	out[2] = corral_early.sock;
	out[3] = corral_early.pid;
	out[4] = corral_early.pidfd;
	return 0;
}

// Signals corral forwards, for the init the constructor forked: handlers
// in C that pass each one on through the init's pidfd. os/signal would
// start Go's signal-mask thread and trade two wake-ups with it for each of
// the seven signals, about 1 ms of cross-CPU ping-pong while the launch
// is at its busiest. Installed after Go started, these replace Go's
// handlers for those signals only (SA_ONSTACK: they run on Go's threads,
// on the signal stack); corral_signals_stop puts Go's back.
static int corral_sig_target = -1;
static struct sigaction corral_sig_saved[NSIG];
static int corral_sig_on;
// The first signal that ends a run (SIGINT, SIGTERM, SIGHUP, SIGQUIT), and
// a pipe the handler writes a byte to for it: Go, which no longer sees
// these signals, reads it (nativeEnding) to stop waiting for locks other
// runs hold before the plan is built.
static int corral_sig_first;
static int corral_sig_note[2] = {-1, -1};

static void corral_sig_forward(int sig) {
	int saved = errno;
	int fd = __atomic_load_n(&corral_sig_target, __ATOMIC_SEQ_CST);
	if (fd >= 0)
		syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
		int none = 0;
		__atomic_compare_exchange_n(&corral_sig_first, &none, sig, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		if (corral_sig_note[1] >= 0)
			(void)!write(corral_sig_note[1], "", 1);
	}
	errno = saved;
}

int corral_signals_note(void) { return corral_sig_note[0]; }

int corral_signals_first(void) { return __atomic_load_n(&corral_sig_first, __ATOMIC_SEQ_CST); }

int corral_signals_start(void) {
	if (__atomic_load_n(&corral_sig_on, __ATOMIC_SEQ_CST) || corral_early.taken || corral_early.pidfd < 0)
		return -1;
	// A copy of the pidfd of their own, never closed: a handler that
	// loaded it just before corral_signals_stop still signals the init
	// (or, reaped by then, nothing), never an fd number reused since.
	static int own = -1;
	if (own < 0 && (own = fcntl(corral_early.pidfd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -1;
	if (corral_sig_note[0] < 0 && pipe2(corral_sig_note, O_CLOEXEC | O_NONBLOCK) < 0)
		corral_sig_note[0] = corral_sig_note[1] = -1;
	__atomic_store_n(&corral_sig_target, own, __ATOMIC_SEQ_CST);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = corral_sig_forward;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++) {
		int sig = corral_forwarded[i];
		if (sigaction(sig, &sa, &corral_sig_saved[sig]) < 0) {
			for (size_t j = 0; j < i; j++)
				sigaction(corral_forwarded[j], &corral_sig_saved[corral_forwarded[j]], NULL);
			__atomic_store_n(&corral_sig_target, -1, __ATOMIC_SEQ_CST);
			return -1;
		}
	}
	__atomic_store_n(&corral_sig_on, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int corral_signals_stop(void) {
	__atomic_store_n(&corral_sig_target, -1, __ATOMIC_SEQ_CST);
	if (!__atomic_exchange_n(&corral_sig_on, 0, __ATOMIC_SEQ_CST))
		return 0;
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
		sigaction(corral_forwarded[i], &corral_sig_saved[corral_forwarded[i]], NULL);
	return 0;
}

const char *corral_early_mount_cache(unsigned long long *key) {
	*key = corral_mount_cache_key;
	return corral_mount_cache;
}

// corral_cli is defined by cmd/corral only: another program that links
// this package never forks an init from its constructor.
extern const int corral_cli __attribute__((weak));

__attribute__((constructor)) static void corral_nsinit(int argc, char **argv, char **envp) {
	if (argc >= 2 && strcmp(argv[1], CORRAL_INIT_ARG) == 0)
		corral_init_stage(argc >= 3 ? corral_tier_named(argv[2]) : CORRAL_TIER_AUTO);
	if (&corral_cli == NULL || argc < 2 || strcmp(argv[1], "exec") != 0)
		return;
#ifdef CORRAL_TESTHOOKS
	// CORRAL_EARLY_INIT=0 starts the init only when Go asks, as a library
	// caller's does: the tests' way to cover that path, read only in a
	// binary built with -tags corral_testhooks (testhooks_linux.go).
	const char *early = getenv("CORRAL_EARLY_INIT");
	if (early && strcmp(early, "0") == 0)
		return;
	const char *idmap = getenv("CORRAL_TEST_IDMAP_REFUSED");
	corral_test_idmap_refused = idmap && strcmp(idmap, "1") == 0;
#endif
	corral_early_start(argc, argv, envp);
}
