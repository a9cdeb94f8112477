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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_linux.h"
#include "spawn_linux.h"

#define STATUS_FD 4

static pid_t corral_init_pid;

static void corral_fail(const char *what) {
	int err = errno;
	char buf[512];
	int n = snprintf(buf, sizeof buf,
		"{\"error\":{\"stage\":\"namespaces\",\"message\":\"%s: %s\",\"errno\":%d}}\n",
		what, strerror(err), err);
	if (n > 0)
		(void)!write(STATUS_FD, buf, (size_t)n);
	_exit(125);
}

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
static void corral_close_from(int first) {
	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
		return;
	for (int fd = first; fd < 65536; fd++)
		close(fd);
}

__attribute__((constructor)) static void corral_nsinit(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 2 || strcmp(argv[1], CORRAL_INIT_ARG) != 0)
		return;
	// Keep only stdio and corral's three pipes: any other fd corral
	// inherited without close-on-exec was opened outside the sandbox and
	// would carry that access into it.
	corral_close_from(6);
	// corral starts the init with every signal blocked (spawn_linux.c).
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER) < 0)
		corral_fail("unshare(CLONE_NEWUSER)");
	if (corral_write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		corral_fail("writing /proc/self/setgroups");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
	if (corral_write_file("/proc/self/uid_map", map) < 0)
		corral_fail("writing /proc/self/uid_map");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
	if (corral_write_file("/proc/self/gid_map", map) < 0)
		corral_fail("writing /proc/self/gid_map");
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		corral_fail("unshare(mount, pid, network, ipc, uts namespaces)");

	// Hold forwarded signals until the handlers are in place.
	static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old);

	pid_t pid = fork();
	if (pid < 0)
		corral_fail("fork");
	if (pid == 0) {
		// PID 1 of the sandbox: dies with the shim. (Its parent is
		// outside its PID namespace, so getppid() cannot tell whether
		// the shim already died; if it did, corral died too and the
		// plan pipe reads EOF.) The Go runtime never starts here.
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		corral_init_main();
	}

	// The shim: keep no pipe to corral open, forward signals, pass on
	// PID 1's exit status.
	close(3);
	close(STATUS_FD);
	close(5); // the proxy socket
	corral_init_pid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = corral_forward;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaction(forwarded[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	int status;
	for (;;) {
		pid_t w = waitpid(pid, &status, 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			_exit(125);
	}
	if (WIFSIGNALED(status))
		_exit(128 + WTERMSIG(status));
	_exit(WEXITSTATUS(status));
}
