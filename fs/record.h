/*
 * record — the one place where the filesystem talks to the journal:
 * namespace operations (with their store-relative paths), dirty data
 * ranges, truncates, forgotten inodes and commits. Every function is a
 * no-op when the mount has no journal. Any worker thread.
 */
#ifndef TWINFS_FS_RECORD_H
#define TWINFS_FS_RECORD_H

#include <stdint.h>

#include "netsync/journal.h"

struct fs;
struct inode;

/* Bracket "apply to the store + record_op" so store and journal order
 * agree (journal_ns_lock). */
void record_lock(struct fs *fs);
void record_unlock(struct fs *fs);

/* Appends OP (caller holds record_lock). op->path is computed from DIR
 * and NAME (NAME NULL: the path of DIR itself), op->path2 likewise from
 * DIR2/NAME2 when DIR2 is not NULL. A failure is logged; the store change
 * has happened and the application is told it succeeded (the journal
 * falls back to a scan for that path). */
void record_op(struct fs *fs, struct journal_op *op,
	       struct inode *dir, const char *name,
	       struct inode *dir2, const char *name2);

/* Data of inode I changed in [off, off+len); FD is an fd on it. */
void record_write(struct fs *fs, struct inode *i, int fd, uint64_t off,
		  uint64_t len);
void record_truncate(struct fs *fs, struct inode *i, uint64_t size);
/* The kernel forgot I; if the store inode has no links left the journal
 * drops it. */
void record_forget(struct fs *fs, struct inode *i);
/* Makes every record so far durable. Returns 0 or -errno. */
int record_commit(struct fs *fs);

/* The path of DIR/NAME relative to the store root ("" for the root) into
 * BUF. Returns 0 or -errno (-ENAMETOOLONG for very deep paths, -ENOENT if
 * DIR was removed). */
int record_path(struct fs *fs, struct inode *dir, const char *name,
		char *buf, size_t len);

#endif
