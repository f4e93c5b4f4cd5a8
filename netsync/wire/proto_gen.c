/*
 * proto_gen — encoders and decoders of TAIL, TAIL_ACK and DIVERGED
 * (proto_gen.h). Payloads are built in a local buffer with the wire
 * writer and framed by proto_encode_raw. Pure; any thread.
 */
#include "netsync/wire/proto_gen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "netsync/wire/path.h"

int proto_encode_tail(struct evbuffer *out, const struct proto_tail *m)
{
	struct wire_writer w;
	size_t plen = 4 + wire_blob_size(m->len);
	uint8_t *buf;
	int rc;

	if (m->len > PROTO_TAIL_CHUNK || (m->len && m->paths[m->len - 1] != '\0'))
		return -EINVAL;
	buf = malloc(plen);
	if (!buf)
		return -ENOMEM;
	wire_writer_init(&w, buf, plen);
	wire_put_u32(&w, m->flags);
	wire_put_blob(&w, m->paths, m->len);
	rc = w.err ? -EINVAL : proto_encode_raw(out, PROTO_TAIL, buf, plen);
	free(buf);
	return rc;
}

int proto_decode_tail(const struct proto_frame *f, struct proto_tail *m)
{
	struct wire_reader r;
	const uint8_t *p = NULL;
	size_t n = 0, start = 0;
	int rc;

	if (f->h.type != PROTO_TAIL)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->flags);
	wire_get_blob(&r, PROTO_MAX_META_PAYLOAD, &p, &n);
	rc = wire_reader_done(&r);
	if (rc < 0)
		return rc;
	if (n && p[n - 1] != '\0')
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\0')
			continue;
		if (path_check((const char *)p + start, false) < 0)
			return -EBADMSG;
		start = i + 1;
	}
	m->paths = (const char *)p;
	m->len = n;
	return 0;
}

int proto_encode_tail_ack(struct evbuffer *out, uint64_t seq)
{
	uint8_t buf[8];

	wire_le64(buf, seq);
	return proto_encode_raw(out, PROTO_TAIL_ACK, buf, sizeof(buf));
}

int proto_decode_tail_ack(const struct proto_frame *f, uint64_t *seq)
{
	struct wire_reader r;

	if (f->h.type != PROTO_TAIL_ACK)
		return -EBADMSG;
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, seq);
	return wire_reader_done(&r);
}

size_t proto_version_size(const struct proto_version *v)
{
	return wire_str_size(v->path) + 4 + 8 + 8 + 16 + 4 + 4 + 16 + 4;
}

int proto_encode_diverged(struct evbuffer *out, uint32_t flags,
			  const struct proto_version *v, size_t n)
{
	struct wire_writer w;
	size_t plen = 8;
	uint8_t *buf;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (!v[i].path || strlen(v[i].path) > PROTO_PATH_MAX)
			return -EINVAL;
		plen += proto_version_size(&v[i]);
	}
	if (plen > PROTO_MAX_META_PAYLOAD || n > UINT32_MAX)
		return -EINVAL;
	buf = malloc(plen);
	if (!buf)
		return -ENOMEM;
	wire_writer_init(&w, buf, plen);
	wire_put_u32(&w, flags);
	wire_put_u32(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		wire_put_str(&w, v[i].path);
		wire_put_u32(&w, v[i].mode);
		wire_put_u64(&w, v[i].size);
		wire_put_u64(&w, (uint64_t)v[i].mtime_ns);
		wire_put_bytes(&w, v[i].hash, 16);
		wire_put_u32(&w, v[i].uid);
		wire_put_u32(&w, v[i].gid);
		wire_put_bytes(&w, v[i].xattrs, 16);
		wire_put_u32(&w, v[i].nlink);
	}
	rc = w.err ? -EINVAL : proto_encode_raw(out, PROTO_DIVERGED, buf, plen);
	free(buf);
	return rc;
}

int proto_diverged_next(struct proto_diverged *m, struct proto_version *v)
{
	const uint8_t *hash = NULL, *xattrs = NULL;
	uint64_t mt = 0;

	if (wire_remaining(&m->r) == 0)
		return 0;
	memset(v, 0, sizeof(*v));
	wire_get_str(&m->r, PROTO_PATH_MAX, &v->path, NULL);
	wire_get_u32(&m->r, &v->mode);
	wire_get_u64(&m->r, &v->size);
	wire_get_u64(&m->r, &mt);
	if (wire_get_bytes(&m->r, 16, &hash) < 0 || m->r.err)
		return -EBADMSG;
	wire_get_u32(&m->r, &v->uid);
	wire_get_u32(&m->r, &v->gid);
	if (wire_get_bytes(&m->r, 16, &xattrs) < 0)
		return -EBADMSG;
	wire_get_u32(&m->r, &v->nlink);
	if (m->r.err)
		return -EBADMSG;
	v->mtime_ns = (int64_t)mt;
	memcpy(v->hash, hash, 16);
	memcpy(v->xattrs, xattrs, 16);
	return 1;
}

int proto_decode_diverged(const struct proto_frame *f, struct proto_diverged *m)
{
	struct proto_diverged probe;
	struct proto_version v;
	uint32_t seen = 0;
	int rc;

	if (f->h.type != PROTO_DIVERGED)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&m->r, f->payload, f->h.len);
	wire_get_u32(&m->r, &m->flags);
	wire_get_u32(&m->r, &m->count);
	if (m->r.err)
		return -EBADMSG;
	probe = *m;
	while ((rc = proto_diverged_next(&probe, &v)) == 1) {
		if (path_check(v.path, false) < 0)
			return -EBADMSG;
		seen++;
	}
	return rc < 0 || seen != m->count ? -EBADMSG : 0;
}

int proto_encode_resolve(struct evbuffer *out, const struct proto_resolve *m)
{
	uint8_t buf[2 * 1030 + 16];
	struct wire_writer w;

	if ((m->stamp && strlen(m->stamp) > 64) || (m->name && strlen(m->name) > PROTO_TEXT_MAX))
		return -EINVAL;
	wire_writer_init(&w, buf, sizeof(buf));
	wire_put_u8(&w, m->step);
	wire_put_u8(&w, m->keep);
	wire_put_u16(&w, 0);
	wire_put_u64(&w, m->seq);
	wire_put_str(&w, m->stamp);
	wire_put_str(&w, m->name);
	return w.err ? -EINVAL : proto_encode_raw(out, PROTO_RESOLVE, buf, w.off);
}

int proto_decode_resolve(const struct proto_frame *f, struct proto_resolve *m)
{
	struct wire_reader r;
	uint16_t pad;

	if (f->h.type != PROTO_RESOLVE)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u8(&r, &m->step);
	wire_get_u8(&r, &m->keep);
	wire_get_u16(&r, &pad);
	wire_get_u64(&r, &m->seq);
	wire_get_str(&r, 64, &m->stamp, NULL);
	wire_get_str(&r, PROTO_TEXT_MAX, &m->name, NULL);
	if (wire_reader_done(&r) < 0 || m->step < PROTO_RS_REQUEST || m->step > PROTO_RS_RESTORE ||
	    (m->keep && m->keep > PROTO_KEEP_BOTH))
		return -EBADMSG;
	return 0;
}
