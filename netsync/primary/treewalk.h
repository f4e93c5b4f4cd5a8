/*
 * treewalk — an iterative, resumable depth-first walk of a subtree of the
 * store, for the sender's baseline (full-state) send. Yields one entry per
 * call, parents before children and each directory again when it is left;
 * never follows symlinks, never leaves the store's filesystem, and keeps
 * only a bounded stack of open directories. Also remembers the first path
 * of every multiply-linked file it yields, so hard links can be re-created.
 * Single-threaded: owned by whoever opened it (the sender's loop thread).
 */
#ifndef TWINFS_TREEWALK_H
#define TWINFS_TREEWALK_H

#include <stdbool.h>
#include <sys/stat.h>

struct treewalk;

/* At most this many directories are open at once (one fd each). */
#define TREEWALK_DEPTH_MAX 128

struct treewalk_item {
	bool leave;		/* a directory whose entries are all yielded */
	const char *path;	/* store-relative path ("" = the store root) */
	int dirfd;		/* the parent directory (the dir itself for "") */
	const char *name;	/* name in dirfd ("." for the walk's root "") */
	struct stat st;		/* lstat of the entry */
	/* Regular file with st_nlink > 1 already yielded under this path in
	 * this walk (a hard link to send as LINK), else NULL. */
	const char *link_to;
};

/* Opens a walk of ROOT (store-relative, "" = the whole store) beneath
 * STORE_FD. ROOT is resolved without following symlinks. Returns 0,
 * -ENOENT/-ENOTDIR/-ELOOP if ROOT is not there (nothing to walk), or
 * -errno. */
int treewalk_open(int store_fd, const char *root, struct treewalk **out);
/* The next entry: 1 and *it (valid until the next call), 0 when the walk
 * is done, or -errno (-ENAMETOOLONG: deeper than TREEWALK_DEPTH_MAX or a
 * path over PATH_MAX; the caller reports it). */
int treewalk_next(struct treewalk *w, struct treewalk_item *it);
void treewalk_free(struct treewalk *w);

#endif
