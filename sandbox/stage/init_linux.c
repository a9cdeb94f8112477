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

#include "init_parts.h"

static volatile pid_t command_pid;

static void forward(int sig) {
	if (command_pid > 0)
		kill(command_pid, sig);
}


// build_root builds the new root, or takes the one built ahead of the
// plan when its mount block is the plan's, pivots into it, and returns
// the Landlock ruleset (made while corral may still be making the cgroup
// and compiling the seccomp filter; it applies in lock_down).
static int build_root(struct plan *pl) {
	if (!corral_namespaces) {
		// The landlock tier: no new root; the rules name host paths.
		const char *block;
		size_t block_len;
		corral_read_plan(pl, &block, &block_len);
		close(CORRAL_FD_PLAN);
		corral_step("plan");
		int ruleset = corral_build_landlock(pl, -1);
		corral_step("landlock rules");
		return ruleset;
	}
	// Private first: mounts made in the namespace the root is built
	// ahead in then reach no other, nor mounts made here that one.
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		corral_fail("mounts", errno, "making / private");
	struct ahead ahead;
	corral_mounts_ahead(&ahead);
	struct timespec built;
	clock_gettime(CLOCK_MONOTONIC, &built);
	long ahead_at = corral_wall_us();
	long ahead_us = (built.tv_sec - corral_last_step.tv_sec) * 1000000L + (built.tv_nsec - corral_last_step.tv_nsec) / 1000;
	corral_last_step = built;
	const char *mounts;
	size_t mounts_len;
	corral_read_plan(pl, &mounts, &mounts_len);
	close(CORRAL_FD_PLAN);
	if (corral_trace)
		dprintf(2, "corral init: %-12s %6ld µs [at %ld] (%s)\n", "ahead", ahead_us, ahead_at, ahead.built ? "built" : ahead.why);
	corral_step("plan");
	int ruleset = -1;
	if (ahead.built && mounts && mounts_len == ahead.len && memcmp(mounts, ahead.block, mounts_len) == 0 && corral_held_still(pl)) {
		close(corral_home_ns);
		corral_home_ns = -1;
		ruleset = ahead.ruleset;
		corral_enter_root();
		corral_step("pivot");
	} else {
		if (ahead.built)
			corral_drop_ahead();
		corral_setup_staging(pl);
		corral_enter_root();
		corral_step(corral_legacy_mounts ? "mounts legacy" : "mounts");
	}
	if (ruleset < 0)
		ruleset = corral_build_landlock(pl, -1);
	corral_step("landlock rules");
	return ruleset;
}

// lock_down joins the cgroup corral sent, opens the proxy's listeners,
// drops every privilege and applies the Landlock ruleset. (Seccomp comes
// last, in corral_init_main.)
static void lock_down(struct plan *pl, int ruleset) {
	corral_read_late(pl);
	corral_step("late");
	corral_join_cgroup(pl);
	if (!corral_namespaces) {
		// The landlock tier: the host's cgroup, network and UTS
		// namespaces; the proxy listens in corral. The socket stays
		// open for the connect filter's listener (main).
		corral_step("cgroup");
		corral_keep_children();
		corral_drop_privileges();
		corral_restrict_landlock(ruleset, pl->landlock_log);
		corral_clear_capabilities();
		corral_step("landlock");
		return;
	}
	// A cgroup namespace rooted at the run's cgroup: /proc/self/cgroup
	// shows "/", not the host's cgroup path. A kernel without them
	// (before 4.6, EINVAL) shows the path, which is all they hide.
	if (unshare(CLONE_NEWCGROUP) < 0 && errno != EINVAL)
		corral_fail("cgroup", errno, "unshare(CLONE_NEWCGROUP)");
	corral_step("cgroup");
	corral_hand_over(pl);
	if (!pl->hold)
		close(CORRAL_FD_SOCKET); // else held open for wait_command

	if (sethostname(pl->hostname, strlen(pl->hostname)) < 0)
		corral_fail("hostname", errno, "sethostname");
	corral_step("proxy, hostname");
	corral_drop_privileges();
	corral_restrict_landlock(ruleset, pl->landlock_log);
	corral_clear_capabilities();
	corral_step("landlock");
}

// catch_forwarded forwards the signals corral forwards to the command
// from now on; until the command exists they wait, blocked (the shim
// forked PID 1 with them blocked, so none sent during the set-up was
// lost: a PID namespace's init drops a signal it has no handler for,
// unless it is blocked). block is set to them.
static void catch_forwarded(sigset_t *block) {
	corral_forwarded_set(block);
	sigprocmask(SIG_BLOCK, block, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
		sigaction(corral_forwarded[i], &sa, NULL);
}

// start_command forks the command in a session of its own and reports it
// started once its execve succeeded (a failed one is reported instead).
// *left says whether PID 1 left the run's cgroup meanwhile.
static pid_t start_command(struct plan *pl, int *left) {
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0)
		corral_fail("exec", errno, "pipe");
	pid_t pid = fork();
	if (pid < 0)
		corral_fail("exec", errno, "fork");
	if (pid == 0) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
			sigaction(corral_forwarded[i], &dfl, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		// Belt and braces: nothing but stdio crosses into the command.
		if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
			for (int fd = 3; fd < 65536; fd++)
				if (fd != errpipe[1])
					close(fd);
		int err[2] = {0, 0};
		if (setsid() < 0) {
			err[0] = 1, err[1] = errno;
		} else if (chdir(pl->dir) < 0) {
			err[0] = 2, err[1] = errno;
		} else if (corral_scope_command(pl) < 0) {
			err[0] = 4, err[1] = errno;
		} else {
			execve(pl->path, (char *const *)pl->argv, (char *const *)pl->env);
			err[0] = 3, err[1] = errno;
		}
		(void)!write(errpipe[1], err, sizeof err);
		_exit(127);
	}
	command_pid = pid;
	*left = corral_leave_cgroup(pl);
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
			corral_fail("exec", err[1], "%s", pl->path);
		if (err[0] == 4)
			corral_fail("landlock", err[1], "scoping the command below the init");
		corral_fail(err[0] == 2 ? "chdir" : "setsid", err[1], "%s", err[0] == 2 ? pl->dir : "setsid");
	}
	char line[64];
	snprintf(line, sizeof line, "{\"started\":%d}\n", (int)pid);
	corral_report(line);
	corral_step("fork+exec");
	return pid;
}

// wait_command reaps every child (orphans are re-parented to PID 1) until
// the command itself ends, then kills and reaps every process left in the
// PID namespace before it reports the exit, so when corral reads it
// nothing of the command runs any more (and, when PID 1 left it, the
// cgroup is empty). With hold, PID 1 then waits (at most HOLD_MS) for
// corral's word that it read the cgroup: a systemd user scope is removed
// as soon as it is empty, and with it the count of OOM kills.
#define HOLD_MS 2000
static void wait_command(pid_t pid, int left, int hold) {
	int status = 0;
	for (;;) {
		pid_t w = waitpid(-1, &status, 0);
		if (w == pid)
			break;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			corral_fail("wait", errno, "waiting for the command");
	}
	if (corral_namespaces) {
		kill(-1, SIGKILL);
		for (;;) {
			if (waitpid(-1, NULL, 0) < 0 && errno != EINTR)
				break;
		}
	} else {
		corral_kill_descendants();
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	char buf[192];
	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	snprintf(buf, sizeof buf, "{\"exit\":{\"code\":%d,\"signal\":%d,\"max_rss_kb\":%ld,\"alone\":%s}}\n", code, sig, ru.ru_maxrss, left ? "true" : "false");
	corral_report(buf);
	if (hold) {
		struct pollfd p = {.fd = CORRAL_FD_SOCKET, .events = POLLIN};
		while (poll(&p, 1, HOLD_MS) < 0 && errno == EINTR)
			;
	}
}

void corral_init_main(void) {
	struct plan pl;
	clock_gettime(CLOCK_MONOTONIC, &corral_last_step);
	fcntl(CORRAL_FD_STATUS, F_SETFD, FD_CLOEXEC);
	// Nothing may trace or dump this process's memory.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// Every sandbox has lo up and nothing else: done while the plan is
	// still being built.
	if (corral_namespaces)
		corral_loopback_up();
	int ruleset = build_root(&pl);
	lock_down(&pl, ruleset);
	sigset_t block;
	catch_forwarded(&block);
	// Seccomp goes last: after it, nothing may set up anything.
	if (!corral_namespaces) {
		corral_tier_filter(&pl);
		if (!pl.hold)
			close(CORRAL_FD_SOCKET);
	}
	corral_load_seccomp(&pl);
	corral_step("seccomp");
	int left;
	pid_t pid = start_command(&pl, &left);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	wait_command(pid, left, pl.hold);
	close(CORRAL_FD_STATUS);
	_exit(0);
}
