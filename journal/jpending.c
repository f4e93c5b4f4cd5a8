/*
 * jpending — what is not yet on the peer, from the files alone: resolves
 * durability marks into paths (for journal_open's recovery) and lists
 * every pending path offline (journal_list_pending, for `twinfs status
 * --pending` while the mount is down or after it was killed). Runs on the
 * caller's thread; reads the journal and the store's directory entries,
 * writes nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "journal/journal.h"
#include "journal/journal_int.h"
#include "journal/jrec.h"
#include "journal/jseg.h"
#include "common/pathset.h"

static bool jpending_ts_ge(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

static void jpending_join(char *buf, size_t len, const char *dir, const char *name)
{
	if (dir[0])
		snprintf(buf, len, "%s/%s", dir, name);
	else
		snprintf(buf, len, "%s", name);
}

/* Deeper than this, a new tree is listed as its top directory only. */
#define JPENDING_NEW_DEPTH 64
/* How long before the last commit's write a change may have happened
 * whose record that commit did not carry: the commit window, the write,
 * and the kernel's coarse timestamps, generously. */
#define JPENDING_LOST_SLACK_S 2

int jpending_lost_since(int dirfd, int storefd, struct timespec *out)
{
	int rc;

	if (journal_no_lost_window)
		return -ENOENT;
	/* The store's file system was mounted again since the journal was
	 * last open (a reboot, a power cut): it lost what its page cache
	 * held, which the peer may hold. Its ctimes tell nothing then (they
	 * were lost with the rest), so every marked directory is walked. */
	if (jseg_storefs_changed(dirfd, storefd)) {
		out->tv_sec = 0;
		out->tv_nsec = 0;
		return 0;
	}
	rc = jseg_last_write(dirfd, out);
	if (rc == 0)
		out->tv_sec -= JPENDING_LOST_SLACK_S;
	return rc;
}

/* PATH's rest below DIR ("" for DIR itself), or NULL if PATH is not at or
 * below DIR. */
static const char *jpending_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!n || strncmp(path, dir, n) != 0 || (path[n] != '\0' && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : path + n;
}

/*
 * Marks name paths, and a rename moves what they name: a file created in
 * a marked folder has no mark of its own (it is found as an entry of the
 * folder), so after the folder was renamed, recovery looked for it under
 * the old name, found nothing, and the file's data, unacked when the
 * mount stopped, never reached the peer. The RENAME records after a mark
 * are in the same scan, so the mark follows them.
 */
int jpending_marks_rename(struct jpending_mark **m, size_t *n, size_t *cap,
			  const char *from, const char *to, bool exchange)
{
	size_t n0 = *n;

	for (size_t i = 0; i < n0; i++) {
		const char *rest = jpending_below((*m)[i].path, from);
		const char *dst = to;
		char *np;

		if (!rest && exchange) {
			rest = jpending_below((*m)[i].path, to);
			dst = from;
		}
		if (!rest)
			continue;
		if (asprintf(&np, "%s%s%s", dst, *dst && *rest ? "/" : "", rest) < 0)
			return -ENOMEM;
		if (ARRAY_GROW(*m, *cap, *n + 1, 64) < 0) {
			free(np);
			return -ENOMEM;
		}
		(*m)[*n] = (struct jpending_mark){ (*m)[i].type, np, (*m)[i].when };
		(*n)++;
	}
	return 0;
}

/* A statx timestamp at or after T (false without T). */
static bool jpending_stx_ge(const struct statx_timestamp *s, const struct timespec *t)
{
	struct timespec c = { .tv_sec = s->tv_sec, .tv_nsec = s->tv_nsec };

	return t && jpending_ts_ge(&c, t);
}

/* Opens STORE/DIR ("" = the store) for reading. Returns 0, -ENOMEM, or
 * another -errno when it is gone or not a directory (callers skip it). */
static int jpending_opendir(const char *store, const char *dir, DIR **out)
{
	char full[PATH_MAX];
	int dfd, rc;

	if ((size_t)snprintf(full, sizeof full, "%s%s%s", store, dir[0] ? "/" : "", dir) >=
	    sizeof full)
		return -ENAMETOOLONG;
	dfd = open(full, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	*out = fdopendir(dfd);
	if (!*out) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	return 0;
}

/*
 * Everything under a directory born after the mark that covers it: its
 * MKDIR came after that mark, so nothing inside it ever had a mark of its
 * own (journal.c, "New directories"). Listed parents first.
 */
static int jpending_list_new(const char *store, const char *dir, int depth,
			     const struct timespec *lost_since,
			     void (*fn)(const char *path, const char *why, void *arg), void *arg)
{
	char rel[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int dfd, rc;
	DIR *d;

	if (depth > JPENDING_NEW_DEPTH) {
		log_warn("a new directory tree is too deep to list after the crash; "
			 "its top is listed", "path=%s", dir);
		return 0;
	}
	rc = jpending_opendir(store, dir, &d);
	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;	/* gone meanwhile */
	dfd = dirfd(d);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(rel, sizeof rel, "%s/%s", dir, de->d_name) >= sizeof rel)
			continue;
		if (de->d_type == DT_DIR || (de->d_type == DT_UNKNOWN &&
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))) {
			struct statx stx;

			/* Its MKDIR or changes inside it may be among the lost
			 * records: a walk creates it and sends all it holds. */
			if (lost_since && statx(dfd, de->d_name, AT_SYMLINK_NOFOLLOW,
						STATX_CTIME, &stx) == 0 &&
			    jpending_stx_ge(&stx.stx_ctime, lost_since)) {
				fn(rel, "needs-walk", arg);
				continue;
			}
			fn(rel, "new-dir-entry", arg);
			rc = jpending_list_new(store, rel, depth + 1, lost_since, fn, arg);
			continue;
		}
		fn(rel, "new-dir-entry", arg);
	}
	closedir(d);
	return rc;
}

/* A directory born at or after WHEN (its birth time; without one, any
 * ctime at or after WHEN counts, which may list more than needed). */
static bool jpending_dir_born_since(const struct statx *stx, const struct timespec *when)
{
	return S_ISDIR(stx->stx_mode) &&
	       jpending_stx_ge(stx->stx_mask & STATX_BTIME ? &stx->stx_btime : &stx->stx_ctime,
			       when);
}

/*
 * A marked directory: every entry whose ctime is at or after the mark was
 * created, renamed, written or had its attributes changed since (creating,
 * renaming and writing all set ctime). The directory itself is listed
 * when its own ctime says entries were added or removed, which also
 * covers names that no longer exist (a removal is visible only there).
 * An entry that is a directory born since the mark is new, with all it
 * holds (jpending_list_new).
 */
static int jpending_scan_dir(const char *store, const char *dir, const struct timespec *when,
			     const struct timespec *lost_since,
			     void (*fn)(const char *path, const char *why, void *arg), void *arg)
{
	char rel[PATH_MAX];
	struct dirent *de;
	struct statx stx;
	struct stat st;
	int rc;
	DIR *d;

	rc = jpending_opendir(store, dir, &d);
	if (rc < 0)	/* gone or replaced since the mark: its parent's mark covers it */
		return rc == -ENOMEM ? rc : 0;
	if (fstat(dirfd(d), &st) < 0)
		memset(&st, 0, sizeof st);	/* no ctime: nothing since */
	if (lost_since && jpending_ts_ge(&st.st_ctim, lost_since)) {
		/* Entries may have gone (renamed away, removed) with records
		 * that were lost: only a walk with its name list can tell. */
		closedir(d);
		fn(dir, "needs-walk", arg);
		return 0;
	}
	if (jpending_ts_ge(&st.st_ctim, when))
		fn(dir, "marked-dir", arg);
	rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW,
			  STATX_TYPE | STATX_CTIME | STATX_BTIME, &stx) < 0)
			continue;	/* removed meanwhile */
		if (!jpending_stx_ge(&stx.stx_ctime, when))
			continue;
		jpending_join(rel, sizeof rel, dir, de->d_name);
		if (S_ISDIR(stx.stx_mode) && jpending_stx_ge(&stx.stx_ctime, lost_since)) {
			/* Made, moved in or changed in the lost window. */
			fn(rel, "needs-walk", arg);
			continue;
		}
		fn(rel, "marked-dir-entry", arg);
		if (jpending_dir_born_since(&stx, when))
			rc = jpending_list_new(store, rel, 1, lost_since, fn, arg);
	}
	closedir(d);
	return rc;
}

/*
 * Each reopen without an ack marks the same directories again; a directory
 * is scanned once, against its earliest mark (changes since then count).
 */
int jpending_resolve_marks(const char *store, const struct jpending_mark *m, size_t n,
			   const struct timespec *lost_since,
			   void (*fn)(const char *path, const char *why, void *arg),
			   void *arg)
{
	struct timespec *earliest = NULL;
	struct pathset seen;
	char key[PATH_MAX + 2];
	int rc = 0;

	pathset_init(&seen);
	earliest = calloc(n ? n : 1, sizeof(*earliest));
	if (!earliest)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct pathset_entry *e;

		snprintf(key, sizeof key, "%c%s", m[i].type == JOP_MARK_FILE ? 'F' : 'D', m[i].path);
		e = pathset_find(&seen, key);
		if (e) {
			if (!jpending_ts_ge(&m[i].when, &earliest[e->value]))
				earliest[e->value] = m[i].when;
			continue;
		}
		rc = pathset_add(&seen, key, i);
		if (rc < 0)
			goto out_free;
		earliest[i] = m[i].when;
	}
	for (size_t i = 0; i < n; i++) {
		struct pathset_entry *e;

		snprintf(key, sizeof key, "%c%s", m[i].type == JOP_MARK_FILE ? 'F' : 'D', m[i].path);
		e = pathset_find(&seen, key);
		if (!e || e->value != i)
			continue;	/* a later duplicate */
		if (m[i].type == JOP_MARK_FILE) {
			fn(m[i].path, "marked-file", arg);
			continue;
		}
		rc = jpending_scan_dir(store, m[i].path, &earliest[i], lost_since, fn, arg);
		if (rc < 0)
			goto out_free;
	}
	rc = 0;
out_free:
	pathset_clear(&seen);
	free(earliest);
	return rc;
}

/* ---- offline listing ---- */

struct jpending_ctx {
	struct pathset seen;
	struct jpending_mark *marks;
	size_t n_marks, cap_marks;
	void (*fn)(const char *path, const char *why, void *arg);
	void *arg;
	int rc;
	/* journal_list_pending_deep: a directory to walk is also opened up */
	bool deep;
	const char *store;
	const struct timespec *lost_since;
};

static void jpending_emit(const char *path, const char *why, void *arg);

/*
 * Below a directory whose listing the crash may have made incomplete
 * ("needs-walk"), every entry changed in the crash window (ctime at or
 * after its start): the changes whose records may be lost. Subfolders
 * are entered whatever their own ctime (a file's write does not touch
 * its folder's). A stat walk; nothing is read.
 */
static void jpending_walk_window(struct jpending_ctx *c, const char *dir, int depth)
{
	char rel[PATH_MAX];
	struct dirent *de;
	struct statx stx;
	DIR *d;

	if (depth > JPENDING_NEW_DEPTH || jpending_opendir(c->store, dir, &d) < 0)
		return;
	while ((de = readdir(d)) != NULL && c->rc == 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_CTIME,
			  &stx) < 0)
			continue;
		jpending_join(rel, sizeof rel, dir, de->d_name);
		if (jpending_stx_ge(&stx.stx_ctime, c->lost_since))
			jpending_emit(rel, "window-entry", c);
		if (S_ISDIR(stx.stx_mode))
			jpending_walk_window(c, rel, depth + 1);
	}
	closedir(d);
}

/* Emits each path once, with the first reason found; a path first named
 * for another reason and renamed later is named once more as "renamed"
 * (a split brain holds a folder that moved whole: tail.h). */
static void jpending_emit(const char *path, const char *why, void *arg)
{
	struct jpending_ctx *c = arg;
	bool moved = strcmp(why, "rename") == 0;
	int rc = pathset_add(&c->seen, path, moved);
	struct pathset_entry *e;

	if (rc < 0)
		c->rc = rc;
	if (rc == 1)
		c->fn(path, why, c->arg);
	if (rc == 0 && moved && (e = pathset_find(&c->seen, path)) && !e->value) {
		e->value = 1;
		c->fn(path, "renamed", c->arg);
	}
	if (rc == 1 && c->deep && c->lost_since && strcmp(why, "needs-walk") == 0)
		jpending_walk_window(c, path, 0);
}

static int jpending_rec(const uint8_t *rec, size_t len, uint64_t seq, void *arg)
{
	struct jpending_ctx *c = arg;
	struct journal_rec jr;

	if (jrec_decode(rec, len, &jr) < 0)
		return 0;
	switch (jr.op.type) {
	case JOP_BATCH:
	case JOP_EPOCH:
		return 0;
	case JOP_MARK_DIR:
	case JOP_MARK_FILE:
		if (ARRAY_GROW(c->marks, c->cap_marks, c->n_marks + 1, 64) < 0)
			return -ENOMEM;
		c->marks[c->n_marks] = (struct jpending_mark){ jr.op.type, strdup(jr.op.path),
							       jr.op.mtime };
		if (!c->marks[c->n_marks].path)
			return -ENOMEM;
		c->n_marks++;
		return 0;
	case JOP_RENAME:
		if (jr.op.path2 && jpending_marks_rename(&c->marks, &c->n_marks, &c->cap_marks,
							 jr.op.path, jr.op.path2,
							 jr.op.flags & RENAME_EXCHANGE) < 0)
			return -ENOMEM;
		break;
	default:
		break;
	}
	jpending_emit(jr.op.path, journal_op_name(jr.op.type), c);
	if ((jr.op.type == JOP_RENAME || jr.op.type == JOP_LINK) && jr.op.path2)
		jpending_emit(jr.op.path2, journal_op_name(jr.op.type), c);
	return c->rc;
}

static int jpending_list(const char *state_dir, const char *store_dir, bool deep,
			 void (*fn)(const char *path, const char *why, void *arg),
			 void *arg)
{
	struct jpending_ctx c = { .fn = fn, .arg = arg, .deep = deep };
	char dir[PATH_MAX], *store = NULL;
	struct jseg_scan scan;
	struct timespec lost;
	bool have_lost;
	uint64_t acked;
	int dfd, sfd, rc;

	struct stat st;

	if (stat(state_dir, &st) < 0)
		return -errno;	/* a mistyped --state is an error, not "nothing" */
	snprintf(dir, sizeof dir, "%s/journal", state_dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;	/* never mounted: nothing */
	store = realpath(store_dir, NULL);
	if (!store) {
		rc = -errno;
		goto out_close;
	}
	pathset_init(&c.seen);
	sfd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	have_lost = !jseg_closed_seen(dfd) && jpending_lost_since(dfd, sfd, &lost) == 0;
	if (sfd >= 0)
		close(sfd);
	c.store = store;
	c.lost_since = have_lost ? &lost : NULL;
	rc = jseg_ack_read(dfd, &acked);
	if (rc < 0)
		goto out_free;
	rc = jseg_scan(dfd, acked, false, jpending_rec, &c, &scan);
	if (rc < 0)
		goto out_free;
	if (scan.lost)
		jpending_emit("", "journal-damaged", &c);
	jseg_scan_free(&scan);
	rc = jpending_resolve_marks(store, c.marks, c.n_marks, have_lost ? &lost : NULL,
				    jpending_emit, &c);
	if (rc == 0)
		rc = c.rc;
out_free:
	for (size_t i = 0; i < c.n_marks; i++)
		free(c.marks[i].path);
	free(c.marks);
	pathset_clear(&c.seen);
	free(store);
out_close:
	close(dfd);
	return rc;
}

int journal_list_pending(const char *state_dir, const char *store_dir,
			 void (*fn)(const char *path, const char *why, void *arg),
			 void *arg)
{
	return jpending_list(state_dir, store_dir, false, fn, arg);
}

int journal_list_pending_deep(const char *state_dir, const char *store_dir,
			      void (*fn)(const char *path, const char *why, void *arg),
			      void *arg)
{
	return jpending_list(state_dir, store_dir, true, fn, arg);
}
