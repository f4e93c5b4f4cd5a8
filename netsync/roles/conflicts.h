/*
 * conflicts — STATE/conflicts/<ID>/: copies of a node's own versions of
 * paths that another version replaced (the writes an old primary made
 * that never reached its peer, the loser's side of a resolved split
 * brain). A folder mirrors the store's tree; nothing in it is ever
 * removed except a copy identical to what the store holds at the end.
 * Blocking file IO on the caller's thread; never writes the store.
 */
#ifndef TWINFS_CONFLICTS_H
#define TWINFS_CONFLICTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define CONFLICTS_ID_MAX 96

/* Makes STATE/conflicts/<UTC time>-WHY and returns its name in ID.
 * 0 or -errno. */
int conflicts_begin(const char *state, const char *why, char *id, size_t len);
/*
 * Copies PATH of the store (STORE_FD) into folder ID: a regular file with
 * its content, mode and times; a symlink; a directory as an empty one (its
 * entries are copied on their own). Returns 1 if copied, 0 if the store
 * has nothing there, or -errno.
 */
int conflicts_save(const char *state, const char *id, int store_fd, const char *path);
/* The same, a folder with everything in it (a folder's version that the
 * winner's replaces by something else goes with its files). */
int conflicts_save_tree(const char *state, const char *id, int store_fd, const char *path);
/* Removes the copy of PATH when the store's entry now has the same type
 * and content (no conflict after all). 1 if the copy is kept, 0 if
 * removed or absent, -errno. */
int conflicts_drop_same(const char *state, const char *id, int store_fd, const char *path);
/* Removes empty directories of folder ID, and the folder if empty.
 * Returns the number of files left in it, or -errno. */
int conflicts_finish(const char *state, const char *id);

/* Removes folder ID and everything in it. 0 or -errno. */
int conflicts_remove(const char *state, const char *id);
/* Every copy in every folder: fn(id, path, st, arg). 0 or -errno. */
typedef void (*conflicts_fn)(const char *id, const char *path, const struct stat *st,
			     void *arg);
int conflicts_list(const char *state, conflicts_fn fn, void *arg);
/* Copies every file of folder ID into DEST (a mounted store: the copies
 * are written through the mount, so they replicate), over what is there,
 * after saving what is there into a new folder "<time>-restore". Returns
 * the number of files restored or -errno. */
int conflicts_restore(const char *state, const char *id, const char *dest);

/* Copies file or symlink SRC_FD/SRC_NAME to DST_FD/DST_NAME (replacing),
 * content, mode and times. 0 or -errno. Shared with resolve. */
int conflicts_copy_entry(int src_dirfd, const char *src_name, int dst_dirfd,
			 const char *dst_name);

#endif
