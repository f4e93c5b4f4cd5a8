/*
 * hashcache — block hash lists remembered between runs, keyed by (device,
 * inode, size, mtime, ctime). A key that still matches means the content
 * was not written since (any write moves ctime, which user space cannot
 * set), so an unchanged tree is compared and a delta computed without
 * reading content. Kept as one file, DIR/hashcache (STATE of serve and of
 * a mount; the mirror client's --cache DIR), loaded at open and written
 * atomically at save. A file from an earlier run is believed only where
 * what it describes is known to be on the disk (hashcache_open).
 * `verify` and `--checksum` never use it: they read. Thread-safe (one
 * mutex).
 */
#ifndef TWINFS_HASHCACHE_H
#define TWINFS_HASHCACHE_H

#include <stdint.h>
#include <sys/stat.h>

struct blockhash;
struct hashcache;

/* Loads DIR/hashcache for the tree open on ROOTFD (borrowed: it must stay
 * open until hashcache_close). A missing or damaged file gives an empty
 * cache, and so does one written by hashcache_save in another instance of
 * the tree's file system (a reboot, a power cut or a remount since: the
 * page cache its lists were made from may never have reached the disk).
 * One written by hashcache_save_synced is believed, and removed, as the
 * tree changes from now on. 0 or -ENOMEM. */
int hashcache_open(const char *dir, int rootfd, struct hashcache **out);
/* Writes the cache if it changed (temp file, fsync, rename), believed
 * again only in this instance of the file system. 0 or -errno. */
int hashcache_save(struct hashcache *c);
/* syncfs of the tree, then writes the lists made before it started,
 * believed in any later instance: at exit, once nothing this process
 * does writes the tree. 0 or -errno (a failed syncfs still saves as
 * hashcache_save does). */
int hashcache_save_synced(struct hashcache *c);
void hashcache_close(struct hashcache *c);	/* NULL is fine; does not save */

/* The block list at block size BS: 1 and *OUT (a copy), 0, or -ENOMEM. */
int hashcache_lookup_blocks(struct hashcache *c, const struct stat *st, uint32_t bs,
			    struct blockhash *out);
/* Keeps B under ST's key, unless ST's ctime is under 2 s old (a write in
 * the same tick need not move it: see hashcache.c). */
void hashcache_store_blocks(struct hashcache *c, const struct stat *st,
			    const struct blockhash *b);
/* Entries held, lookups that hit, and lookups in all. */
void hashcache_stats(struct hashcache *c, uint64_t *entries, uint64_t *hits,
		     uint64_t *lookups);

#endif
