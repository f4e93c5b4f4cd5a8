/*
 * storeops — store calls of the receiver on a (directory fd, name) that
 * follow nothing and open no FIFO or device. Returns 0 or -errno. Serve's
 * loop thread.
 */
#ifndef TWINFS_STOREOPS_H
#define TWINFS_STOREOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "journal/op.h"

/* How deep a subtree removal goes; deeper levels fail it with -ELOOP. */
#define STOREOPS_TREE_DEPTH 128

int storeops_chmod(int dirfd, const char *name, mode_t mode);
int storeops_remove(int dirfd, const char *name);
int storeops_set_mtime(int dirfd, const char *name, const struct timespec *mt);
bool storeops_in_list(const char *list, size_t len, const char *name);
int storeops_xattr_keep(int fd, const char *p, const struct journal_op *op);
int storeops_remove_tree(int dirfd, const char *name, int depth);
/* HAVE is the time WANT names (UTIME_NOW and UTIME_OMIT never are). */
bool storeops_ts_same(const struct timespec *have, const struct timespec *want);
/* NAME exists in DIRFD (not followed); its stat in ST. */
struct stat;
bool storeops_exists(int dirfd, const char *name, struct stat *st);
/* True if NAME in DIRFD is a non-directory with other names. */
bool storeops_is_shared(int dirfd, const char *name);
/* True if NAME in DIRFD is a whiteout (a 0:0 character device). */
bool storeops_is_whiteout(int dirfd, const char *name);
/* A RENAME_WHITEOUT from FNAME to TNAME that OP describes is applied
 * already (see storeops.c). */
bool storeops_whiteout_done(int fdir, const char *fname, int tdir, const char *tname,
			    const struct journal_op *op);
/* NAME in DIRFD opened for writing as a regular file, made with MODE when
 * missing (*MADE then), never opening a fifo or device: the fd, -ELOOP for
 * a symlink, -EISDIR for anything else in the way, or -errno. */
int storeops_open_reg(int dirfd, const char *name, mode_t mode, bool *made);

#endif
