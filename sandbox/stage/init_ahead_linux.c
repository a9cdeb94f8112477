// The sandbox's init (PID 1, init_linux.c), building ahead: the new root
// built from the mount cache while corral still builds the plan.

#include "init_parts.h"

// The root is built ahead in a mount namespace of its own (corral_home_ns is
// PID 1's first one, kept open), so whatever a cached block mounted, and
// wherever, is gone with it when the block is not the plan's.
int corral_home_ns = -1;
static int in_ahead_ns;

// corral_drop_ahead leaves a root built ahead of the plan that is not the plan's:
// back in the first mount namespace, which the ahead build never touched,
// with every fd above the five PID 1 started with closed (what building
// it left open, and corral_home_ns).
void corral_drop_ahead(void) {
	if (in_ahead_ns && syscall(SYS_setns, corral_home_ns, CLONE_NEWNS) < 0)
		corral_fail("mounts", errno, "leaving the mounts built ahead of the plan");
	in_ahead_ns = 0;
	corral_close_from(6);
	corral_home_ns = corral_host_tmp = -1;
}

// corral_held_still reports whether each protected path in a root built ahead is
// still a bind of the file corral holds for it. The root was built before
// corral probed and held them: a file the host renamed over a protected
// path since then detached its read-only bind (the sandbox would see the
// new file, writable) or was held as the new one. Such a root is dropped,
// and the plan's build binds the file corral holds.
int corral_held_still(const struct plan *pl) {
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

// ---- mounts placed ahead of the plan ----

// A mount cache file: this header (the magic, then the cache key as 8
// little-endian bytes), then a mount block as corral sent it in a plan.
#define MOUNT_CACHE_MAGIC "corral mounts 1\n"
#define MOUNT_CACHE_HEADER (sizeof MOUNT_CACHE_MAGIC - 1 + 8)
#define MAX_MOUNT_CACHE (1 << 20)



// corral_mounts_ahead builds the new root from the mount block in this run's
// mount cache, which the last run with the same options, folder and user
// left there (nsinit_linux.c chooses the file, corral writes it), while
// corral still probes the host and builds the plan. The plan decides: the
// root is used only if the plan's mount block is byte for byte the cached
// one (the same mounts in the same order), so the cache can make a run
// faster but never different; any other root is dropped and the plan's
// built. A failure here (a cached source gone, say) only drops the root.
// The file must be this user's and writable by nobody else.
void corral_mounts_ahead(struct ahead *a) {
	static jmp_buf jb;
	static struct plan cached;
	memset(a, 0, sizeof *a);
	a->ruleset = -1;
	a->why = "no cache";
	if (!corral_mount_cache)
		return;
	if (setjmp(jb)) {
		corral_ahead_jmp = NULL;
		corral_building_ahead = 0;
		corral_drop_ahead();
		a->why = corral_ahead_why;
		return;
	}
	corral_ahead_jmp = &jb;
	int fd = open(corral_mount_cache, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		corral_fail("cache", errno, "open");
	struct stat st;
	if (fstat(fd, &st) < 0)
		corral_fail("cache", errno, "fstat");
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) || st.st_size <= (off_t)MOUNT_CACHE_HEADER || st.st_size > MAX_MOUNT_CACHE)
		corral_fail("cache", 0, "not this user's, or the wrong size");
	size_t len = (size_t)st.st_size;
	char *buf = corral_alloc_read(fd, len, "the mount cache");
	close(fd);
	uint64_t key = (uint64_t)corral_le32(buf + MOUNT_CACHE_HEADER - 8) | (uint64_t)corral_le32(buf + MOUNT_CACHE_HEADER - 4) << 32;
	if (memcmp(buf, MOUNT_CACHE_MAGIC, MOUNT_CACHE_HEADER - 8) != 0 || key != corral_mount_cache_key)
		corral_fail("cache", 0, "another run's");
	const char *block;
	size_t block_len;
	corral_parse_plan(&cached, buf + MOUNT_CACHE_HEADER, len - MOUNT_CACHE_HEADER, 1, &block, &block_len);
	if (!block || block_len != len - MOUNT_CACHE_HEADER)
		corral_fail("cache", 0, "no mount block");
	corral_home_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (corral_home_ns < 0)
		corral_fail("mounts", errno, "opening /proc/self/ns/mnt");
	if (unshare(CLONE_NEWNS) < 0)
		corral_fail("mounts", errno, "unshare(CLONE_NEWNS)");
	in_ahead_ns = 1;
	corral_building_ahead = 1;
	corral_n_own_tmpfs = 0;
	corral_setup_staging(&cached);
	int root = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		corral_fail("mounts", errno, "opening the new root");
	a->ruleset = corral_build_landlock(&cached, root);
	close(root);
	corral_building_ahead = 0;
	corral_ahead_jmp = NULL;
	a->block = block;
	a->len = block_len;
	a->built = 1;
}
