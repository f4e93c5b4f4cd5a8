/*
 * hashcache — block hash lists remembered between runs, keyed by (device,
 * inode, size, mtime, ctime). A key that still matches means the content
 * was not written since (any write moves ctime, which user space cannot
 * set), so an unchanged tree is compared and a delta computed without
 * reading content. Kept as one file, DIR/hashcache (STATE of serve and of
 * a mount; the mirror client's --cache DIR), loaded at open and written
 * atomically at save. `verify` and `--checksum` never use it: they read.
 * Thread-safe (one mutex).
 */
#ifndef TWINFS_HASHCACHE_H
#define TWINFS_HASHCACHE_H

#include <stdint.h>
#include <sys/stat.h>

struct blockhash;
struct hashcache;

/* Loads DIR/hashcache (a missing or damaged file gives an empty cache).
 * 0 or -ENOMEM. */
int hashcache_open(const char *dir, struct hashcache **out);
/* Writes the cache if it changed (temp file, fsync, rename). 0 or -errno. */
int hashcache_save(struct hashcache *c);
void hashcache_close(struct hashcache *c);	/* NULL is fine; does not save */

/* The block list at block size BS: 1 and *OUT (a copy), 0, or -ENOMEM. */
int hashcache_lookup_blocks(struct hashcache *c, const struct stat *st, uint32_t bs,
			    struct blockhash *out);
void hashcache_store_blocks(struct hashcache *c, const struct stat *st,
			    const struct blockhash *b);
/* Entries held, lookups that hit, and lookups in all. */
void hashcache_stats(struct hashcache *c, uint64_t *entries, uint64_t *hits,
		     uint64_t *lookups);

#endif
