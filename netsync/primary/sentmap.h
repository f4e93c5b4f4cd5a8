/*
 * sentmap — what the peer holds, block by block, of the large files the
 * sender has sent: for each such file, the XXH3-64, the length and the
 * batch of every block-aligned block as it was last put on the wire.
 * The sender consults it before sending a block and skips one the peer
 * already holds (rules in sentmap.c). Loop thread only; not thread-safe.
 */
#ifndef TWINFS_SENTMAP_H
#define TWINFS_SENTMAP_H

#include <stdbool.h>
#include <stdint.h>

/* Files the map follows at once (least recently used goes first). */
#define SENTMAP_FILES 64

struct sentmap;

struct sentmap *sentmap_new(uint32_t block_size);
void sentmap_free(struct sentmap *m);
/* Forgets everything: another peer, or a baseline starts. */
void sentmap_clear(struct sentmap *m);
/* Forgets PATH and every path below it ("" forgets everything): an
 * operation naming it is about to reach the peer, or its data is about
 * to be sent in ranges the map does not follow. */
void sentmap_forget(struct sentmap *m, const char *path);
/* True if the peer holds this block of PATH: sent with the same length
 * and hash, at an aligned offset. A hit counts as use of PATH (least
 * recently used goes first). */
bool sentmap_holds(struct sentmap *m, const char *path, uint64_t off,
		   uint32_t len, uint64_t xxh3);
/* Records that the block was put on the wire in the batch ending at SEQ.
 * An unaligned offset, or one beyond what the map follows, forgets PATH
 * instead. 0 or -ENOMEM (PATH is then forgotten, which only costs a
 * re-send). */
int sentmap_note(struct sentmap *m, const char *path, uint64_t off, uint32_t len,
		 uint64_t xxh3, uint64_t seq);
/* A new connection to the same peer, which has made everything up to UPTO
 * durable: forgets the blocks sent in later batches (it may have lost
 * them, or hold them torn). */
void sentmap_keep(struct sentmap *m, uint64_t upto);
/* PATH's size on the peer is now SIZE: blocks reaching past it are
 * forgotten. */
void sentmap_trim(struct sentmap *m, const char *path, uint64_t size);
/* Files followed (for tests). */
unsigned sentmap_files(const struct sentmap *m);

#endif
