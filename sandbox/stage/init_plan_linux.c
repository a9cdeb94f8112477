// The sandbox's init (PID 1, init_linux.c), the plan: reading it from
// corral and parsing its records (protocol.h), also a cached mount block's.

#include "init_parts.h"

static void *grow(void *p, size_t n, size_t size) {
	if ((n & (n - 1)) == 0) { // n is 0 or a power of two: double
		p = realloc(p, (n ? 2 * n : 8) * size);
		if (!p)
			corral_fail("plan", ENOMEM, "allocating");
	}
	return p;
}

// next returns the next NUL-terminated field of a record payload.
static const char *next(const char **p, const char *end) {
	const char *s = *p;
	if (s >= end)
		corral_fail("plan", 0, "truncated record");
	const char *z = memchr(s, 0, (size_t)(end - s));
	if (!z)
		corral_fail("plan", 0, "unterminated field");
	*p = z + 1;
	return s;
}

// corral_read_plan reads records: one tag byte, a 4-byte little-endian length,
// then the payload (fields separated by NUL bytes).
static void read_full(int fd, char *buf, size_t want) {
	size_t got = 0;
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			corral_fail("plan", errno, "reading plan");
		if (n == 0)
			corral_fail("plan", 0, "plan ends after %zu of %zu bytes", got, want);
		got += (size_t)n;
	}
}

// le32 reads a 4-byte little-endian number.
uint32_t corral_le32(const void *p) {
	const unsigned char *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

// corral_alloc_read reads len bytes from fd into a new buffer (what, for errors).
char *corral_alloc_read(int fd, size_t len, const char *what) {
	char *buf = malloc(len ? len : 1);
	if (!buf)
		corral_fail("plan", ENOMEM, "reading %s", what);
	read_full(fd, buf, len);
	return buf;
}

// cacheable_record reports whether a record may be in a cached mount
// block: not W, which would hold the init (corral never saves one).
static int cacheable_record(char tag) {
	return tag == CORRAL_REC_LEGACY_MOUNTS || tag == CORRAL_REC_MOUNT || tag == CORRAL_REC_LANDLOCK || tag == CORRAL_REC_RULE || tag == CORRAL_REC_PORT_RULE;
}

// mount_record reports whether a record tag belongs to the mount block:
// the records corral_setup_staging and corral_build_landlock read, which corral sends
// one after another. The block is what the mount cache holds
// (corral_mounts_ahead).
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

// corral_parse_plan parses len bytes of records (one tag byte, a 4-byte
// little-endian length, then the payload, its fields ended by NUL bytes)
// into pl, which points into buf. With only_mounts, a record outside the
// mount block is refused (a cached block). *block is set to the mount
// block's bytes (NULL when its records are not all together).
void corral_parse_plan(struct plan *pl, const char *buf, size_t len, int only_mounts, const char **block, size_t *block_len) {
	memset(pl, 0, sizeof *pl);
	corral_legacy_mounts = 0;
	corral_mount_pause_us = 0;
	size_t off = 0, first = 0, last = 0;
	int in_block = 0, after_block = 0, scattered = 0;
	while (off < len) {
		if (len - off < 5)
			corral_fail("plan", 0, "truncated record header");
		size_t at = off;
		char tag = buf[off];
		uint32_t n = corral_le32(buf + off + 1);
		off += 5;
		if (n > len - off)
			corral_fail("plan", 0, "truncated record");
		const char *p = buf + off, *end = buf + off + n;
		off += n;
		if (only_mounts && !cacheable_record(tag))
			corral_fail("plan", 0, "record %c in a cached mount block", tag);
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
			corral_trace = 1;
			break;
		case CORRAL_REC_LEGACY_MOUNTS:
			corral_legacy_mounts = 1;
			break;
		case CORRAL_REC_MOUNT_PAUSE:
			corral_mount_pause_us = strtoul(next(&p, end), NULL, 10);
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
				corral_fail("plan", 0, "a path that is not canonical in a cached mount block");
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
		case CORRAL_REC_EGRESS:
			pl->dns_port = atoi(next(&p, end));
			break;
		case CORRAL_REC_LANDLOCK_LOG:
			pl->landlock_log = (unsigned)strtoul(next(&p, end), NULL, 10);
			break;
		case CORRAL_REC_NOTIFY:
			pl->notify = grow(pl->notify, pl->nnotify, sizeof *pl->notify);
			pl->notify[pl->nnotify].nr = atoi(next(&p, end));
			pl->notify[pl->nnotify].arg = atoi(next(&p, end));
			pl->notify[pl->nnotify++].mask = strtoull(next(&p, end), NULL, 10);
			break;
		default:
			corral_fail("plan", 0, "unknown record %c", tag);
		}
	}
	*block = in_block && !scattered ? buf + first : NULL;
	*block_len = in_block && !scattered ? last - first : 0;
}

// corral_read_plan reads the plan from corral: a 4-byte little-endian length,
// then the records (corral_parse_plan). *block is its mount block.
void corral_read_plan(struct plan *pl, const char **block, size_t *block_len) {
	unsigned char hdr[4];
	read_full(CORRAL_FD_PLAN, (char *)hdr, 4);
	size_t len = corral_le32(hdr);
	if (len > MAX_PLAN)
		corral_fail("plan", 0, "plan larger than %d bytes", MAX_PLAN);
	char *buf = corral_alloc_read(CORRAL_FD_PLAN, len, "plan");
	if (len == 0)
		corral_fail("plan", 0, "no plan");
	corral_parse_plan(pl, buf, len, 0, block, block_len);
	if (!pl->path || !pl->dir || !pl->hostname || pl->nargv == 0)
		corral_fail("plan", 0, "plan lacks the command, folder or hostname");
	pl->argv = grow(pl->argv, pl->nargv, sizeof *pl->argv);
	pl->argv[pl->nargv] = NULL;
	pl->env = grow(pl->env, pl->nenv, sizeof *pl->env);
	pl->env[pl->nenv] = NULL;
}
