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

#endif
