/*
 * wire — bounds-checked little-endian field readers and writers for the
 * replication protocol (docs/protocol.md). A reader never reads past its
 * end: every getter returns -EBADMSG instead, and the error is sticky so a
 * decoder may check once at the end. A writer fills a caller-provided
 * buffer and returns -EMSGSIZE (sticky) when it would overflow.
 * Pure functions on caller memory; any thread.
 */
#ifndef TWINFS_WIRE_H
#define TWINFS_WIRE_H

#include <stddef.h>
#include <stdint.h>

struct wire_reader {
	const uint8_t *p;
	size_t len;	/* bytes in p */
	size_t off;	/* next byte to read */
	int err;	/* 0 or -EBADMSG once any read failed */
};

struct wire_writer {
	uint8_t *p;
	size_t cap;
	size_t off;	/* bytes written */
	int err;	/* 0 or -EMSGSIZE once any write failed */
};

void wire_reader_init(struct wire_reader *r, const void *p, size_t len);
int wire_get_u8(struct wire_reader *r, uint8_t *v);
int wire_get_u16(struct wire_reader *r, uint16_t *v);
int wire_get_u32(struct wire_reader *r, uint32_t *v);
int wire_get_u64(struct wire_reader *r, uint64_t *v);
int wire_get_i64(struct wire_reader *r, int64_t *v);
/* Points *v at the next n bytes (no copy). */
int wire_get_bytes(struct wire_reader *r, size_t n, const uint8_t **v);
/* A str (u16 length, bytes, NUL): *s points into the buffer, NUL-terminated;
 * fails if longer than max, if the NUL is missing or if a 0 byte is
 * embedded. *n gets the length (may be NULL). */
int wire_get_str(struct wire_reader *r, size_t max, const char **s, size_t *n);
/* A blob (u32 length, bytes) of at most max bytes. */
int wire_get_blob(struct wire_reader *r, size_t max, const uint8_t **v, size_t *n);
/* 0 if every read succeeded and the whole buffer was consumed, else -EBADMSG. */
int wire_reader_done(const struct wire_reader *r);
size_t wire_remaining(const struct wire_reader *r);

void wire_writer_init(struct wire_writer *w, void *p, size_t cap);
int wire_put_u8(struct wire_writer *w, uint8_t v);
int wire_put_u16(struct wire_writer *w, uint16_t v);
int wire_put_u32(struct wire_writer *w, uint32_t v);
int wire_put_u64(struct wire_writer *w, uint64_t v);
int wire_put_bytes(struct wire_writer *w, const void *v, size_t n);
/* s may be NULL (written as ""). -EINVAL if longer than 65535. */
int wire_put_str(struct wire_writer *w, const char *s);
int wire_put_blob(struct wire_writer *w, const void *v, size_t n);
/* Encoded sizes, for sizing a buffer before writing. */
size_t wire_str_size(const char *s);
static inline size_t wire_blob_size(size_t n) { return 4 + n; }

static inline void wire_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void wire_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void wire_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t wire_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t wire_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}
static inline uint64_t wire_rd64(const uint8_t *p)
{
	return (uint64_t)wire_rd32(p) | ((uint64_t)wire_rd32(p + 4) << 32);
}

#endif
