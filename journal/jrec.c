/*
 * jrec — encodes and decodes journal records and segment headers
 * (netsync/jrec.h, format in docs/journal.md). Owns nothing; pure
 * functions called by the appending FUSE threads, the committer, the
 * sender's take_batch and offline recovery. Never touches files.
 */
#include "journal/jrec.h"

#include <errno.h>
#include <string.h>
#include <xxhash.h>

static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}
static uint16_t get16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Strings are stored as (length + 1) with 0 meaning NULL, followed by the
 * bytes and a NUL, so a decoded record can point straight into the buffer. */
static uint64_t jrec_strfield(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/*
 * Results (op.h, res_mask/res_mtime) follow the strings as an extension
 * whose length is in the fixed field at +96 (0: none, as in records
 * written before results existed, which therefore still decode):
 * u32 res_mask, then per JRES_* slot u64 tv_sec and u32 tv_nsec.
 */
#define JREC_RES_LEN (4 + JRES_N * 12)

int64_t jrec_size(const struct journal_op *op)
{
	uint64_t n = JREC_MIN;

	if (op->res_mask)
		n += JREC_RES_LEN;

	n += jrec_strfield(op->path ? op->path : "");
	n += jrec_strfield(op->path2);
	n += jrec_strfield(op->xname);
	if (op->xvalue || op->xsize)
		n += op->xsize + 1;
	if (n > JREC_MAX)
		return -E2BIG;
	return (int64_t)n;
}

static uint8_t *jrec_putstr(uint8_t *p, uint8_t *lenp, const char *s)
{
	if (!s) {
		put32(lenp, 0);
		return p;
	}
	size_t n = strlen(s);

	put32(lenp, (uint32_t)n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p + n + 1;
}

size_t jrec_encode(void *buf, uint64_t seq, const struct journal_op *op)
{
	uint8_t *b = buf, *f = b + JREC_HDR, *p = f + JREC_FIXED;
	size_t len;

	put32(b, JREC_MAGIC);
	put64(b + 8, seq);
	put16(f, (uint16_t)op->type);
	put16(f + 2, 0);
	put32(f + 4, op->mode);
	put32(f + 8, op->uid);
	put32(f + 12, op->gid);
	put32(f + 16, op->attr_mask);
	put32(f + 20, op->flags);
	put64(f + 24, op->rdev);
	put64(f + 32, op->size);
	put64(f + 40, op->ino);
	put64(f + 48, (uint64_t)op->atime.tv_sec);
	put64(f + 56, (uint64_t)op->atime.tv_nsec);
	put64(f + 64, (uint64_t)op->mtime.tv_sec);
	put64(f + 72, (uint64_t)op->mtime.tv_nsec);
	p = jrec_putstr(p, f + 80, op->path ? op->path : "");
	p = jrec_putstr(p, f + 84, op->path2);
	p = jrec_putstr(p, f + 88, op->xname);
	if (op->xvalue || op->xsize) {
		put32(f + 92, (uint32_t)op->xsize + 1);
		if (op->xsize)
			memcpy(p, op->xvalue, op->xsize);
		p[op->xsize] = '\0';
		p += op->xsize + 1;
	} else {
		put32(f + 92, 0);
	}
	if (op->res_mask) {
		put32(f + 96, JREC_RES_LEN);
		put32(p, op->res_mask);
		for (int k = 0; k < JRES_N; k++) {
			put64(p + 4 + 12 * k, (uint64_t)op->res_mtime[k].tv_sec);
			put32(p + 12 + 12 * k, (uint32_t)op->res_mtime[k].tv_nsec);
		}
		p += JREC_RES_LEN;
	} else {
		put32(f + 96, 0);
	}
	put32(f + 100, 0);	/* reserved */
	len = (size_t)(p - b) + JREC_TRAILER;
	put32(b + 4, (uint32_t)len);
	put64(p, XXH3_64bits(b, (size_t)(p - b)));
	return len;
}

int64_t jrec_check(const void *buf, size_t avail, uint64_t *seq)
{
	const uint8_t *b = buf;
	uint32_t len;

	if (avail < JREC_HDR)
		return -EAGAIN;
	if (get32(b) != JREC_MAGIC)
		return -EBADMSG;
	len = get32(b + 4);
	if (len < JREC_MIN || len > JREC_MAX)
		return -EBADMSG;
	if (len > avail)
		return -EAGAIN;
	if (XXH3_64bits(b, len - JREC_TRAILER) != get64(b + len - JREC_TRAILER))
		return -EBADMSG;
	*seq = get64(b + 8);
	return len;
}

/* Takes one string field of n (encoded) bytes from [*p, end). */
static int jrec_getstr(const uint8_t **p, const uint8_t *end, uint32_t n, const char **out)
{
	if (n == 0) {
		*out = NULL;
		return 0;
	}
	if ((size_t)(end - *p) < n || (*p)[n - 1] != '\0')
		return -EBADMSG;
	if (memchr(*p, '\0', n - 1))
		return -EBADMSG;	/* embedded NUL: not a path */
	*out = (const char *)*p;
	*p += n;
	return 0;
}

int jrec_decode(const void *buf, size_t len, struct journal_rec *out)
{
	const uint8_t *b = buf, *f = b + JREC_HDR, *p = f + JREC_FIXED;
	const uint8_t *end = b + len - JREC_TRAILER;
	struct journal_op *op = &out->op;
	uint32_t xv;

	if (len < JREC_MIN)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->seq = get64(b + 8);
	op->type = (enum journal_op_type)get16(f);
	op->mode = get32(f + 4);
	op->uid = get32(f + 8);
	op->gid = get32(f + 12);
	op->attr_mask = get32(f + 16);
	op->flags = get32(f + 20);
	op->rdev = get64(f + 24);
	op->size = get64(f + 32);
	op->ino = get64(f + 40);
	op->atime.tv_sec = (time_t)get64(f + 48);
	op->atime.tv_nsec = (long)get64(f + 56);
	op->mtime.tv_sec = (time_t)get64(f + 64);
	op->mtime.tv_nsec = (long)get64(f + 72);
	if (jrec_getstr(&p, end, get32(f + 80), &op->path) < 0 || !op->path ||
	    jrec_getstr(&p, end, get32(f + 84), &op->path2) < 0 ||
	    jrec_getstr(&p, end, get32(f + 88), &op->xname) < 0)
		return -EBADMSG;
	xv = get32(f + 92);
	if (xv) {
		if ((size_t)(end - p) < xv)
			return -EBADMSG;
		op->xvalue = p;
		op->xsize = xv - 1;
		p += xv;
	}
	xv = get32(f + 96);
	if (xv) {
		if (xv != JREC_RES_LEN || (size_t)(end - p) < xv)
			return -EBADMSG;
		op->res_mask = get32(p) & (JRES_BIT(JRES_N) - 1);
		for (int k = 0; k < JRES_N; k++) {
			op->res_mtime[k].tv_sec = (time_t)get64(p + 4 + 12 * k);
			op->res_mtime[k].tv_nsec = (long)get32(p + 12 + 12 * k);
			if (op->res_mtime[k].tv_nsec >= 1000000000L)
				return -EBADMSG;
		}
		p += xv;
	}
	if (p != end)
		return -EBADMSG;
	if (journal_op_name(op->type) == NULL)
		return -EBADMSG;
	return 0;
}

void jseg_hdr_encode(void *buf, uint64_t first_seq)
{
	uint8_t *b = buf;

	memset(b, 0, JSEG_HDR);
	memcpy(b, JSEG_MAGIC, 8);
	put32(b + 8, JSEG_VERSION);
	put32(b + 12, JSEG_HDR);
	put64(b + 16, first_seq);
	put64(b + 24, XXH3_64bits(b, 24));
}

int jseg_hdr_check(const void *buf, size_t avail, uint64_t *first_seq)
{
	const uint8_t *b = buf;

	if (avail < JSEG_HDR)
		return -EAGAIN;
	if (memcmp(b, JSEG_MAGIC, 8) != 0 || get32(b + 8) != JSEG_VERSION ||
	    get32(b + 12) != JSEG_HDR || XXH3_64bits(b, 24) != get64(b + 24))
		return -EBADMSG;
	*first_seq = get64(b + 16);
	return 0;
}
