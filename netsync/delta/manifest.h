/*
 * manifest — what the store looked like at a known point (a clean unmount,
 * or the mount-time scan), kept in STATE/manifest so that the next mount
 * finds what changed in the store while twinfs was not watching: one stat
 * per entry (inode, type+mode, size, mtime, ctime), never a read. Entries
 * are sorted in tree order (manifest_path_cmp), parents before children.
 * Plain data, single-threaded: whoever holds one owns it.
 */
#ifndef TWINFS_MANIFEST_H
#define TWINFS_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

struct manifest_entry {
	char *path;		/* store-relative, "" = the root */
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	uint32_t mode;		/* st_mode: type and permission bits */
	uint32_t nlink;
};

struct manifest {
	struct manifest_entry *e;
	size_t n, cap;
	uint64_t root_dev, root_ino;	/* the store it describes */
};

/* Tree order: byte order with '/' below every other byte, so that a
 * directory's descendants follow it contiguously ("a", "a/x", "a-b"). */
int manifest_path_cmp(const char *a, const char *b);

/* Appends a copy of E (its path copied). 0 or -ENOMEM. */
int manifest_add(struct manifest *m, const struct manifest_entry *e);
/* Sorts into tree order. */
void manifest_sort(struct manifest *m);
/* The entry for PATH in a sorted manifest, or NULL. */
const struct manifest_entry *manifest_find(const struct manifest *m, const char *path);
void manifest_free(struct manifest *m);	/* the entries; m itself stays */

/* Writes M durably as STATE_DIR/manifest (temp file, fsync, rename,
 * fsync of the directory). 0 or -errno. */
int manifest_write(const char *state_dir, const struct manifest *m);
/* Reads STATE_DIR/manifest into *m (sorted). -ENOENT if there is none,
 * -EBADMSG if it is damaged (checksum, format): both mean "unknown". */
int manifest_read(const char *state_dir, struct manifest *m);
/* Removes STATE_DIR/manifest (0 if there was none). */
int manifest_remove(const char *state_dir);

#endif
