/*
 * record — the one place where the filesystem talks to the journal:
 * namespace operations (with their store-relative paths), dirty data
 * ranges, truncates, forgotten inodes and commits. Every function is a
 * no-op when the mount has no journal. Any worker thread.
 */
#ifndef TWINFS_FS_RECORD_H
#define TWINFS_FS_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal/journal.h"

struct fs;
struct inode;
struct stat;

/* One namespace operation being applied: record_begin() takes the
 * journal's namespace lock, computes the paths (DIR/NAME, NAME NULL for
 * DIR itself; DIR2/NAME2 into path2 when DIR2 is set) and makes the
 * durability marks the op needs durable *before* the store changes;
 * the handler applies the op and fills op's other fields; record_end()
 * appends it if APPLIED and unlocks. A journal failure is logged, never
 * returned: the store change has happened (or will) and the application
 * is told the truth about that. */
struct record {
	struct journal_op op;
	char *paths;		/* owns op.path / op.path2 */
	bool ok;		/* paths known: the op can be appended */
	bool drops_link;	/* removes one name of a file with more */
	/* where the op happens, for its results (record_end) */
	struct inode *dir, *dir2;
	const char *name, *name2;
	/* The lstat of the entry a CREATE, MKDIR, MKNOD or SYMLINK made,
	 * when the handler read it under the lock after the op (its reply
	 * needs it anyway): record_end takes the entry's mtime from it
	 * instead of reading it again. NULL: record_end reads it. */
	const struct stat *made;
};

void record_begin(struct fs *fs, struct record *r, enum journal_op_type type,
		  struct inode *dir, const char *name,
		  struct inode *dir2, const char *name2);
/* When APPLIED, record_end first reads the op's results (journal/op.h:
 * the mtimes of the entries and directories it changed, and for a
 * RENAME_WHITEOUT the whiteout's owner) from the store. */
void record_end(struct fs *fs, struct record *r, bool applied);
/* Between the two: I was just made at the record's path, so that is the
 * path later records of I start from (no readlink for them). */
void record_seed(struct fs *fs, const struct record *r, struct inode *i);
/* Between the two of a LINK or RENAME: I now has the record's path2 as
 * a name, which later records of I may use (see record_path). */
void record_seed_path2(struct fs *fs, const struct record *r, struct inode *i);
/* Under the ns lock: DIR/NAME is a name of the non-directory (DEV, INO),
 * which has several links; kept so that its later records can name it
 * once the name its fd was opened through is gone (see record.c). */
void record_alias_note(struct fs *fs, struct inode *dir, const char *name,
		       dev_t dev, ino_t ino);
/* Under the ns lock: true if a name of (DEV, INO) is kept, i.e. it had
 * several links when one was made or looked up. */
bool record_alias_known(dev_t dev, ino_t ino);
/* A lookup found inode I (not a directory, several links) as DIR/NAME:
 * that name stays usable for I's records while it names I, even after
 * the name I's fd was opened by is removed. Takes the namespace lock. */
void record_seen(struct fs *fs, struct inode *dir, const char *name, struct inode *i);

/* Lets the journal run fs_scan_writers (ON, once mounted), or stops it
 * (waits for a scan under way). */
void record_set_scan(struct fs *fs, bool on);
/* Inode I was written behind our back (passthrough) and is not marked
 * yet: its durability mark holds until record_write or record_unpin
 * (journal_pin). */
void record_pin(struct fs *fs, struct inode *i, int fd);
void record_unpin(struct fs *fs, struct inode *i);
/* Data of inode I is about to change: the journal makes the file's
 * durability mark durable first (once per file and epoch; cheap after). */
void record_write_begin(struct fs *fs, struct inode *i, int fd);
/* Data of inode I in [off, off+len) changed (a range merge). FD is an fd
 * on the inode. */
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
 * DIR was removed). Only under the journal's namespace lock: it caches
 * DIR's path until fs->ns_gen changes (see record.c). */
int record_path(struct fs *fs, struct inode *dir, const char *name,
		char *buf, size_t len);

#endif
