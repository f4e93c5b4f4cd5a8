/*
 * peerhash — the peer's answer to HASH_REQ (docs/protocol.md, "Delta:
 * trees and block hashes"): the block hashes of one file of the store,
 * from the hash cache while its key still matches, else read; or SAME
 * when the asker's quick check (size, mtime) matches and nothing is read.
 * Used by serve's loop (a primary's resync) and by mirror sessions. Any
 * thread; paths resolve beneath the store without following symlinks.
 */
#ifndef TWINFS_PEERHASH_H
#define TWINFS_PEERHASH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <event2/buffer.h>

#include "netsync/wire/proto.h"

struct blockhash;
struct hashcache;

/* The block list of the regular file PATH beneath ROOTFD at block size BS
 * (FRESH: never from the cache). *READ gets the bytes read. 0 or -errno
 * (-EISDIR: not a regular file; path errors as path_resolve). */
int peerhash_blocks(int rootfd, struct hashcache *cache, const char *path, uint32_t bs,
		    bool fresh, struct blockhash *b, uint64_t *read);

/*
 * The answer to Q in two steps, so that a large file can be hashed off
 * the caller's thread. peerhash_begin answers into OUT and returns 1 when
 * that costs no more than reading INLINE_MAX bytes (SAME, the cache, an
 * error, a small file); else it returns 0 with the file open in *FD and
 * its fstat in *ST for peerhash_finish (any thread), which hashes,
 * answers into OUT and closes FD. *READ: bytes read. -ENOMEM/-EINVAL:
 * nothing sensible could be encoded.
 */
int peerhash_begin(int rootfd, struct hashcache *cache, const struct proto_hash_req *q,
		   uint64_t inline_max, struct evbuffer *out, uint64_t *read, int *fd,
		   struct stat *st);
int peerhash_finish(int fd, struct stat *st, struct hashcache *cache,
		    const struct proto_hash_req *q, struct evbuffer *out, uint64_t *read);

/* Appends the answer to Q (HASHES frames, or one with err or SAME) to
 * OUT. 0 or -ENOMEM/-EINVAL (nothing sensible could be encoded). */
int peerhash_answer(int rootfd, struct hashcache *cache, const struct proto_hash_req *q,
		    struct evbuffer *out, uint64_t *read);

#endif
