//go:build corral_testhooks

// A way into the init's plan parser from Go's tests (plan_shim_linux.go),
// in a corral_testhooks build only (the product does not have it):
// corral_parse_plan runs as PID 1 runs it, but a failure jumps back here
// instead of ending the process, and what it parsed is written out as
// records, so the tests and the fuzz target can compare it with the input.

#include "init_parts.h"

static struct plan shim_plan;

static void put(FILE *f, char tag, int nfields, ...) {
	va_list ap;
	size_t n = 0;
	va_start(ap, nfields);
	for (int i = 0; i < nfields; i++)
		n += strlen(va_arg(ap, const char *)) + 1;
	va_end(ap);
	unsigned char hdr[5] = {(unsigned char)tag, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >> 24) & 0xff};
	fwrite(hdr, 1, 5, f);
	va_start(ap, nfields);
	for (int i = 0; i < nfields; i++) {
		const char *s = va_arg(ap, const char *);
		fwrite(s, 1, strlen(s) + 1, f);
	}
	va_end(ap);
}

// summarize writes pl as records grouped by tag, in a fixed order;
// numbers in decimal, a mount's kind as the decimal value of its byte.
static void summarize(FILE *f, const struct plan *pl) {
	char a[32], b[32], c[32], d[32];
	if (corral_trace)
		put(f, CORRAL_REC_TRACE, 0);
	if (corral_legacy_mounts)
		put(f, CORRAL_REC_LEGACY_MOUNTS, 0);
	snprintf(a, sizeof a, "%lu", corral_mount_pause_us);
	put(f, CORRAL_REC_MOUNT_PAUSE, 1, a);
	if (pl->hostname)
		put(f, CORRAL_REC_HOSTNAME, 1, pl->hostname);
	if (pl->dir)
		put(f, CORRAL_REC_DIR, 1, pl->dir);
	if (pl->path)
		put(f, CORRAL_REC_PATH, 1, pl->path);
	for (size_t i = 0; i < pl->nargv; i++)
		put(f, CORRAL_REC_ARG, 1, pl->argv[i]);
	for (size_t i = 0; i < pl->nenv; i++)
		put(f, CORRAL_REC_ENV, 1, pl->env[i]);
	for (size_t i = 0; i < pl->nmounts; i++) {
		const struct mount_step *m = &pl->mounts[i];
		snprintf(a, sizeof a, "%d", (unsigned char)m->kind);
		snprintf(b, sizeof b, "-%s%s%s", m->ro ? "r" : "", m->noexec ? "x" : "", m->dir ? "D" : "");
		put(f, CORRAL_REC_MOUNT, 4, a, b, m->source, m->target);
	}
	snprintf(a, sizeof a, "%d", pl->abi);
	snprintf(b, sizeof b, "%llu", (unsigned long long)pl->handled_fs);
	snprintf(c, sizeof c, "%llu", (unsigned long long)pl->handled_net);
	snprintf(d, sizeof d, "%llu", (unsigned long long)pl->scoped);
	put(f, CORRAL_REC_LANDLOCK, 4, a, b, c, d);
	for (size_t i = 0; i < pl->nrules; i++) {
		snprintf(a, sizeof a, "%llu", (unsigned long long)pl->rules[i].access);
		put(f, CORRAL_REC_RULE, 2, a, pl->rules[i].path);
	}
	for (size_t i = 0; i < pl->nport_rules; i++) {
		snprintf(a, sizeof a, "%llu", (unsigned long long)pl->port_rules[i].access);
		snprintf(b, sizeof b, "%llu", (unsigned long long)pl->port_rules[i].port);
		put(f, CORRAL_REC_PORT_RULE, 2, a, b);
	}
	for (size_t i = 0; i < pl->nheld; i++) {
		const struct held_file *h = &pl->held[i];
		snprintf(a, sizeof a, "%u", h->major);
		snprintf(b, sizeof b, "%u", h->minor);
		snprintf(c, sizeof c, "%llu", (unsigned long long)h->ino);
		put(f, CORRAL_REC_HELD, 5, h->path, h->held ? "1" : "0", a, b, c);
	}
	snprintf(a, sizeof a, "%d", pl->proxy_port);
	put(f, CORRAL_REC_PROXY, 1, a);
	snprintf(a, sizeof a, "%d", pl->dns_port);
	put(f, CORRAL_REC_EGRESS, 1, a);
	snprintf(a, sizeof a, "%u", pl->landlock_log);
	put(f, CORRAL_REC_LANDLOCK_LOG, 1, a);
	for (size_t i = 0; i < pl->nnotify; i++) {
		snprintf(a, sizeof a, "%d", pl->notify[i].nr);
		snprintf(b, sizeof b, "%d", pl->notify[i].arg);
		snprintf(c, sizeof c, "%llu", (unsigned long long)pl->notify[i].mask);
		put(f, CORRAL_REC_NOTIFY, 3, a, b, c);
	}
}

// corral_parse_shim parses len bytes of buf as a plan (only_mounts: as a
// cached mount block). It returns 0 with the parsed plan in *out (malloc'd;
// *out_len bytes) and the mount block's place in buf in *block_off and
// *block_len (both 0: none), or -1 with the reason in corral_ahead_why.
int corral_parse_shim(const char *buf, size_t len, int only_mounts, char **out, size_t *out_len, size_t *block_off, size_t *block_len) {
	static jmp_buf jb;
	int ok = 0;
	*out = NULL;
	*out_len = *block_off = *block_len = 0;
	corral_trace = 0;
	if (setjmp(jb) == 0) {
		corral_ahead_jmp = &jb;
		const char *block;
		corral_parse_plan(&shim_plan, buf, len, only_mounts, &block, block_len);
		*block_off = block ? (size_t)(block - buf) : 0;
		FILE *f = open_memstream(out, out_len);
		if (f) {
			summarize(f, &shim_plan);
			fclose(f);
		}
		ok = 1;
	}
	corral_ahead_jmp = NULL;
	free(shim_plan.argv);
	free(shim_plan.env);
	free(shim_plan.mounts);
	free(shim_plan.rules);
	free(shim_plan.port_rules);
	free(shim_plan.held);
	memset(&shim_plan, 0, sizeof shim_plan);
	return ok ? 0 : -1;
}
