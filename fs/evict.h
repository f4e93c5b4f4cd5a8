/*
 * evict — keeps the inodes the kernel caches within the open-file limit.
 * Each inode in fs/inode.c holds an O_PATH fd, and the kernel keeps
 * inodes for as long as its caches do, so a large enough tree would use
 * every fd and make creates fail with EMFILE. A background thread asks
 * the kernel to drop the least recently looked-up names once the table
 * passes its budget; the kernel then forgets their inodes and the fds are
 * closed. The thread is never a FUSE worker: the kernel takes the
 * parent directory's lock to invalidate a name, and a worker may be
 * answering a request made under that lock.
 */
#ifndef TWINFS_FS_EVICT_H
#define TWINFS_FS_EVICT_H

#include <stdbool.h>
#include <stddef.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "fs/inode.h"

struct evict;

/* The table size at which eviction starts, for an open-file limit of
 * NOFILE: what is left once the journal's unacked batches (a quarter,
 * netsync/jbatch.c and sender.c) and everything else (an eighth, at least
 * 128: open files, the FUSE device clones and splice pipes, the journal's
 * own files, the table's overshoot while the kernel's forgets arrive)
 * have their share: 12,500 of the 20,000 this machine allows, so a
 * 10,000-file tree stays cached (at half, a warm `ls -lR` of it looked
 * every name up again: 0.37 s instead of 0.06 s). */
size_t evict_budget(unsigned long long nofile);

/* Starts the thread for table T on session SE (mounted), with the budget
 * from the current RLIMIT_NOFILE. Returns 0 or -errno. */
int evict_start(struct fuse_session *se, struct inode_table *t,
		struct evict **out);
/* Stops and joins the thread; NULL is fine. Call after the session loop
 * has ended and the kernel connection is gone. */
void evict_stop(struct evict *e);

/* True while the table is over its budget (NULL: false). */
bool evict_over(struct evict *e);

/* For a worker whose open failed with EMFILE or ENFILE: wakes the thread
 * and waits (at most a second) until the table has shrunk. True if it
 * did, so that a retry may succeed. NULL: false. */
bool evict_relieve(struct evict *e);

#endif
