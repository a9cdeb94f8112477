// The sandbox's init (PID 1, init_linux.c), mounts: the new root built
// from the plan's mount records, and the pivot into it.

#include "init_parts.h"

// While the root is built ahead of the plan (corral_mounts_ahead), the init makes
// nothing outside the tmpfs mounts it made itself: a mount point, folder,
// copy, file or symlink in a bound host folder would change the host for
// a root that may never be used, from a cache the plan has not vouched
// for. (The plan's own build may: it makes the mount points of protected
// paths in a writable work dir.) The ahead build then fails, and the
// plan's build does it.
int corral_building_ahead;
#define MAX_OWN_TMPFS 64
static dev_t own_tmpfs[MAX_OWN_TMPFS];
size_t corral_n_own_tmpfs;

// own_tmpfs_mounted records the tmpfs just mounted at path as one the
// init may make things in while building ahead.
static void own_tmpfs_mounted(const char *path) {
	struct stat st;
	if (!corral_building_ahead)
		return;
	if (corral_n_own_tmpfs == MAX_OWN_TMPFS || stat(path, &st) < 0)
		corral_fail("mounts", errno, "more than %d tmpfs mounts, or %s is gone", MAX_OWN_TMPFS, path);
	own_tmpfs[corral_n_own_tmpfs++] = st.st_dev;
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
	for (size_t i = 0; i < corral_n_own_tmpfs; i++)
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
	if (corral_building_ahead) {
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
		corral_fail("mounts", errno, "mkdir %s", path);
	char tmp[4096];
	size_t len = strlen(path);
	if (len >= sizeof tmp)
		corral_fail("mounts", ENAMETOOLONG, "%s", path);
	memcpy(tmp, path, len + 1);
	char *slash = strrchr(tmp, '/');
	if (!slash || slash == tmp)
		corral_fail("mounts", ENOENT, "mkdir %s", path);
	*slash = 0;
	mkdir_p(tmp, mode);
	if (make_at('d', path, 0, mode, NULL) < 0 && errno != EEXIST)
		corral_fail("mounts", errno, "mkdir %s", path);
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

// corral_host_tmp is the host's /tmp, opened before the staging tmpfs covers
// it: a bind source below /tmp looked up after that (to open it again, or
// to see whether it is gone) is looked up from here, not in the staging
// tree.
int corral_host_tmp = -1;

// source_at returns the path to look source up by and sets *dirfd to the
// folder to look it up from.
static const char *source_at(const char *source, int *dirfd) {
	size_t n = strlen(STAGING);
	*dirfd = AT_FDCWD;
	if (corral_host_tmp >= 0 && strncmp(source, STAGING, n) == 0 && (source[n] == '/' || source[n] == 0)) {
		*dirfd = corral_host_tmp;
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

// tmpfs_options are the mount options of the private tmpfs m: /tmp and
// /dev/shm are shared by every process as on any host (sticky, 1777); a
// private HOME is its owner's alone (0700, as ssh and others expect).
static const char *tmpfs_options(const struct mount_step *m) {
	if (read_only_tmpfs(m))
		return "mode=0755";
	if (strcmp(m->target, "/tmp") == 0 || strcmp(m->target, "/dev/shm") == 0)
		return "mode=1777";
	return "mode=0700";
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
		corral_fail("mounts", errno, "opening %s", source);
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		corral_fail("mounts", 0, "%s is not a regular file", source);
	parent_dirs(target);
	int out = make_at('f', target, O_WRONLY | O_EXCL | O_CLOEXEC, 0644, NULL);
	if (out < 0)
		corral_fail("mounts", errno, "creating %s", target);
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			corral_fail("mounts", errno, "reading %s", source);
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0)
				corral_fail("mounts", errno, "writing %s", target);
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
		corral_fail("mounts", errno, "creating %s", target);
	for (size_t off = 0, n = strlen(content); off < n;) {
		ssize_t w = write(out, content + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			corral_fail("mounts", errno, "writing %s", target);
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
		corral_fail("mounts", errno, "statfs %s", target);
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (unsigned long)(st.f_flags & (MS_RDONLY | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME));
	if (m->ro)
		flags |= MS_RDONLY;
	if (m->noexec)
		flags |= MS_NOEXEC;
	if (m->kind != CORRAL_MOUNT_DEV)
		flags |= MS_NODEV;
	if (mount(NULL, target, NULL, flags, NULL) < 0)
		corral_fail("mounts", errno, "remount %s", target);
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
			corral_fail("mounts", errno, "mount_setattr %s", root);
		for (size_t i = 0; i < pl->nmounts; i++) {
			struct mount_step *m = &pl->mounts[i];
			snprintf(target, sizeof target, "%s%s", root, m->target);
			if (is_bound(m) && m->fd >= 0 && !detached(pl, i, target))
				remount(target, m);
		}
		if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755") < 0)
			corral_fail("mounts", errno, "remount new root read-only");
		return;
	}
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		uint64_t set = 0, clr = 0;
		snprintf(target, sizeof target, "%s%s", root, m->target);
		if (is_bound(m) && (m->fd < 0 || detached(pl, i, target)))
			continue;
		if (m->noexec && setattr(target, AT_RECURSIVE, MOUNT_ATTR_NOEXEC, 0) < 0)
			corral_fail("mounts", errno, "mount_setattr noexec %s", m->target);
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
			corral_fail("mounts", errno, "mount_setattr %s", m->target);
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
		corral_fail("mounts", errno, "mount_setattr %s", root);
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		if (!read_only_tmpfs(m))
			continue;
		snprintf(target, sizeof target, "%s%s", root, m->target);
		if (setattr(target, 0, MOUNT_ATTR_RDONLY, 0) < 0)
			corral_fail("mounts", errno, "mount_setattr %s", m->target);
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
	if (corral_building_ahead) {
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
					corral_fail("mounts", errno, "mount point %s", m->target);
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
			corral_fail("mounts", errno, "binding %s", m->target);
		close(m->fd);
		m->fd = cloned ? clone_bind(m) : open_source(m);
		if (m->fd < 0 && errno == ENOENT && ro_above(pl, i))
			return; // removed since the plan, below a read-only folder: narrower
		if (m->fd < 0)
			corral_fail("mounts", errno, "opening %s again (the host replaced it since the plan)", m->source);
	}
}

// ---- fs.deny masks ----

// The masks come from one small read-only tmpfs of the init's own,
// mounted at MASKS in the staging root before anything is bound there
// and gone from it before the pivot: an empty file and an empty folder,
// both mode 000. Each mask is a read-only clone of one of them moved over
// its target, so what the plan denies reads as "permission denied" and
// cannot be written, truncated, renamed or removed (a mount point is
// busy), by any path that reaches it: a symlink, "..", /proc/self/root or
// a hard link (which leads to the mounted-over name as well). Mode 000
// binds the command as root too: it holds no CAP_DAC_OVERRIDE.
#define MASKS "/.corral-masks"
static int mask_fs = -1;    // the masks' tmpfs, O_PATH
static int staging_fd = -1; // the staging tmpfs's root, to remove MASKS from

// masks_prepare mounts the masks' tmpfs when the plan has a mask.
static void masks_prepare(const struct plan *pl) {
	// A build ahead of the plan that failed (longjmp) may have left
	// these set; its fds are closed (corral_drop_ahead).
	mask_fs = staging_fd = -1;
	size_t i = 0;
	while (i < pl->nmounts && pl->mounts[i].kind != CORRAL_MOUNT_MASK)
		i++;
	if (i == pl->nmounts)
		return;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s%s", STAGING, MASKS);
	staging_fd = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (staging_fd < 0 || mkdir(dir, 0700) < 0 ||
	    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=4k,nr_inodes=8") < 0)
		corral_fail("mounts", errno, "mounting the fs.deny masks");
	mask_fs = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = mask_fs < 0 ? -1 : openat(mask_fs, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int f = fd < 0 ? -1 : openat(fd, "f", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0 || fchmod(f, 0) < 0 || mkdirat(fd, "d", 0) < 0 || fchmodat(fd, "d", 0, 0) < 0)
		corral_fail("mounts", errno, "making the fs.deny masks");
	close(f);
	close(fd);
}

// masks_remove takes the masks' tmpfs out of the new root (the clones
// keep it alive) and its mount point with it.
static void masks_remove(void) {
	if (mask_fs < 0)
		return;
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", mask_fs);
	if (umount2(self, MNT_DETACH) < 0)
		corral_fail("mounts", errno, "unmounting the fs.deny masks");
	close(mask_fs);
	mask_fs = -1;
	if (unlinkat(staging_fd, MASKS + 1, AT_REMOVEDIR) < 0)
		corral_fail("mounts", errno, "removing %s", MASKS);
	close(staging_fd);
	staging_fd = -1;
}

// place_mask moves a read-only clone of the empty file (or folder) over
// target, opened without following any symlink (a folder on the way the
// host or another run swapped for a link since the walk would move the
// mask elsewhere). A target removed, linked or changed between file and
// folder since the plan fails the run: a mask left out is a denied path
// the command could read. (open_tree and mount_setattr are older than
// Landlock, which every tier needs, so there is no legacy path here.)
static void place_mask(const struct mount_step *m, const char *target) {
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW, .resolve = RESOLVE_NO_SYMLINKS};
	int t = (int)syscall(SYS_openat2, AT_FDCWD, target, &how, sizeof how);
	struct stat st;
	if (t < 0 || fstat(t, &st) < 0)
		corral_fail("mounts", errno, "fs.deny mask over %s (it existed, without symlinks, when the plan was built)", m->target);
	if (!!S_ISDIR(st.st_mode) != !!m->dir || S_ISLNK(st.st_mode))
		corral_fail("mounts", 0, "fs.deny mask over %s: it changed type since the plan", m->target);
	if (mask_fs < 0)
		corral_fail("mounts", 0, "fs.deny mask over %s without the masks' tmpfs", m->target);
	int clone = (int)syscall(SYS_open_tree, mask_fs, m->dir ? "d" : "f", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (clone < 0)
		corral_fail("mounts", errno, "open_tree for the fs.deny mask over %s", m->target);
	struct mount_attr_v0 ro = {MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0, 0, 0};
	if (syscall(SYS_mount_setattr, clone, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0)
		corral_fail("mounts", errno, "making the fs.deny mask over %s read-only", m->target);
	if (syscall(SYS_move_mount, clone, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		corral_fail("mounts", errno, "placing the fs.deny mask over %s", m->target);
	close(clone);
	close(t);
}

// corral_setup_staging builds, on a tmpfs over /tmp, a new root holding only the
// plan's mounts (corral_enter_root pivots into it). Bind sources are opened
// first, so the staging tmpfs cannot hide a work dir under /tmp.
void corral_setup_staging(struct plan *pl) {
	char target[4096];
	int cloned = !corral_legacy_mounts; // binds are detached copies with their flags set
	if (corral_building_ahead && !cloned)
		corral_fail("mounts", 0, "legacy mounts are not built ahead");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		corral_fail("mounts", errno, "making / private");
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		if (!is_bound(m))
			continue;
		if (cloned) {
			m->fd = clone_bind(m);
			if (m->fd < 0 && errno == ENOSYS && corral_building_ahead)
				corral_fail("mounts", ENOSYS, "open_tree");
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
			corral_fail("mounts", errno, "opening %s", m->source);
	}
	corral_host_tmp = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (corral_mount_pause_us)
		usleep((useconds_t)corral_mount_pause_us);
	if (mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		corral_fail("mounts", errno, "mounting the new root");
	own_tmpfs_mounted(STAGING);
	masks_prepare(pl);
	for (size_t i = 0; i < pl->nmounts; i++) {
		struct mount_step *m = &pl->mounts[i];
		struct stat st;
		if ((size_t)snprintf(target, sizeof target, "%s%s", STAGING, m->target) >= sizeof target)
			corral_fail("mounts", ENAMETOOLONG, "%s", m->target);
		switch (m->kind) {
		case CORRAL_MOUNT_TMPFS:
			mkdir_p(target, 0755);
			if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | (m->noexec ? MS_NOEXEC : 0),
				  tmpfs_options(m)) < 0)
				corral_fail("mounts", errno, "tmpfs on %s", m->target);
			own_tmpfs_mounted(target);
			break;
		case CORRAL_MOUNT_PROC:
			mkdir_p(target, 0555);
			if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				corral_fail("mounts", errno, "proc on %s", m->target);
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
				corral_fail("mounts", errno, "symlink %s", m->target);
			break;
		case CORRAL_MOUNT_BIND:
		case CORRAL_MOUNT_DEV:
			if (m->fd >= 0)
				place_bind(pl, i, target, cloned);
			break;
		case CORRAL_MOUNT_MASK:
			place_mask(m, target);
			break;
		default:
			corral_fail("mounts", 0, "unknown mount kind %c", m->kind);
		}
	}
	masks_remove();
	if (cloned)
		set_root_flags(STAGING, pl);
	else
		set_flags(STAGING, pl);
	for (size_t i = 0; i < pl->nmounts; i++)
		if (pl->mounts[i].fd >= 0)
			close(pl->mounts[i].fd);
	if (corral_host_tmp >= 0)
		close(corral_host_tmp); // nothing of the host's stays open in PID 1
	corral_host_tmp = -1;

}

// corral_enter_root pivots into the new root and detaches the old one.
void corral_enter_root(void) {
	if (chdir(STAGING) < 0)
		corral_fail("mounts", errno, "chdir new root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		corral_fail("mounts", errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		corral_fail("mounts", errno, "detaching the old root");
	if (chdir("/") < 0)
		corral_fail("mounts", errno, "chdir /");
}
