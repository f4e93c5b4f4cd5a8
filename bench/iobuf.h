/*
 * iobuf — the memory a `bench io` job reads into and writes from, placed in
 * transparent huge pages so that a direct IO reaches the device as one
 * physically contiguous segment (see the essay in iobuf.c). A job thread
 * allocates, fills, checks and frees its own buffer; nothing is shared.
 */
#ifndef TWINFS_BENCH_IOBUF_H
#define TWINFS_BENCH_IOBUF_H

#include <stddef.h>

#define IOBUF_ALIGN ((size_t)2 << 20)	/* one x86-64 PMD huge page */

struct iobuf {
	char *p;		/* IOBUF_ALIGN-aligned, len bytes usable */
	size_t len;
	size_t maplen;		/* len rounded up to IOBUF_ALIGN: what is mapped */
};

/* Maps at least len bytes (len > 0) at an IOBUF_ALIGN boundary and asks
 * for huge pages (MADV_HUGEPAGE; a kernel without THP just gives small
 * pages). The memory is zero and not yet touched. Returns 0 or -ENOMEM. */
int iobuf_alloc(struct iobuf *b, size_t len);
void iobuf_free(struct iobuf *b);

/* 1 if every resident page of the buffer's mapping is part of a huge page
 * (/proc/self/smaps: AnonHugePages == Anonymous, and some resident), 0 if
 * not, -errno if smaps cannot be read. Call after filling the buffer. */
int iobuf_huge(const struct iobuf *b);

#endif
