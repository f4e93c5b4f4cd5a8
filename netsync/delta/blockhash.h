/*
 * blockhash — the per-block XXH3-128 list of a file at a power-of-two
 * block size (docs/protocol.md, "Delta: trees and block hashes"): computed
 * from an fd on up to two threads, assembled from a peer's HASHES frames
 * with every consistency rule checked, compared block by block, and
 * folded into the digest a FILE_CHECK carries. Plain data; the caller's
 * thread (the hashing threads it starts are joined before it returns).
 */
#ifndef TWINFS_BLOCKHASH_H
#define TWINFS_BLOCKHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netsync/wire/proto.h"

struct blockhash {
	uint64_t size;		/* the file's size when hashed */
	uint32_t block_size;
	uint32_t n;		/* blocks: proto_blocks(size, block_size) */
	uint8_t *h;		/* n * 16 bytes, XXH3-128 canonical */
	uint64_t bytes_read;	/* content read to compute it (0: received) */
};

/* Files at least this big are hashed by two threads, one half each. */
#define BLOCKHASH_PARALLEL_MIN (32u << 20)

/* Hashes the regular file open on FD (its size by fstat) at block size BS.
 * 0 or -errno (-EFBIG: more than 2^32 blocks). */
int blockhash_fd(int fd, uint32_t bs, struct blockhash *out);
void blockhash_free(struct blockhash *b);

/*
 * Adds one decoded HASHES frame M for PATH to B (empty before the first
 * frame). Checks that M names PATH, keeps size and block size of the
 * first frame, and continues exactly where the previous frame ended.
 * Returns 1 when M was the last frame, 0 when more follow, -EBADMSG for
 * an inconsistent list, -ENOMEM; with M->err set, -(M->err).
 */
int blockhash_add_frame(struct blockhash *b, const char *path, uint32_t bs,
			const struct proto_hashes *m);

/* XXH3-128 of the block hashes back to back (the FILE_CHECK digest). */
void blockhash_digest(const struct blockhash *b, uint8_t out[16]);
/* True if block I of A and of B are equal (both must hold block I). */
bool blockhash_same(const struct blockhash *a, const struct blockhash *b, uint32_t i);
/* XXH3-128 of LEN bytes at P into OUT (canonical form). */
void blockhash_one(const void *p, size_t len, uint8_t out[16]);

#endif
