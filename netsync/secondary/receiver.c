/*
 * receiver — the secondary's apply engine: turns OP/DATA/ATTR frames into
 * changes of the store and BATCH_END into durability + STATE/applied.
 * Owns the store root fd, a small cache of fds of files being written and
 * the applied/dirty state. Runs on the serve event loop only. Never
 * resolves a network path except through path_resolve() (no escapes,
 * no symlinks followed) and never follows the final component.
 */
#include "netsync/secondary/receiver.h"
#include "netsync/secondary/storeops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/log.h"
#include "netsync/wire/limits.h"
#include "netsync/wire/path.h"
#include "common/pathset.h"
#include "netsync/secondary/linkclaim.h"
#include "netsync/roles/state.h"

#define RECV_FD_CACHE 8
/* A batch's touch set holds at most this many files/directories (each a
 * dup'ed fd), at most limits_touch_max() under a low open-file limit; a
 * fuller one is fsynced early (receiver_set_spill): never a syncfs. */
#define RECV_TOUCH_MAX SYNCER_FSYNC_MAX
/* Open-addressing index over touch_keys (a power of two, at most half
 * full), so that telling whether an inode is touched already costs the
 * same at 4,000 files as at 4. */
#define RECV_TOUCH_HASH (2 * RECV_TOUCH_MAX)

/*
 * Early writeback. A DATA block is only pwritten; it becomes durable at
 * its batch's end (fsync or syncfs on the syncer thread). Left alone, the
 * kernel keeps up to dirty_background_ratio of RAM of it in the page
 * cache, and the batch-end fsync of a large file wrote it in one go while
 * the sender's window was full (docs/benchmarks.md, "The peer's
 * writeback"). So every RECV_WB_CHUNK bytes written contiguously to one
 * file go to the disk at once with sync_file_range(WRITE), which does not
 * wait: the disk streams while data arrives. No durability claim (the
 * fsync decides); small files are left to the batch-end sync. The chunk
 * is one DATA block (1 MiB): a read on a shared disk queues behind the
 * writes already handed to it.
 */
#define RECV_WB_CHUNK PROTO_BLOCK_SIZE

/*
 * Dropping what is on disk. This node never reads the replica's pages
 * (until a failover, when they come from disk like any cold file), yet
 * each new page-cache page costs CPU on the one thread that applies the
 * stream: it is allocated, charged, later reclaimed, and on a VM with free
 * page reporting a page the host took back faults on first touch
 * (docs/benchmarks.md, "The peer's writeback"). So during a long
 * contiguous run of writes to one file, the pages more than RECV_DROP_LAG
 * behind the last writeback kick are dropped (POSIX_FADV_DONTNEED) once
 * written back (sync_file_range WAIT_BEFORE, rarely blocking: started
 * RECV_DROP_LAG ago). Freed pages are reused by the next writes, hot.
 * Dirty pages are never dropped; the batch end still fsyncs the file.
 * Shorter runs (small files, scattered writes) keep their pages.
 */
#define RECV_DROP_LAG (8u << 20)

struct recv_fd {
	char *path;	/* NULL: free slot */
	int fd;
	uint64_t used;	/* LRU tick */
	uint64_t wb_off, wb_end;	/* written since the last writeback kick */
	uint64_t drop_off;	/* pages of this run before it are dropped */
	uint64_t touched;	/* touch_gen its inode was put in the touch set */
	/* made here (O_EXCL), no xattr set since: none to remove (a keep-list
	 * REMOVEXATTR after its CREATE) but an ACL its folder's default gave */
	bool fresh;
};

struct receiver {
	int rootfd;		/* O_RDONLY|O_DIRECTORY on the store root */
	char *state_dir;
	struct receiver_stats st;
	struct recv_fd fds[RECV_FD_CACHE];
	uint64_t tick;
	/* the parent directory resolved last (see recv_resolve) */
	char dir_path[PROTO_PATH_MAX + 1];
	int dir_fd;		/* -1: none */
	uint64_t dir_touched;	/* touch_gen dir_fd's inode was put in the touch set */
	bool is_root;		/* may chown */
	bool ns_flush;		/* drop the caches once this op is done */
	bool replay;		/* started dirty: re-applying a half-applied batch */
	uint64_t replay_seal;	/* the whole-fs seal that ends the replay (0: none yet) */
	uint64_t split_own;	/* in a split stream: this node's own applied seq */
	struct state_applied *applied;	/* STATE/applied */
	bool changed;		/* something was applied since the last seal */
	uint64_t sealed;	/* highest BATCH_END seq sealed */
	/* what the changes since the last seal touched (fds to fsync) */
	struct sync_set touch;
	/* Bumped each time the touch set is handed off. A slot (or the
	 * cached directory) whose `touched` equals it is in the current set:
	 * the per-op check then costs no fcntl + fstat (see recv_touch_slot) */
	uint64_t touch_gen;
	receiver_spill_fn spill;	/* where a full touch set goes (NULL: fsync here) */
	void *spill_arg;
	struct { dev_t dev; ino_t ino; } touch_keys[RECV_TOUCH_MAX];
	size_t touch_max;	/* limits_touch_max(), at most RECV_TOUCH_MAX */
	uint32_t touch_idx[RECV_TOUCH_HASH];	/* 1 + index into touch_keys; 0: free */
	char failed[PROTO_PATH_MAX + 1];
	/* PRUNE frames of one directory so far (see receiver_prune) */
	char *prune_path;	/* NULL: none open */
	struct pathset prune_keep;
	struct linkclaim claims;	/* inodes this batch's CREATEs wrote */
};

int receiver_open(const char *store_dir, const char *state_dir, struct receiver **out)
{
	struct receiver *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->rootfd = open(store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->rootfd < 0) {
		rc = -errno;
		goto out_free;
	}
	r->is_root = geteuid() == 0;
	r->dir_fd = -1;
	r->touch_gen = 1;	/* slots start at 0: not in the set */
	r->touch_max = limits_touch_max();
	if (r->touch_max > RECV_TOUCH_MAX)
		r->touch_max = RECV_TOUCH_MAX;
	if (!state_dir) {
		/* a mirror session: no STATE/applied, no seqs to keep; its
		 * end is made durable by one syncfs (receiver.h) */
		r->st.dirty = true;
		r->touch.whole_fs = true;
		*out = r;
		return 0;
	}
	r->state_dir = strdup(state_dir);
	if (!r->state_dir) {
		rc = -ENOMEM;
		goto out_close;
	}
	rc = state_applied_open(state_dir, &r->applied, &r->st.applied_seq, &r->st.dirty);
	if (rc < 0)
		goto out_strdup;
	r->replay = r->st.dirty;
	*out = r;
	return 0;

out_strdup:
	free(r->state_dir);
out_close:
	close(r->rootfd);
out_free:
	free(r);
	return rc;
}

static void recv_fd_flush(struct receiver *r)
{
	for (int i = 0; i < RECV_FD_CACHE; i++) {
		if (!r->fds[i].path)
			continue;
		close(r->fds[i].fd);
		free(r->fds[i].path);
		r->fds[i].path = NULL;
	}
}

/*
 * Per-file cost on the receiver. A small file arrives as CREATE, often a
 * SETXATTR and a SETATTR (cp -a), DATA and ATTR: five frames naming the
 * same path. Resolving the parent for each (openat2 + close), opening the
 * file again for the data, and setting owner/mode/times by name (mode
 * through an O_PATH fd and /proc, since fchmodat cannot refuse to follow a
 * symlink) cost ~45 syscalls per file (docs/benchmarks.md, "serve's
 * reads"). So the receiver keeps the last parent directory fd and the fds
 * of files it created or wrote (recv_fd) across frames, and sets metadata
 * of a regular file it holds open through that fd (fchown, fchmod,
 * futimens, fsetxattr). Both caches are by path, so every op that can
 * change what a path names (rename, unlink, rmdir, link, mknod, symlink,
 * mkdir, and a create that had to remove something in its way) drops them
 * first (recv_ns_changed).
 */
static void recv_ns_changed(struct receiver *r)
{
	recv_fd_flush(r);
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	r->dir_fd = -1;
	r->dir_touched = 0;
	r->dir_path[0] = '\0';
}

/* path_resolve, with the parent directory fd kept for the next call: the
 * returned ref never owns its fd (path_put is harmless). */
static int recv_resolve(struct receiver *r, const char *path, bool allow_root,
			struct path_ref *ref)
{
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;
	int rc;

	if (slash && r->dir_fd >= 0 && strlen(r->dir_path) == plen &&
	    memcmp(r->dir_path, path, plen) == 0) {
		rc = path_check(path, allow_root);
		if (rc < 0)
			return rc;
		ref->dirfd = r->dir_fd;
		ref->owned = false;
		ref->name = slash + 1;
		return 0;
	}
	rc = path_resolve(r->rootfd, path, allow_root, ref);
	if (rc < 0 || !ref->owned)
		return rc;
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	r->dir_fd = ref->dirfd;
	r->dir_touched = 0;
	memcpy(r->dir_path, path, plen);
	r->dir_path[plen] = '\0';
	ref->owned = false;
	return 0;
}

static struct recv_fd *recv_fd_find(struct receiver *r, const char *path)
{
	for (int i = 0; i < RECV_FD_CACHE; i++)
		if (r->fds[i].path && strcmp(r->fds[i].path, path) == 0)
			return &r->fds[i];
	return NULL;
}

static int recv_touch_spill(struct receiver *r);

void receiver_reset(struct receiver *r)
{
	recv_ns_changed(r);
	/* a PRUNE list cut short by the old connection */
	free(r->prune_path);
	r->prune_path = NULL;
	pathset_clear(&r->prune_keep);
	linkclaim_clear(&r->claims);
	/* The files the gone connection touched are handed to be fsynced
	 * now instead of held open until another connection's seal: the fds
	 * held on behalf of a peer end with it. Syncing early never weakens
	 * the next seal; if the hand-off fails, that seal syncs the whole
	 * filesystem instead. */
	if ((r->touch.n || r->touch.whole_fs) && recv_touch_spill(r) < 0)
		r->touch.whole_fs = true;
}

void receiver_forget(struct receiver *r)
{
	recv_ns_changed(r);
}

void receiver_close(struct receiver *r)
{
	if (!r)
		return;
	recv_ns_changed(r);
	free(r->prune_path);
	pathset_clear(&r->prune_keep);
	linkclaim_clear(&r->claims);
	sync_set_free(&r->touch);
	state_applied_close(r->applied);
	close(r->rootfd);
	free(r->state_dir);
	free(r);
}

void receiver_get_stats(const struct receiver *r, struct receiver_stats *st)
{
	*st = r->st;
}

const char *receiver_failed_path(const struct receiver *r)
{
	return r->failed;
}

static int recv_fail(struct receiver *r, const char *path, int rc)
{
	snprintf(r->failed, sizeof(r->failed), "%s", path ? path : "");
	return rc;
}

/*
 * Crash safety. Replaying a partly applied batch is not always exact
 * (rename a->b then create a, replayed, moves the new a over b), so
 * before the first change after a durable point we record "dirty" in
 * STATE/applied, durably. A secondary that comes back dirty says so in
 * its HELLO and the primary re-sends those paths' full state instead of
 * only replaying (docs/protocol.md, "Ordering, idempotence and resume").
 * Cost: one small fsync per batch, next to the syncfs the batch needs
 * anyway.
 */
static int recv_begin_change(struct receiver *r)
{
	int rc;

	r->changed = true;
	if (r->st.dirty)
		return 0;
	rc = state_applied_put(r->applied, r->st.applied_seq, true);
	if (rc < 0) {
		log_error("cannot record the start of a batch in the state directory",
			  "state=%s err=\"%s\"", r->state_dir, strerror(-rc));
		return rc;
	}
	r->st.dirty = true;
	return 0;
}

/* Moves the touch set into SET and starts an empty one (and index). */
static void recv_touch_take(struct receiver *r, struct sync_set *set)
{
	*set = r->touch;
	memset(&r->touch, 0, sizeof(r->touch));
	memset(r->touch_idx, 0, sizeof(r->touch_idx));
	r->touch_gen++;
}

void receiver_set_spill(struct receiver *r, receiver_spill_fn fn, void *arg)
{
	r->spill = fn;
	r->spill_arg = arg;
}

/*
 * The touch set is full (RECV_TOUCH_MAX) before its batch ends: hand it
 * off to be fsynced now and start an empty one. It used to fall back to
 * one syncfs at the seal instead, and a batch gets that big exactly when
 * the peer lags (the sender takes everything since its last batch): on a
 * disk shared with the primary, that syncfs also wrote the primary's
 * dirty data and the peer lagged further. Returns 0 or -errno.
 */
static int recv_touch_spill(struct receiver *r)
{
	struct sync_set set;
	int rc;

	recv_touch_take(r, &set);
	rc = r->spill ? r->spill(&set, r->spill_arg) : sync_set_run(&set, r->rootfd);
	sync_set_free(&set);	/* left over only if the hand-off failed */
	return rc;
}

/* Adds the inode open on FD to what the next seal must fsync (a dup of
 * FD is kept). Falls back to a whole-filesystem sync when FD cannot be
 * fsynced (O_PATH), fds run out or a full set cannot be handed off. */
static void recv_touch(struct receiver *r, int fd)
{
	struct sync_set *t = &r->touch;
	struct stat st;
	int flags, dfd;
	uint32_t h0, h;

	if (t->whole_fs)
		return;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_PATH) || fstat(fd, &st) < 0)
		goto out_whole;
	/* fsync of a fifo or device is EINVAL or syncs the device, not the
	 * inode: those (rare) batches take the syncfs */
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		goto out_whole;
	h0 = (uint32_t)(((uint64_t)st.st_ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)st.st_dev) >> 40) &
	     (RECV_TOUCH_HASH - 1);
	for (h = h0; r->touch_idx[h]; h = (h + 1) & (RECV_TOUCH_HASH - 1)) {
		uint32_t i = r->touch_idx[h] - 1;

		if (r->touch_keys[i].ino == st.st_ino && r->touch_keys[i].dev == st.st_dev)
			return;
	}
	if (t->n >= r->touch_max) {
		if (recv_touch_spill(r) < 0)
			goto out_whole;
		h = h0;		/* the index is empty now */
	}
	if (!t->fds) {
		t->fds = malloc(RECV_TOUCH_MAX * sizeof(*t->fds));
		if (!t->fds)
			goto out_whole;
	}
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		goto out_whole;
	r->touch_keys[t->n].dev = st.st_dev;
	r->touch_keys[t->n].ino = st.st_ino;
	t->fds[t->n++] = dfd;
	r->touch_idx[h] = (uint32_t)t->n;
	return;
out_whole:
	sync_set_free(t);
	t->whole_fs = true;
}

/* Touches NAME in DIRFD itself if it is a regular file or a directory
 * (opened to be fsynced), its directory for a symlink (whose owner and
 * times ride on the directory's journal commit, as before), and the whole
 * filesystem for a fifo, socket or device node: those are never opened
 * (a fifo blocks, a device open has side effects) and fsync cannot reach
 * their inode. */
static void recv_touch_name(struct receiver *r, int dirfd, const char *name)
{
	struct stat st;
	int fd;

	if (r->touch.whole_fs)
		return;		/* a syncfs covers it: no need to open it */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode)) {
		recv_touch(r, dirfd);
		return;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		sync_set_free(&r->touch);
		r->touch.whole_fs = true;
		return;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
	if (fd < 0) {
		recv_touch(r, dirfd);
		return;
	}
	recv_touch(r, fd);	/* replaced meanwhile by a fifo: whole fs */
	close(fd);
}

/* recv_touch once per touch set for an fd that remembers the set's
 * generation in *TOUCHED: a cache slot's file (a small file gets a CREATE,
 * SETATTR, SETXATTR, DATA and ATTR, and each asked fcntl + fstat whether
 * its inode was in the set already) or the cached parent directory. */
static void recv_touch_once(struct receiver *r, int fd, uint64_t *touched)
{
	if (*touched == r->touch_gen)
		return;
	recv_touch(r, fd);
	*touched = r->touch_gen;	/* after a spill, the new set's */
}

static void recv_touch_slot(struct receiver *r, struct recv_fd *slot)
{
	recv_touch_once(r, slot->fd, &slot->touched);
}

/* A resolved parent directory: only the cached one (recv_resolve)
 * remembers being touched. */
static void recv_touch_dir(struct receiver *r, int dirfd)
{
	if (dirfd == r->dir_fd)
		recv_touch_once(r, dirfd, &r->dir_touched);
	else
		recv_touch(r, dirfd);
}

/* Drops the pages of SLOT's current run that lie more than RECV_DROP_LAG
 * behind its last writeback kick (see "Dropping what is on disk"). */
static void recv_drop_behind(struct recv_fd *slot)
{
	uint64_t upto;

	if (slot->wb_off - slot->drop_off < RECV_DROP_LAG + RECV_WB_CHUNK)
		return;
	upto = slot->wb_off - RECV_DROP_LAG;
	/* best effort, like the kick: neither call can lose data */
	(void)sync_file_range(slot->fd, (off64_t)slot->drop_off,
			      (off64_t)(upto - slot->drop_off), SYNC_FILE_RANGE_WAIT_BEFORE);
	(void)posix_fadvise(slot->fd, (off_t)slot->drop_off, (off_t)(upto - slot->drop_off),
			    POSIX_FADV_DONTNEED);
	slot->drop_off = upto;
}

/* Writes back what SLOT's file got since the last kick (see
 * RECV_WB_CHUNK); [off, off + len) was just written. */
static void recv_writeback(struct recv_fd *slot, uint64_t off, uint64_t len)
{
	if (slot->wb_end != off) {
		/* not contiguous: start a new run */
		slot->wb_off = slot->wb_end = slot->drop_off = off;
	}
	slot->wb_end += len;
	if (slot->wb_end - slot->wb_off < RECV_WB_CHUNK)
		return;
	/* best effort: an error here shows up in the batch-end fsync */
	(void)sync_file_range(slot->fd, (off64_t)slot->wb_off,
			      (off64_t)(slot->wb_end - slot->wb_off), SYNC_FILE_RANGE_WRITE);
	slot->wb_off = slot->wb_end;
	recv_drop_behind(slot);
}

/* Puts FD (a regular file open for writing, named PATH) in a free or
 * the least recently used slot. On failure FD is closed. */
static int recv_fd_adopt(struct receiver *r, const char *path, int fd,
			 struct recv_fd **out)
{
	struct recv_fd *slot = &r->fds[0];
	char *copy = strdup(path);

	if (!copy) {
		close(fd);
		return -ENOMEM;
	}
	for (int i = 0; i < RECV_FD_CACHE; i++)
		if (!r->fds[i].path || (slot->path && r->fds[i].used < slot->used))
			slot = &r->fds[i];
	if (slot->path) {
		close(slot->fd);
		free(slot->path);
	}
	slot->path = copy;
	slot->fd = fd;
	slot->used = ++r->tick;
	slot->wb_off = slot->wb_end = slot->drop_off = 0;
	slot->touched = 0;
	slot->fresh = false;
	if (out)
		*out = slot;
	return 0;
}

/* Opens (or finds in the cache) PATH for writing, creating it with mode
 * 0600 if missing (its OP CREATE may have been skipped in a resync; the
 * ATTR that follows sets the real mode). Never follows a symlink. */
static int recv_open_slot(struct receiver *r, const char *path, struct recv_fd **out)
{
	struct path_ref ref;
	struct recv_fd *slot = recv_fd_find(r, path);
	bool made;
	int fd, rc;

	if (slot) {
		slot->used = ++r->tick;
		*out = slot;
		return 0;
	}
	rc = recv_resolve(r, path, false, &ref);
	if (rc < 0)
		return rc;
	fd = storeops_open_reg(ref.dirfd, ref.name, 0600, &made);
	path_put(&ref);
	if (fd < 0)
		return fd;
	rc = recv_fd_adopt(r, path, fd, out);
	if (rc == 0)
		(*out)->fresh = made;
	return rc;
}

static int recv_chown(struct receiver *r, int dirfd, const char *name,
		      uid_t uid, gid_t gid)
{
	if (fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == EPERM && !r->is_root)
			return 0;	/* unprivileged serve: owners are not kept */
		return -errno;
	}
	return 0;
}

/* Sets owner, mode and times of NAME as MASK says; size is done by the
 * caller. Order: owner first (chown clears set-id bits), then mode, then
 * times (last, so nothing moves them afterwards). STATE (an ATTR frame:
 * a state, not a call) leaves a right owner alone: any chown drops file
 * capabilities, which the xattrs sent before it (walks, mirror) set. */
static int recv_set_meta(struct receiver *r, int dirfd, const char *name,
			 uint32_t mask, uint32_t mode, uint32_t uid, uint32_t gid,
			 const struct timespec *atime, const struct timespec *mtime, bool state)
{
	struct stat st;
	int rc;

	if ((mask & (JATTR_UID | JATTR_GID)) && state &&
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (!(mask & JATTR_UID) || st.st_uid == uid) && (!(mask & JATTR_GID) || st.st_gid == gid))
		mask &= ~(uint32_t)(JATTR_UID | JATTR_GID);
	if (mask & (JATTR_UID | JATTR_GID)) {
		rc = recv_chown(r, dirfd, name, (mask & JATTR_UID) ? uid : (uid_t)-1,
				(mask & JATTR_GID) ? gid : (gid_t)-1);
		if (rc < 0)
			return rc;
	}
	if (mask & JATTR_MODE) {
		rc = storeops_chmod(dirfd, name, mode);
		if (rc < 0)
			return rc;
	}
	if (mask & (JATTR_ATIME | JATTR_MTIME)) {
		struct timespec ts[2] = {
			(mask & JATTR_ATIME) ? *atime : (struct timespec){ 0, UTIME_OMIT },
			(mask & JATTR_MTIME) ? *mtime : (struct timespec){ 0, UTIME_OMIT },
		};

		if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	return 0;
}

/* recv_set_meta for a regular file the receiver holds open (FD). ST is
 * its fstat if the caller has one (else NULL). Owner and mode that are
 * already right are left alone: every new file gets both at its CREATE
 * and again in the ATTR after its data, and each change dirties the
 * inode; one fstat is cheaper. A chown may clear set-id bits, so after
 * one the mode is always set. Not STATE (a SETATTR the primary's store
 * ran): its chown runs, as it did there, and drops what it dropped. */
static int recv_set_meta_fd(struct receiver *r, int fd, const struct stat *st,
			    uint32_t mask, uint32_t mode, uint32_t uid, uint32_t gid,
			    const struct timespec *atime, const struct timespec *mtime, bool state)
{
	struct stat own;
	bool chowned = false;

	if (!st && (mask & (JATTR_UID | JATTR_GID | JATTR_MODE | JATTR_ATIME | JATTR_MTIME)) &&
	    fstat(fd, &own) == 0)
		st = &own;
	if (mask & (JATTR_UID | JATTR_GID)) {
		uid_t u = (mask & JATTR_UID) ? uid : (uid_t)-1;
		gid_t g = (mask & JATTR_GID) ? gid : (gid_t)-1;

		if (!state || !st || (u != (uid_t)-1 && u != st->st_uid) ||
		    (g != (gid_t)-1 && g != st->st_gid)) {
			if (fchown(fd, u, g) < 0 && !(errno == EPERM && !r->is_root))
				return -errno;
			chowned = true;
		}
	}
	if ((mask & JATTR_MODE) &&
	    (!st || chowned || (st->st_mode & 07777) != (mode & 07777)) &&
	    fchmod(fd, mode & 07777) < 0)
		return -errno;
	/* Times it has already are not set again: that would only move its
	 * ctime, the hash cache's key for the file. When both times come
	 * (the state after a file's data) and mtime matches, a differing
	 * atime alone is left too: reads move it on either side (treecmp's,
	 * a backup's), it is not part of what a replica must equal, and
	 * setting it would make every resync re-read the file. */
	if ((mask & (JATTR_ATIME | JATTR_MTIME)) &&
	    !(st && ((mask & JATTR_MTIME) ? storeops_ts_same(&st->st_mtim, mtime) :
		     storeops_ts_same(&st->st_atim, atime)))) {
		struct timespec ts[2] = {
			(mask & JATTR_ATIME) ? *atime : (struct timespec){ 0, UTIME_OMIT },
			(mask & JATTR_MTIME) ? *mtime : (struct timespec){ 0, UTIME_OMIT },
		};

		if (futimens(fd, ts) < 0)
			return -errno;
	}
	return 0;
}


/*
 * CREATE makes a new file (the primary's fs records it only for a name
 * that did not exist; a walk or a scan sends it for a file it sends
 * whole). A regular file at PATH that has other names here is another
 * inode's name (a link this store kept that the primary's no longer has,
 * replaced there by a file of its own): writing the new content into it
 * would change every other name too. So that name is unlinked and the
 * file made anew; a cached fd of the old inode goes once the op is done,
 * and a LINK that should follow links the new one. Unless the primary's
 * file has other names too (JCREATE_F_LINKED, a walk or scan re-sending
 * one name of a linked file): then the file here is written in place and
 * its links stay, unless this batch already wrote that inode under another
 * name (linkclaim_other_at: the primary's names are two files now).
 */
static int recv_create(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	struct recv_fd *slot = recv_fd_find(r, op->path);
	bool keep = true, made = false;
	struct stat st;
	int fd, rc;

	if (storeops_is_shared(ref->dirfd, ref->name) &&
	    (!(op->flags & JCREATE_F_LINKED) ||
	     linkclaim_other_at(&r->claims, ref->dirfd, ref->name, op->path))) {
		r->ns_flush = true;
		if (unlinkat(ref->dirfd, ref->name, 0) < 0 && errno != ENOENT)
			return -errno;
		slot = NULL;
		keep = false;
	}
	if (slot) {
		fd = slot->fd;	/* the same inode an O_CREAT open would give */
		slot->used = ++r->tick;
		goto out_meta;
	}
	fd = storeops_open_reg(ref->dirfd, ref->name, op->mode & 07777, &made);
	if (fd == -EISDIR || fd == -ELOOP) {
		/* something else (a symlink, fifo, device, empty dir) is in
		 * the way; removing it may change what a cached path names */
		r->ns_flush = true;
		keep = false;
		rc = storeops_remove(ref->dirfd, ref->name);
		if (rc < 0)
			return rc;
		fd = storeops_open_reg(ref->dirfd, ref->name, op->mode & 07777, &made);
	}
	if (fd < 0)
		return fd;
out_meta:
	if (fstat(fd, &st) == 0)
		(void)linkclaim_note(&r->claims, &st, op->path);	/* best effort */
	rc = recv_set_meta_fd(r, fd, NULL, JATTR_UID | JATTR_GID | JATTR_MODE, op->mode,
			      op->uid, op->gid, NULL, NULL, true);
	if (slot) {
		if (rc == 0)
			recv_touch_slot(r, slot);	/* owner, mode */
		return rc;
	}
	if (rc == 0)
		recv_touch(r, fd);
	if (!keep || rc < 0) {
		close(fd);
		return rc;
	}
	/* without a cache slot it is only reopened for its data */
	if (recv_fd_adopt(r, op->path, fd, &slot) == 0) {
		slot->touched = r->touch_gen;
		slot->fresh = made;
	}
	return 0;
}

static int recv_mkdir(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	struct stat st;

	if (mkdirat(ref->dirfd, ref->name, op->mode & 07777) < 0) {
		if (errno != EEXIST)
			return -errno;
		if (fstatat(ref->dirfd, ref->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode)) {
			int rc = storeops_remove(ref->dirfd, ref->name);

			if (rc < 0)
				return rc;
			if (mkdirat(ref->dirfd, ref->name, op->mode & 07777) < 0)
				return -errno;
		}
	}
	return recv_set_meta(r, ref->dirfd, ref->name, JATTR_UID | JATTR_GID | JATTR_MODE,
			     op->mode, op->uid, op->gid, NULL, NULL, false);
}

/*
 * MKNOD and SYMLINK make a new inode, as CREATE does (recv_create): a node
 * here with other names is another inode's name unless the primary's has
 * other names too (JCREATE_F_LINKED), so it is unlinked first; keeping it
 * would give the new node's owner and times to every other name of the
 * old one, and leave this name in the old one's link group. Returns 0 or
 * -errno.
 */
static int recv_unshare(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	if ((op->flags & JCREATE_F_LINKED) || !storeops_is_shared(ref->dirfd, ref->name))
		return 0;
	r->ns_flush = true;
	return unlinkat(ref->dirfd, ref->name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static int recv_mknod(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	struct stat st;
	mode_t type = op->mode & S_IFMT;
	int rc;

	if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
		return -EINVAL;
	rc = recv_unshare(r, ref, op);
	if (rc < 0)
		return rc;
	if (mknodat(ref->dirfd, ref->name, op->mode, (dev_t)op->rdev) < 0) {
		if (errno != EEXIST)
			return -errno;
		if (fstatat(ref->dirfd, ref->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if ((st.st_mode & S_IFMT) != type ||
		    ((type == S_IFCHR || type == S_IFBLK) && st.st_rdev != op->rdev)) {
			rc = storeops_remove(ref->dirfd, ref->name);
			if (rc < 0)
				return rc;
			if (mknodat(ref->dirfd, ref->name, op->mode, (dev_t)op->rdev) < 0)
				return -errno;
		}
	}
	return recv_set_meta(r, ref->dirfd, ref->name, JATTR_UID | JATTR_GID | JATTR_MODE,
			     op->mode, op->uid, op->gid, NULL, NULL, false);
}

static int recv_symlink(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	char cur[PATH_MAX];
	ssize_t n;
	int rc;

	if (!op->path2)
		return -EINVAL;
	rc = recv_unshare(r, ref, op);
	if (rc < 0)
		return rc;
	if (symlinkat(op->path2, ref->dirfd, ref->name) < 0) {
		if (errno != EEXIST)
			return -errno;
		n = readlinkat(ref->dirfd, ref->name, cur, sizeof(cur) - 1);
		if (n >= 0) {
			cur[n] = '\0';
			if (strcmp(cur, op->path2) == 0)
				goto out_owner;
		}
		rc = storeops_remove(ref->dirfd, ref->name);
		if (rc < 0)
			return rc;
		if (symlinkat(op->path2, ref->dirfd, ref->name) < 0)
			return -errno;
	}
out_owner:
	return recv_set_meta(r, ref->dirfd, ref->name, JATTR_UID | JATTR_GID, 0,
			     op->uid, op->gid, NULL, NULL, false);
}

/* Sets the results of OP: the entries at path (in DIRFD/NAME) and path2
 * (DIRFD2/NAME2), then their directories. Returns 0 or -errno. */
static int recv_results(const struct journal_op *op, int dirfd, const char *name,
			int dirfd2, const char *name2)
{
	int rc = 0;

	if (!op->res_mask)
		return 0;
	if ((op->res_mask & JRES_BIT(JRES_PATH)) && name)
		rc = storeops_set_mtime(dirfd, name, &op->res_mtime[JRES_PATH]);
	if (rc == 0 && (op->res_mask & JRES_BIT(JRES_PATH2)) && name2)
		rc = storeops_set_mtime(dirfd2, name2, &op->res_mtime[JRES_PATH2]);
	if (rc == 0 && (op->res_mask & JRES_BIT(JRES_DIR)) && dirfd >= 0)
		rc = storeops_set_mtime(dirfd, NULL, &op->res_mtime[JRES_DIR]);
	if (rc == 0 && (op->res_mask & JRES_BIT(JRES_DIR2)) && dirfd2 >= 0)
		rc = storeops_set_mtime(dirfd2, NULL, &op->res_mtime[JRES_DIR2]);
	return rc;
}

/* LINK and RENAME name two paths; both are resolved beneath the root. */
static int recv_two(struct receiver *r, const struct journal_op *op,
		    struct path_ref *from, struct path_ref *to)
{
	int rc;

	if (!op->path2)
		return recv_fail(r, op->path, -EINVAL);
	rc = path_resolve(r->rootfd, op->path, false, from);
	if (rc < 0)
		return recv_fail(r, op->path, rc);
	rc = path_resolve(r->rootfd, op->path2, false, to);
	if (rc < 0) {
		path_put(from);
		return recv_fail(r, op->path2, rc);
	}
	return 0;
}

static int recv_link(struct receiver *r, const struct journal_op *op)
{
	struct path_ref from, to;
	struct stat a, b;
	int rc = recv_two(r, op, &from, &to);

	if (rc < 0)
		return rc;
	if (linkat(from.dirfd, from.name, to.dirfd, to.name, 0) == 0)
		goto out_put;
	rc = -errno;
	if (rc == -EEXIST && storeops_exists(from.dirfd, from.name, &a) &&
	    storeops_exists(to.dirfd, to.name, &b)) {
		if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			rc = 0;		/* already linked */
		} else {
			rc = storeops_remove(to.dirfd, to.name);
			if (rc == 0 && linkat(from.dirfd, from.name, to.dirfd, to.name, 0) < 0)
				rc = -errno;
		}
	} else if (rc == -ENOENT && !storeops_exists(from.dirfd, from.name, &a) &&
		   storeops_exists(to.dirfd, to.name, &b)) {
		rc = 0;		/* replay: the source went away later */
	}
	if (rc < 0)
		recv_fail(r, op->path2, rc);
out_put:
	if (rc == 0) {
		rc = recv_results(op, -1, NULL, to.dirfd, to.name);
		if (rc < 0)
			recv_fail(r, op->path2, rc);
	}
	if (rc == 0) {
		recv_touch(r, to.dirfd);
		recv_touch_name(r, to.dirfd, to.name);	/* its link count */
		/* a name linked to a file this batch made stays its name */
		if (fstatat(to.dirfd, to.name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    linkclaim_other(&r->claims, &b, op->path2))
			(void)linkclaim_note(&r->claims, &b, op->path2);
	}
	path_put(&to);
	path_put(&from);
	return rc;
}



/*
 * RENAME_WHITEOUT: the rename leaves a whiteout at the old name, on the
 * primary and so here. Where the store's filesystem cannot do the flag
 * (EINVAL), the rename and a mknod of the whiteout do the same in two
 * steps. The whiteout then gets the primary's owner; its mtime comes with
 * the results. Returns 0 or -errno (errno of the rename).
 */
static int recv_rename_whiteout(struct receiver *r, struct path_ref *from,
				struct path_ref *to, const struct journal_op *op)
{
	int rc;

	if (r->replay && storeops_whiteout_done(from->dirfd, from->name, to->dirfd, to->name, op))
		goto out_owner;	/* replay of a rename done already */
	if (renameat2(from->dirfd, from->name, to->dirfd, to->name, RENAME_WHITEOUT) < 0) {
		if (errno != EINVAL)
			return -errno;
		if (renameat(from->dirfd, from->name, to->dirfd, to->name) < 0)
			return -errno;
	}
	if (!storeops_is_whiteout(from->dirfd, from->name) &&
	    mknodat(from->dirfd, from->name, S_IFCHR, makedev(0, 0)) < 0)
		return -errno;
out_owner:
	rc = recv_chown(r, from->dirfd, from->name, op->uid, op->gid);
	return rc;
}

static int recv_rename(struct receiver *r, const struct journal_op *op)
{
	struct path_ref from, to;
	struct stat st;
	/* NOREPLACE was checked by the primary when it happened; on replay the
	 * target may exist because a later op created it. */
	unsigned flags = op->flags & RENAME_EXCHANGE;
	int rc = recv_two(r, op, &from, &to);

	if (rc < 0)
		return rc;
	if (!flags && (op->flags & RENAME_WHITEOUT)) {
		rc = recv_rename_whiteout(r, &from, &to, op);
		if (rc < 0)
			recv_fail(r, op->path, rc);
	} else if (renameat2(from.dirfd, from.name, to.dirfd, to.name, flags) == 0) {
		rc = 0;
		/*
		 * rename() between two hard links of one inode does nothing
		 * (POSIX). In a live stream that is what the primary did too. In
		 * a replay it means a LINK re-created the source that this rename
		 * had already moved away, so the source must go.
		 */
		if (r->replay && !flags && storeops_exists(from.dirfd, from.name, &st)) {
			struct stat st2;

			if (storeops_exists(to.dirfd, to.name, &st2) && st.st_ino == st2.st_ino &&
			    st.st_dev == st2.st_dev && unlinkat(from.dirfd, from.name, 0) < 0)
				rc = recv_fail(r, op->path, -errno);
		}
	} else {
		rc = -errno;
		if (rc == -ENOENT && !storeops_exists(from.dirfd, from.name, &st) &&
		    storeops_exists(to.dirfd, to.name, &st))
			rc = 0;	/* already renamed */
		else
			recv_fail(r, op->path, rc);
	}
	if (rc == 0) {
		rc = recv_results(op, from.dirfd, from.name, to.dirfd, to.name);
		if (rc < 0)
			recv_fail(r, op->path, rc);
	}
	if (rc == 0) {
		recv_touch(r, from.dirfd);
		recv_touch(r, to.dirfd);
		if (op->flags & RENAME_WHITEOUT)
			recv_touch_name(r, from.dirfd, from.name);	/* a device: whole fs */
	}
	path_put(&to);
	path_put(&from);
	return rc;
}

static int recv_setattr(struct receiver *r, struct path_ref *ref, const char *path,
			uint32_t mask, uint64_t size, uint32_t mode, uint32_t uid,
			uint32_t gid, const struct timespec *atime,
			const struct timespec *mtime, bool state)
{
	struct recv_fd *slot = *path ? recv_fd_find(r, path) : NULL;
	struct stat st;
	bool have = false;
	int rc;

	if (mask & JATTR_SIZE) {
		if (!*path)
			return -EISDIR;
		rc = recv_open_slot(r, path, &slot);
		if (rc < 0)
			return rc;
		have = fstat(slot->fd, &st) == 0;
		/* A truncate to the size it has would only set mtime (to now),
		 * and that is set below anyway: the ATTR after a file's data
		 * names its size, and it usually has it already. */
		if (!have || st.st_size != (off_t)size || !(mask & JATTR_MTIME)) {
			if (ftruncate(slot->fd, (off_t)size) < 0)
				return -errno;
			have = false;	/* without CAP_FSETID it drops set-id bits */
		}
	}
	if (slot)
		return recv_set_meta_fd(r, slot->fd, have ? &st : NULL, mask, mode, uid, gid,
					atime, mtime, state);
	return recv_set_meta(r, ref->dirfd, ref->name, mask, mode, uid, gid, atime, mtime, state);
}

/* True if the xattr OP sets has that value already (through FD, or the
 * l* call on LPATH): set again, it would only move the file's ctime, the
 * hash cache's key. */
static bool recv_xattr_same(int fd, const char *lpath, const struct journal_op *op)
{
	char buf[256];
	ssize_t n;

	if (op->xsize > sizeof(buf))
		return false;	/* rare: a big value is simply set */
	n = fd >= 0 ? fgetxattr(fd, op->xname, buf, sizeof(buf)) :
	    lgetxattr(lpath, op->xname, buf, sizeof(buf));
	return n >= 0 && (size_t)n == op->xsize &&
	       (!op->xsize || memcmp(buf, op->xvalue, op->xsize) == 0);
}

/* l*xattr on "/proc/self/fd/DIRFD/NAME": the directory was resolved safely,
 * and the l* calls do not follow NAME. */
static int recv_xattr(struct receiver *r, struct path_ref *ref, const struct journal_op *op)
{
	struct recv_fd *slot = *op->path ? recv_fd_find(r, op->path) : NULL;
	char p[PROTO_NAME_MAX + 64];

	if (!op->xname && op->type == JOP_REMOVEXATTR) {
		if (op->xsize && ((const char *)op->xvalue)[op->xsize - 1] != '\0')
			return -EINVAL;
		/* made here: none to remove but an access ACL inherited from
		 * its folder's default ACL */
		if (slot && slot->fresh && fgetxattr(slot->fd, "system.posix_acl_access", NULL, 0) < 0)
			return 0;
		snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", ref->dirfd, ref->name);
		return storeops_xattr_keep(slot ? slot->fd : -1, p, op);
	}
	if (!op->xname)
		return -EINVAL;
	if (slot && op->type == JOP_SETXATTR) {
		slot->fresh = false;
		if (recv_xattr_same(slot->fd, NULL, op))
			return 0;
		return fsetxattr(slot->fd, op->xname, op->xvalue ? op->xvalue : "",
				 op->xsize, 0) < 0 ? -errno : 0;
	}
	if (slot)
		return fremovexattr(slot->fd, op->xname) < 0 && errno != ENODATA ? -errno : 0;
	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", ref->dirfd, ref->name);
	if (op->type == JOP_SETXATTR) {
		if (recv_xattr_same(-1, p, op))
			return 0;
		if (lsetxattr(p, op->xname, op->xvalue ? op->xvalue : "", op->xsize, 0) < 0)
			return -errno;
		return 0;
	}
	if (lremovexattr(p, op->xname) < 0 && errno != ENODATA)
		return -errno;
	return 0;
}

int receiver_op(struct receiver *r, const struct proto_op *m)
{
	const struct journal_op *op = &m->op;
	bool root_ok = op->type == JOP_SETATTR || op->type == JOP_SETXATTR ||
		       op->type == JOP_REMOVEXATTR;
	struct path_ref ref;
	int rc;

	if (m->seq <= r->st.applied_seq)
		return 0;	/* already durable here (replay after resume) */
	/* names may change: the caches are by path (see recv_ns_changed) */
	if (op->type != JOP_CREATE && op->type != JOP_SETATTR &&
	    op->type != JOP_SETXATTR && op->type != JOP_REMOVEXATTR)
		recv_ns_changed(r);
	rc = recv_begin_change(r);
	if (rc < 0)
		return rc;
	r->failed[0] = '\0';
	if (op->type == JOP_LINK) {
		rc = recv_link(r, op);
		goto out_count;
	}
	if (op->type == JOP_RENAME) {
		linkclaim_clear(&r->claims);	/* names move under the claims */
		rc = recv_rename(r, op);
		goto out_count;
	}
	rc = recv_resolve(r, op->path, root_ok, &ref);
	if (rc < 0)
		return recv_fail(r, op->path, rc);
	switch (op->type) {
	case JOP_CREATE:
		rc = recv_create(r, &ref, op);
		break;
	case JOP_MKDIR:
		rc = recv_mkdir(r, &ref, op);
		break;
	case JOP_MKNOD:
		rc = recv_mknod(r, &ref, op);
		break;
	case JOP_SYMLINK:
		rc = recv_symlink(r, &ref, op);
		break;
	case JOP_UNLINK:
		rc = unlinkat(ref.dirfd, ref.name, 0) < 0 && errno != ENOENT ? -errno : 0;
		break;
	case JOP_RMDIR:
		rc = unlinkat(ref.dirfd, ref.name, AT_REMOVEDIR) < 0 && errno != ENOENT ?
		     -errno : 0;
		break;
	case JOP_SETATTR:
		rc = recv_setattr(r, &ref, op->path, op->attr_mask, op->size, op->mode,
				  op->uid, op->gid, &op->atime, &op->mtime, false);
		break;
	case JOP_SETXATTR:
	case JOP_REMOVEXATTR:
		rc = recv_xattr(r, &ref, op);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc == 0)
		rc = recv_results(op, ref.dirfd, ref.name, -1, NULL);
	if (rc == 0) {
		switch (op->type) {
		case JOP_SETATTR:
		case JOP_SETXATTR:
		case JOP_REMOVEXATTR: {
			struct recv_fd *slot = *op->path ? recv_fd_find(r, op->path) : NULL;

			if (slot)
				recv_touch_slot(r, slot);
			else
				recv_touch_name(r, ref.dirfd, ref.name);
			break;
		}
		case JOP_CREATE:
			recv_touch_dir(r, ref.dirfd);	/* the file itself: recv_create */
			break;
		case JOP_MKDIR:
			recv_touch_name(r, ref.dirfd, ref.name);	/* owner, mode */
			recv_touch_dir(r, ref.dirfd);
			break;
		default:
			recv_touch_dir(r, ref.dirfd);
			break;
		}
	}
	path_put(&ref);
	if (r->ns_flush) {
		r->ns_flush = false;
		recv_ns_changed(r);
	}
	if (rc < 0)
		recv_fail(r, op->path, rc);
out_count:
	if (rc == 0)
		r->st.ops++;
	return rc;
}

int receiver_data(struct receiver *r, const struct proto_data *m)
{
	struct recv_fd *slot;
	size_t off = 0;
	int fd, rc;

	r->failed[0] = '\0';
	if (proto_data_verify(m) < 0)
		return recv_fail(r, m->path, -EBADMSG);
	rc = recv_begin_change(r);
	if (rc < 0)
		return rc;
	rc = recv_open_slot(r, m->path, &slot);
	if (rc < 0)
		return recv_fail(r, m->path, rc);
	fd = slot->fd;
	while (off < m->len) {
		ssize_t n = pwrite(fd, m->bytes + off, m->len - off,
				   (off_t)(m->offset + off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return recv_fail(r, m->path, -errno);
		off += (size_t)n;
	}
	recv_writeback(slot, m->offset, m->len);
	recv_touch_slot(r, slot);
	r->st.data_bytes += m->len;
	return 0;
}

/* An ATTR flagged PROTO_ATTR_IF_PRESENT whose path is not here: nothing to
 * set (whatever makes it here later brings its own times). */
static bool recv_absent_ok(const struct proto_attr *m, int rc)
{
	return (m->mask & PROTO_ATTR_IF_PRESENT) &&
	       (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP);
}

int receiver_attr(struct receiver *r, const struct proto_attr *m)
{
	struct path_ref ref;
	int rc;

	r->failed[0] = '\0';
	rc = recv_begin_change(r);
	if (rc < 0)
		return rc;
	rc = recv_resolve(r, m->path, true, &ref);
	if (rc < 0 && recv_absent_ok(m, rc))
		return 0;
	if (rc < 0)
		return recv_fail(r, m->path, rc);
	rc = recv_setattr(r, &ref, m->path, m->mask, m->size, m->mode, m->uid, m->gid,
			  &m->atime, &m->mtime, true);
	if (rc < 0 && recv_absent_ok(m, rc))
		rc = 0;
	if (rc == 0) {
		struct recv_fd *slot = *m->path ? recv_fd_find(r, m->path) : NULL;

		if (slot)
			recv_touch_slot(r, slot);
		else
			recv_touch_name(r, ref.dirfd, ref.name);
	}
	path_put(&ref);
	if (rc < 0)
		recv_fail(r, m->path, rc);
	return rc;
}

/*
 * Pruning. A baseline walk adds and overwrites; PRUNE is what makes it
 * also delete. When the walk leaves a directory it lists the names it
 * found there, and every other entry of the peer's copy goes: files the
 * primary deleted while the journal could not record them (NEEDS_SCAN),
 * or that a restored or reused peer brings along. Names created on the
 * primary after the walk read the directory are not in the list and may
 * be removed here; their CREATE, with a higher seq, follows and puts them
 * back (the ordering argument in netsync/sender.c, "Baseline").
 */
int receiver_prune(struct receiver *r, const struct proto_prune *m)
{
	struct path_ref ref;
	struct dirent *de;
	uint64_t removed = 0;
	DIR *d = NULL;
	int fd, rc = 0;

	if (m->seq <= r->st.applied_seq)
		return 0;	/* already durable here (replay after resume) */
	r->failed[0] = '\0';
	if (!r->prune_path || strcmp(r->prune_path, m->path) != 0) {
		free(r->prune_path);
		pathset_clear(&r->prune_keep);
		r->prune_path = strdup(m->path);
		if (!r->prune_path)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->names_len; i += strlen(m->names + i) + 1) {
		rc = pathset_add(&r->prune_keep, m->names + i, 0);
		if (rc < 0)
			return rc;
	}
	if (!(m->flags & PROTO_PRUNE_F_LAST))
		return 0;
	recv_ns_changed(r);	/* names go away */
	rc = recv_begin_change(r);
	if (rc < 0)
		goto out_clear;
	rc = path_resolve(r->rootfd, m->path, true, &ref);
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP) {
		rc = 0;		/* no such folder here: nothing to remove */
		goto out_clear;
	}
	if (rc < 0) {
		recv_fail(r, m->path, rc);
		goto out_clear;
	}
	fd = openat(ref.dirfd, ref.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	path_put(&ref);
	if (fd < 0) {
		/* gone or replaced since: a later op of the batch says so */
		rc = errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
		if (rc < 0)
			recv_fail(r, m->path, rc);
		goto out_clear;
	}
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		recv_fail(r, m->path, rc);
		goto out_clear;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    pathset_find(&r->prune_keep, de->d_name))
			continue;
		rc = storeops_remove_tree(dirfd(d), de->d_name, STOREOPS_TREE_DEPTH);
		if (rc < 0) {
			snprintf(r->failed, sizeof(r->failed), "%s%s%s", m->path,
				 *m->path ? "/" : "", de->d_name);
			break;
		}
		removed++;
	}
	if (removed) {
		log_info("removed names the primary does not have", "dir=/%s count=%llu",
			 m->path, (unsigned long long)removed);
		recv_touch(r, dirfd(d));
		r->st.ops += removed;
	}
	closedir(d);
out_clear:
	free(r->prune_path);
	r->prune_path = NULL;
	pathset_clear(&r->prune_keep);
	return rc;
}

/*
 * Durability before ACK. Every change records what it touched: the file
 * written, the directory whose entries changed, the inode whose metadata
 * changed. At the batch end those are fsynced (or, past RECV_TOUCH_MAX,
 * the filesystem is synced with one syncfs). Only then is the seq written
 * to STATE/applied, and only after that is the ACK sent: an ACKed seq
 * survives a power cut on the secondary.
 * serve runs the sync on a helper thread (seal, sync, durable) so that
 * the next batch is applied while the previous one is flushed; the file
 * then says "dirty" whenever changes after the recorded seq may be on disk.
 */
int receiver_batch_seal(struct receiver *r, uint64_t seq, struct sync_set *set)
{
	memset(set, 0, sizeof(*set));
	/* nothing applied since the last seal and seq already durable (a
	 * replayed BATCH_END): ack at once, never record an older seq */
	if (seq <= r->st.applied_seq && !r->changed)
		return 0;
	if (seq > r->sealed)
		r->sealed = seq;
	r->changed = false;
	linkclaim_clear(&r->claims);	/* the primary's link table is per batch */
	recv_touch_take(r, set);
	/* Started dirty: changes from before the restart may sit unsynced in
	 * the page cache under names this run never touches. */
	if (r->replay) {
		set->whole_fs = true;
		if (!r->replay_seal)
			r->replay_seal = seq;
	}
	return 1;
}

int receiver_batch_durable(struct receiver *r, uint64_t seq)
{
	bool dirty_after = r->changed || r->sealed > seq;
	int rc;

	if (seq < r->st.applied_seq)
		seq = r->st.applied_seq;
	rc = state_applied_put(r->applied, seq, dirty_after);
	if (rc < 0)
		return recv_fail(r, "", rc);
	if (seq > r->st.applied_seq || !dirty_after)
		r->st.batches++;
	r->st.applied_seq = seq;
	r->st.dirty = dirty_after;
	if (!dirty_after)
		r->replay = false;
	return 0;
}

/*
 * The pipelined form keeps STATE/applied "dirty" while batches keep coming
 * (the sync thread records each durable seq with dirty=1: one fdatasync,
 * no extra write to mark the next batch) and writes it clean only when the
 * stream has gone idle. A crash while dirty costs the primary a re-send of
 * the paths changed after applied_seq, which is small; an extra write per
 * batch would cost every sync-mode fsync on the primary.
 */
void receiver_batch_committed(struct receiver *r, uint64_t seq)
{
	if (seq > r->st.applied_seq) {
		r->st.applied_seq = seq;
		r->st.batches++;
	}
	r->st.dirty = true;
	if (r->replay_seal && seq >= r->replay_seal) {
		r->replay = false;	/* the whole-fs sync after the restart is done */
		r->replay_seal = 0;
	}
}

int receiver_idle(struct receiver *r)
{
	int rc;

	if (!r->st.dirty || r->changed || r->sealed > r->st.applied_seq || r->replay)
		return 0;
	rc = state_applied_put(r->applied, r->st.applied_seq, false);
	if (rc < 0)
		return rc;
	r->st.dirty = false;
	return 1;
}

int receiver_set_position(struct receiver *r, uint64_t seq)
{
	int rc;

	if (seq == r->st.applied_seq)
		return 0;
	rc = state_applied_put(r->applied, seq, r->st.dirty);
	if (rc < 0)
		return rc;
	r->st.applied_seq = seq;
	if (r->sealed > seq)
		r->sealed = seq;
	return 0;
}

int receiver_split_begin(struct receiver *r, uint64_t common)
{
	int rc = state_applied_put(r->applied, r->st.applied_seq, true);

	if (rc < 0)
		return rc;
	r->split_own = r->st.applied_seq;
	r->st.applied_seq = common;
	r->st.dirty = r->replay = true;
	return 0;
}

void receiver_split_end(struct receiver *r)
{
	r->st.applied_seq = r->split_own;
}

bool receiver_beyond_applied(const struct receiver *r)
{
	return r->changed || r->sealed > r->st.applied_seq || r->replay;
}

struct state_applied *receiver_applied_file(const struct receiver *r)
{
	return r->applied;
}

int receiver_store_fd(const struct receiver *r)
{
	return r->rootfd;
}

int receiver_batch_end(struct receiver *r, uint64_t seq)
{
	struct sync_set set;
	int rc;

	r->failed[0] = '\0';
	if (receiver_batch_seal(r, seq, &set) == 0)
		return 0;
	rc = sync_set_run(&set, r->rootfd);
	if (rc < 0)
		return recv_fail(r, "", rc);
	return receiver_batch_durable(r, seq);
}
