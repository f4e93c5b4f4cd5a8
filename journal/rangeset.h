/*
 * rangeset — a sorted set of disjoint byte ranges [off, end), merged on
 * insert (overlapping and adjacent ranges become one). Used by the journal
 * for the dirty ranges of one inode. Not thread-safe: the owner locks.
 */
#ifndef TWINFS_RANGESET_H
#define TWINFS_RANGESET_H

#include <stddef.h>
#include <stdint.h>

struct rangeset_span {
	uint64_t off, end;	/* end exclusive, off < end */
};

struct rangeset {
	struct rangeset_span *v;	/* sorted by off, disjoint, not adjacent */
	size_t n, cap;
	uint64_t bytes;			/* sum of (end - off) */
};

void rangeset_init(struct rangeset *rs);
void rangeset_free(struct rangeset *rs);
/* Forgets every range, keeps the memory. */
void rangeset_clear(struct rangeset *rs);
/* Adds [off, off+len), merging with overlapping or adjacent ranges. The
 * common case (appending at or inside the last range) is O(1). Returns 0,
 * or -ENOMEM (the set is unchanged). len 0 is a no-op; off+len is clamped
 * to UINT64_MAX. */
int rangeset_add(struct rangeset *rs, uint64_t off, uint64_t len);
/* Drops every byte at or beyond size (a truncate). */
void rangeset_truncate(struct rangeset *rs, uint64_t size);
/* Moves every range of src into dst (merging); src ends empty. 0/-ENOMEM. */
int rangeset_merge_into(struct rangeset *dst, struct rangeset *src);

#endif
