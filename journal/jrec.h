/*
 * jrec — the on-disk encoding of journal records and segment headers
 * (docs/journal.md). Pure functions on byte buffers, any thread; every
 * decoder is bounds-checked and returns -EBADMSG instead of over-reading.
 */
#ifndef TWINFS_JREC_H
#define TWINFS_JREC_H

#include <stddef.h>
#include <stdint.h>

#include "journal/journal.h"

#define JREC_MAGIC	0x4452574aU	/* "JWRD" little-endian */
#define JREC_HDR	16		/* magic, len, seq */
#define JREC_FIXED	104		/* fixed payload fields */
#define JREC_TRAILER	8		/* XXH3-64 of header + payload */
#define JREC_MIN	(JREC_HDR + JREC_FIXED + JREC_TRAILER)
#define JREC_MAX	(1u << 20)	/* 1 MiB: larger ops become needs-scan */

#define JSEG_MAGIC	"TWJSEG1"	/* 8 bytes with the NUL */
#define JSEG_HDR	32
#define JSEG_VERSION	1

/* Bytes jrec_encode() needs for op, or -E2BIG above JREC_MAX. */
int64_t jrec_size(const struct journal_op *op);
/* Encodes (seq, op) into buf (at least jrec_size() bytes). Returns the
 * record length. */
size_t jrec_encode(void *buf, uint64_t seq, const struct journal_op *op);

/* Checks the record at buf[0..avail): magic, length, checksum. Returns
 * its length, -EAGAIN if avail is too short for the length it claims (a
 * torn tail when at the end of a file), or -EBADMSG. *seq gets its seq. */
int64_t jrec_check(const void *buf, size_t avail, uint64_t *seq);
/* Decodes a checked record in place: out's strings point into buf (the
 * encoder stored each with a NUL). Returns 0 or -EBADMSG. */
int jrec_decode(const void *buf, size_t len, struct journal_rec *out);

/* Segment header: writes JSEG_HDR bytes / checks them. */
void jseg_hdr_encode(void *buf, uint64_t first_seq);
int jseg_hdr_check(const void *buf, size_t avail, uint64_t *first_seq);

#endif
