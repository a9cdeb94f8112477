// The init stage is started from a thread of its own that Go's scheduler
// does not know about. Go's os/exec forks with vfork, which holds the
// forking thread until the child has exec'd (0.5-0.9 ms here); run on a
// goroutine, that fork waited for a processor behind the probe for up to a
// millisecond, because Go did not move it to the idle one. A pthread is
// woken by the kernel on the idle CPU at once.
//
// The thread also stays alive for the whole run: the init's
// PR_SET_PDEATHSIG fires when the thread that made it ends, so the thread
// ends only when Go closes the hold pipe (the init has been waited for) or
// corral dies, taking the init with it.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_linux.h"

#define CHILD_STACK (64 << 10)

struct corral_spawn {
	int fds[CORRAL_SPAWN_FDS]; // the child's fd i is a copy of fds[i]
	int result;                // written: the pid, or -errno
	int hold;                  // read: EOF ends the thread
	pid_t parent;
	int errfd; // the child writes errno here when it fails before exec
	char *argv[4];
	char *envp[1];
};

int corral_place_fds(const int *src, int first, int n) {
	int high[CORRAL_SPAWN_FDS];
	if (n > CORRAL_SPAWN_FDS) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < n; i++)
		if ((high[i] = fcntl(src[i], F_DUPFD_CLOEXEC, first + n)) < 0)
			return -1;
	for (int i = 0; i < n; i++)
		if (dup2(high[i], first + i) < 0)
			return -1;
	return 0;
}

static int corral_child(void *arg) {
	struct corral_spawn *s = arg;
	int errfd = s->errfd; // this child's copy of the error pipe
	// Every signal is blocked (the thread's mask): no handler of Go's
	// runs here before execve resets them; the init unblocks them.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		goto fail;
	if (getppid() != s->parent) {
		errno = ESRCH; // corral died already
		goto fail;
	}
	if (setpgid(0, 0) < 0)
		goto fail;
	// The error pipe, too, must survive the placing of fds 0-5.
	int high = fcntl(errfd, F_DUPFD_CLOEXEC, CORRAL_SPAWN_FDS);
	if (high < 0)
		goto fail;
	errfd = high;
	if (corral_place_fds(s->fds, 0, CORRAL_SPAWN_FDS) < 0)
		goto fail;
	execve("/proc/self/exe", s->argv, s->envp);
fail:;
	int err = errno;
	(void)!write(errfd, &err, sizeof err);
	_exit(127);
}

static void corral_spawn_free(struct corral_spawn *s) {
	close(s->result);
	close(s->hold);
	for (int i = 0; i < CORRAL_SPAWN_FDS; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	free(s);
}

static void *corral_spawner(void *arg) {
	struct corral_spawn *s = arg;
	int result[2] = {0, -1}; // the pid or -errno, and its pidfd or -1
	int ep[2] = {-1, -1};
	char *stack = malloc(CHILD_STACK);
	if (stack == NULL || pipe2(ep, O_CLOEXEC) < 0) {
		result[0] = -(errno ? errno : ENOMEM);
	} else {
		s->errfd = ep[1];
		// A pidfd lets corral signal and wait for the init without Go's
		// os.FindProcess, whose first call checks pidfd support by
		// cloning a process (0.1-2 ms here); kernels before 5.2 lack it.
		int pidfd = -1;
		pid_t pid = clone(corral_child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, s, &pidfd);
		if (pid < 0 && errno == EINVAL) {
			pidfd = -1;
			pid = clone(corral_child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, s);
		}
		// With CLONE_VFORK the child has exec'd or exited by now.
		if (pid < 0) {
			result[0] = -errno;
		} else {
			close(ep[1]);
			ep[1] = -1;
			int err = 0;
			ssize_t n;
			do {
				n = read(ep[0], &err, sizeof err);
			} while (n < 0 && errno == EINTR);
			if (n == (ssize_t)sizeof err) {
				waitpid(pid, NULL, 0);
				if (pidfd >= 0)
					close(pidfd);
				result[0] = -err;
			} else {
				result[0] = pid;
				result[1] = pidfd;
			}
		}
	}
	if (ep[0] >= 0)
		close(ep[0]);
	if (ep[1] >= 0)
		close(ep[1]);
	free(stack);
	// The copies of the child's fds are not needed any more.
	for (int i = 0; i < CORRAL_SPAWN_FDS; i++) {
		close(s->fds[i]);
		s->fds[i] = -1;
	}
	(void)!write(s->result, result, sizeof result);
	if (result[0] > 0) {
		char c;
		while (read(s->hold, &c, 1) < 0 && errno == EINTR)
			;
	}
	corral_spawn_free(s);
	return NULL;
}

int corral_spawn_init(const int *fds, int result, int hold, int tier) {
	struct corral_spawn *s = calloc(1, sizeof *s);
	if (s == NULL) {
		close(result);
		close(hold);
		return -ENOMEM;
	}
	s->result = result;
	s->hold = hold;
	for (int i = 0; i < CORRAL_SPAWN_FDS; i++)
		s->fds[i] = -1;
	// The thread works on its own copies: Go may close its files as soon
	// as this returns.
	for (int i = 0; i < CORRAL_SPAWN_FDS; i++) {
		s->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (s->fds[i] < 0) {
			int err = errno;
			corral_spawn_free(s);
			return -err;
		}
	}
	s->parent = getpid();
	s->argv[0] = "corral";
	s->argv[1] = CORRAL_INIT_ARG;
	s->argv[2] = tier == CORRAL_TIER_LANDLOCK ? "landlock" : tier == CORRAL_TIER_NAMESPACES ? "namespaces" : "auto";
	s->argv[3] = NULL;
	s->envp[0] = NULL;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	// The thread and the child start with every signal blocked.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int err = pthread_create(&t, &attr, corral_spawner, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		corral_spawn_free(s);
		return -err;
	}
	return 0;
}
