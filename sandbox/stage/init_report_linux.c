// The sandbox's init (PID 1, init_linux.c), reporting: the trace of its
// steps, the status line to corral, and fail.

#include "init_parts.h"

int corral_trace;
int corral_legacy_mounts; // bind, then set flags by path (as on kernels without open_tree)
unsigned long corral_mount_pause_us; // between opening the bind sources and placing them (tests)
struct timespec corral_last_step;

// corral_wall_us is the wall clock's microseconds modulo 10 s, as corral's own
// trace prints them ("at"), to line the two timelines up.
long corral_wall_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (long)((t.tv_sec % 10) * 1000000L + t.tv_nsec / 1000);
}

// corral_step prints how long the step just done took, when tracing.
void corral_step(const char *name) {
	if (!corral_trace)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long us = (now.tv_sec - corral_last_step.tv_sec) * 1000000L + (now.tv_nsec - corral_last_step.tv_nsec) / 1000;
	dprintf(2, "corral init: %-12s %6ld µs [at %ld]\n", name, us, corral_wall_us());
	corral_last_step = now;
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

// corral_report writes one status line to corral (handshake.go).
void corral_report(const char *line) {
	size_t len = strlen(line);
	(void)!write(CORRAL_FD_STATUS, line, len);
}

// While mounts are placed ahead of the plan (corral_mounts_ahead), a failure
// jumps back there instead of ending the init; corral_ahead_why says what failed.
jmp_buf *corral_ahead_jmp;
char corral_ahead_why[1200];

// fail reports a failed stage and ends the init (and with it the sandbox).
void corral_fail(const char *stage, int err, const char *fmt, ...) {
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
	if (corral_ahead_jmp) {
		// Placing the mounts ahead of the plan failed: nothing is
		// reported; the plan's own mounts are made once it comes.
		snprintf(corral_ahead_why, sizeof corral_ahead_why, "%s: %s", stage, msg);
		longjmp(*corral_ahead_jmp, 1);
	}
	corral_report(buf);
	_exit(1);
}
