/*
 * wire — little-endian field codec over caller memory, sshfs style: every
 * read is checked against the end of the buffer and fails with -EBADMSG
 * rather than over-reading; errors are sticky so decoders stay linear.
 * No allocation, no globals; any thread.
 */
#include "netsync/wire/wire.h"

#include <errno.h>
#include <string.h>

void wire_reader_init(struct wire_reader *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->err = 0;
}

/* Returns a pointer to the next n bytes and advances, or NULL (sticky). */
static const uint8_t *wire_take(struct wire_reader *r, size_t n)
{
	const uint8_t *q;

	if (r->err)
		return NULL;
	if (n > r->len - r->off) {
		r->err = -EBADMSG;
		return NULL;
	}
	q = r->p + r->off;
	r->off += n;
	return q;
}

int wire_get_u8(struct wire_reader *r, uint8_t *v)
{
	const uint8_t *q = wire_take(r, 1);

	if (!q)
		return -EBADMSG;
	*v = q[0];
	return 0;
}

int wire_get_u16(struct wire_reader *r, uint16_t *v)
{
	const uint8_t *q = wire_take(r, 2);

	if (!q)
		return -EBADMSG;
	*v = wire_rd16(q);
	return 0;
}

int wire_get_u32(struct wire_reader *r, uint32_t *v)
{
	const uint8_t *q = wire_take(r, 4);

	if (!q)
		return -EBADMSG;
	*v = wire_rd32(q);
	return 0;
}

int wire_get_u64(struct wire_reader *r, uint64_t *v)
{
	const uint8_t *q = wire_take(r, 8);

	if (!q)
		return -EBADMSG;
	*v = wire_rd64(q);
	return 0;
}

int wire_get_i64(struct wire_reader *r, int64_t *v)
{
	uint64_t u;
	int rc = wire_get_u64(r, &u);

	if (rc == 0)
		*v = (int64_t)u;
	return rc;
}

int wire_get_bytes(struct wire_reader *r, size_t n, const uint8_t **v)
{
	const uint8_t *q = wire_take(r, n);

	if (!q)
		return -EBADMSG;
	*v = q;
	return 0;
}

int wire_get_str(struct wire_reader *r, size_t max, const char **s, size_t *n)
{
	uint16_t len;
	const uint8_t *q;

	if (wire_get_u16(r, &len) < 0)
		return -EBADMSG;
	if (len > max) {
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	q = wire_take(r, (size_t)len + 1);
	if (!q)
		return -EBADMSG;
	if (q[len] != 0 || memchr(q, 0, len) != NULL) {
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	*s = (const char *)q;
	if (n)
		*n = len;
	return 0;
}

int wire_get_blob(struct wire_reader *r, size_t max, const uint8_t **v, size_t *n)
{
	uint32_t len;

	if (wire_get_u32(r, &len) < 0)
		return -EBADMSG;
	if (len > max) {
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	if (wire_get_bytes(r, len, v) < 0)
		return -EBADMSG;
	*n = len;
	return 0;
}

int wire_reader_done(const struct wire_reader *r)
{
	if (r->err || r->off != r->len)
		return -EBADMSG;
	return 0;
}

size_t wire_remaining(const struct wire_reader *r)
{
	return r->len - r->off;
}

void wire_writer_init(struct wire_writer *w, void *p, size_t cap)
{
	w->p = p;
	w->cap = cap;
	w->off = 0;
	w->err = 0;
}

static uint8_t *wire_room(struct wire_writer *w, size_t n)
{
	uint8_t *q;

	if (w->err)
		return NULL;
	if (n > w->cap - w->off) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	q = w->p + w->off;
	w->off += n;
	return q;
}

int wire_put_u8(struct wire_writer *w, uint8_t v)
{
	uint8_t *q = wire_room(w, 1);

	if (!q)
		return w->err;
	q[0] = v;
	return 0;
}

int wire_put_u16(struct wire_writer *w, uint16_t v)
{
	uint8_t *q = wire_room(w, 2);

	if (!q)
		return w->err;
	wire_le16(q, v);
	return 0;
}

int wire_put_u32(struct wire_writer *w, uint32_t v)
{
	uint8_t *q = wire_room(w, 4);

	if (!q)
		return w->err;
	wire_le32(q, v);
	return 0;
}

int wire_put_u64(struct wire_writer *w, uint64_t v)
{
	uint8_t *q = wire_room(w, 8);

	if (!q)
		return w->err;
	wire_le64(q, v);
	return 0;
}

int wire_put_bytes(struct wire_writer *w, const void *v, size_t n)
{
	uint8_t *q = wire_room(w, n);

	if (!q)
		return w->err;
	if (n)
		memcpy(q, v, n);
	return 0;
}

int wire_put_str(struct wire_writer *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT16_MAX) {
		w->err = -EINVAL;
		return -EINVAL;
	}
	wire_put_u16(w, (uint16_t)n);
	wire_put_bytes(w, s, n);
	return wire_put_u8(w, 0);
}

int wire_put_blob(struct wire_writer *w, const void *v, size_t n)
{
	if (n > UINT32_MAX) {
		w->err = -EINVAL;
		return -EINVAL;
	}
	wire_put_u32(w, (uint32_t)n);
	return wire_put_bytes(w, v, n);
}

size_t wire_str_size(const char *s)
{
	return 2 + (s ? strlen(s) : 0) + 1;
}
