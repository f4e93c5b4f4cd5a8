/*
 * proto_delta — the convergence engine's frames (docs/protocol.md, "Delta:
 * trees and block hashes"): TREE_REQ, HASH_REQ, HASHES and FILE_CHECK.
 * Encoders append whole frames; decoders check every field and the
 * consistency of a hash list before a caller sees it (a peer's list is
 * untrusted input: tests/fuzz/fuzz_delta.c). Stateless; any thread.
 */
#include "netsync/wire/proto.h"

#include <errno.h>
#include <string.h>

#include "netsync/wire/proto_int.h"
#include "netsync/wire/wire.h"

#define HASH_REQ_FIXED (4 + 4)
#define HASHES_FIXED (8 + 4 + 4 + 4 + 4 + 4)
#define FILE_CHECK_FIXED (8 + 4 + 16)

bool proto_block_size_ok(uint32_t bs)
{
	return bs >= PROTO_DELTA_BLOCK_MIN && bs <= PROTO_DELTA_BLOCK_MAX && !(bs & (bs - 1));
}

int proto_encode_tree_req(struct evbuffer *out, const struct proto_tree_req *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!m->path || !proto_strlen_ok(m->path, PROTO_PATH_MAX))
		return -EINVAL;
	plen = 4 + wire_str_size(m->path);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, m->flags);
	wire_put_str(&o.w, m->path);
	return proto_out_end(out, &o, PROTO_TREE_REQ, (uint32_t)plen, (uint32_t)plen);
}

int proto_decode_tree_req(const struct proto_frame *f, struct proto_tree_req *m)
{
	struct wire_reader r;

	if (f->h.type != PROTO_TREE_REQ)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->flags);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, NULL);
	return wire_reader_done(&r);
}

int proto_encode_hash_req(struct evbuffer *out, const struct proto_hash_req *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!m->path || !*m->path || !proto_strlen_ok(m->path, PROTO_PATH_MAX) ||
	    !proto_block_size_ok(m->block_size))
		return -EINVAL;
	plen = HASH_REQ_FIXED + wire_str_size(m->path);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, m->block_size);
	wire_put_u32(&o.w, m->flags);
	wire_put_str(&o.w, m->path);
	return proto_out_end(out, &o, PROTO_HASH_REQ, (uint32_t)plen, (uint32_t)plen);
}

int proto_decode_hash_req(const struct proto_frame *f, struct proto_hash_req *m)
{
	struct wire_reader r;
	size_t n = 0;
	int rc;

	if (f->h.type != PROTO_HASH_REQ)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->block_size);
	wire_get_u32(&r, &m->flags);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, &n);
	rc = wire_reader_done(&r);
	if (rc < 0)
		return rc;
	return n && proto_block_size_ok(m->block_size) &&
	       !(m->flags & ~PROTO_HASH_F_ONE_NAME) ? 0 : -EBADMSG;
}

/* The rules every HASHES frame keeps, on both ends. */
static bool proto_hashes_ok(const struct proto_hashes *m)
{
	uint64_t blocks;

	if (!proto_block_size_ok(m->block_size) || m->count > PROTO_HASHES_CHUNK)
		return false;
	if (m->flags & ~PROTO_HASHES_F_LAST)
		return false;
	if (m->err)
		return m->first == 0 && m->count == 0 && m->size == 0 &&
		       m->flags == PROTO_HASHES_F_LAST;
	blocks = proto_blocks(m->size, m->block_size);
	if (blocks > UINT32_MAX || (uint64_t)m->first + m->count > blocks)
		return false;
	/* the last frame ends the list exactly */
	if ((m->flags & PROTO_HASHES_F_LAST) && (uint64_t)m->first + m->count != blocks)
		return false;
	/* only the last frame may be short (or empty: a 0-byte file) */
	if (!(m->flags & PROTO_HASHES_F_LAST) && m->count != PROTO_HASHES_CHUNK)
		return false;
	return true;
}

int proto_encode_hashes(struct evbuffer *out, const struct proto_hashes *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!m->path || !*m->path || !proto_strlen_ok(m->path, PROTO_PATH_MAX) ||
	    !proto_hashes_ok(m) || (m->count && !m->hashes))
		return -EINVAL;
	plen = HASHES_FIXED + wire_str_size(m->path) + wire_blob_size((size_t)m->count * 16);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, m->size);
	wire_put_u32(&o.w, m->block_size);
	wire_put_u32(&o.w, m->first);
	wire_put_u32(&o.w, m->count);
	wire_put_u32(&o.w, m->flags);
	wire_put_u32(&o.w, m->err);
	wire_put_str(&o.w, m->path);
	wire_put_blob(&o.w, m->hashes, (size_t)m->count * 16);
	return proto_out_end(out, &o, PROTO_HASHES, (uint32_t)plen, (uint32_t)plen);
}

int proto_decode_hashes(const struct proto_frame *f, struct proto_hashes *m)
{
	struct wire_reader r;
	size_t n = 0, blen = 0;
	int rc;

	if (f->h.type != PROTO_HASHES)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, &m->size);
	wire_get_u32(&r, &m->block_size);
	wire_get_u32(&r, &m->first);
	wire_get_u32(&r, &m->count);
	wire_get_u32(&r, &m->flags);
	wire_get_u32(&r, &m->err);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, &n);
	wire_get_blob(&r, (size_t)PROTO_HASHES_CHUNK * 16, &m->hashes, &blen);
	rc = wire_reader_done(&r);
	if (rc < 0)
		return rc;
	if (!n || blen != (size_t)m->count * 16 || !proto_hashes_ok(m))
		return -EBADMSG;
	if (!m->count)
		m->hashes = NULL;
	return 0;
}

int proto_encode_file_check(struct evbuffer *out, const struct proto_file_check *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!m->path || !*m->path || !proto_strlen_ok(m->path, PROTO_PATH_MAX) ||
	    !proto_block_size_ok(m->block_size))
		return -EINVAL;
	plen = FILE_CHECK_FIXED + wire_str_size(m->path);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, m->size);
	wire_put_u32(&o.w, m->block_size);
	wire_put_bytes(&o.w, m->digest, 16);
	wire_put_str(&o.w, m->path);
	return proto_out_end(out, &o, PROTO_FILE_CHECK, (uint32_t)plen, (uint32_t)plen);
}

int proto_decode_file_check(const struct proto_frame *f, struct proto_file_check *m)
{
	struct wire_reader r;
	const uint8_t *d = NULL;
	size_t n = 0;
	int rc;

	if (f->h.type != PROTO_FILE_CHECK)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, &m->size);
	wire_get_u32(&r, &m->block_size);
	if (wire_get_bytes(&r, 16, &d) == 0)
		memcpy(m->digest, d, 16);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, &n);
	rc = wire_reader_done(&r);
	if (rc < 0)
		return rc;
	return n && proto_block_size_ok(m->block_size) ? 0 : -EBADMSG;
}
