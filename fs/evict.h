/*
 * evict — keeps the inodes the kernel caches near the open-file budget.
 * Each inode the kernel knows is an entry in fs/inode.c, and the kernel
 * keeps them for as long as its caches do. The entries' fds are capped
 * there (a detached entry is reopened when used), so this is about the
 * cost of reopening and of the table, never about running out: a
 * background thread asks the kernel to drop the least recently
 * looked-up names once the table passes the budget, and nobody waits for
 * it. It is never a FUSE worker: the kernel takes the parent directory's
 * lock to invalidate a name, and a worker may be answering a request made
 * under that lock.
 */
#ifndef TWINFS_FS_EVICT_H
#define TWINFS_FS_EVICT_H

#include <stdbool.h>
#include <stddef.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "fs/inode.h"

struct evict;

/* The table's fd budget and the size at which eviction starts, for an
 * open-file limit of NOFILE: what is left once the journal's unacked
 * batches (a quarter, journal/jbatch.c and the sender) and everything else
 * (an eighth, at least 128: open files, the FUSE device clones and splice
 * pipes, the journal's own files, fds reopened for one request) have their
 * share: 12,500 of 20,000, so that a 10,000-file tree stays cached (at
 * half, a warm `ls -lR` of it had to look every name up again). */
size_t evict_budget(unsigned long long nofile);

/* Starts the thread for table T on session SE (mounted), with the budget
 * from the current RLIMIT_NOFILE, which also becomes T's fd cap
 * (inode_set_fd_cap). Returns 0 or -errno. */
int evict_start(struct fuse_session *se, struct inode_table *t,
		struct evict **out);
/* Stops and joins the thread; NULL is fine. Call after the session loop
 * has ended and the kernel connection is gone. */
void evict_stop(struct evict *e);

/* True while the table is over its budget (NULL: false). */
bool evict_over(struct evict *e);

#endif
