/*
 * proto — frames and messages of the replication protocol. Owns the byte
 * layout of every message (docs/protocol.md); knows nothing about stores,
 * journals or sockets beyond the evbuffer it appends to or reads from.
 * Called by the sender thread of a mount and the event loop of `serve`;
 * stateless, so any thread.
 */
#include "netsync/wire/proto.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "netsync/wire/proto_int.h"
#include "netsync/wire/wire.h"

/* Fixed payload bytes before the strings/blobs of each message. */
#define HELLO_FIXED (4 + 1 + 3 + 4 + 16 + 8 + 8)
/* After the name (version 4): head_seq u64, hist_n u16, the entries. */
#define HELLO_GEN_LEN (8 * 3 + 16)
#define OP_FIXED (8 + 2 + 2 + 4 * 5 + 8 * 3 + 12 * 2)
/* After the OP's strings: res_mask u32 and JRES_N times (version 3). */
#define OP_RES (4 + 12 * JRES_N)
#define DATA_FIXED (8 + 4 + 4 + 8)
#define ATTR_FIXED (4 * 4 + 8 + 12 * 2)

static const char *const proto_type_names[] = {
	[PROTO_HELLO] = "HELLO", [PROTO_OP] = "OP", [PROTO_DATA] = "DATA",
	[PROTO_ATTR] = "ATTR", [PROTO_BATCH_END] = "BATCH_END",
	[PROTO_ACK] = "ACK", [PROTO_HEARTBEAT] = "HEARTBEAT",
	[PROTO_GOODBYE] = "GOODBYE", [PROTO_ERROR] = "ERROR",
	[PROTO_PRUNE] = "PRUNE", [PROTO_ENTRY] = "ENTRY",
	[PROTO_ENTRIES_END] = "ENTRIES_END", [PROTO_TAIL] = "TAIL",
	[PROTO_TAIL_ACK] = "TAIL_ACK", [PROTO_DIVERGED] = "DIVERGED",
	[PROTO_RESOLVE] = "RESOLVE", [PROTO_TREE_REQ] = "TREE_REQ",
	[PROTO_HASH_REQ] = "HASH_REQ", [PROTO_HASHES] = "HASHES",
	[PROTO_FILE_CHECK] = "FILE_CHECK",
};

static const char *const proto_err_names[] = {
	[PROTO_E_VERSION] = "version", [PROTO_E_BUSY] = "busy",
	[PROTO_E_BADFRAME] = "bad-frame", [PROTO_E_BADHASH] = "bad-hash",
	[PROTO_E_APPLY] = "apply", [PROTO_E_PATH] = "path",
	[PROTO_E_ROLE] = "role", [PROTO_E_SPLITBRAIN] = "split-brain",
	[PROTO_E_SHUTDOWN] = "shutdown", [PROTO_E_AHEAD] = "ahead",
	[PROTO_E_FOREIGN] = "foreign",
};

static const char *const proto_op_names[] = {
	[JOP_CREATE] = "create", [JOP_MKDIR] = "mkdir", [JOP_MKNOD] = "mknod",
	[JOP_SYMLINK] = "symlink", [JOP_LINK] = "link", [JOP_RENAME] = "rename",
	[JOP_UNLINK] = "unlink", [JOP_RMDIR] = "rmdir", [JOP_SETATTR] = "setattr",
	[JOP_SETXATTR] = "setxattr", [JOP_REMOVEXATTR] = "removexattr",
};

const char *proto_op_name(unsigned op)
{
	if (op < sizeof(proto_op_names) / sizeof(proto_op_names[0]) && proto_op_names[op])
		return proto_op_names[op];
	return "op";
}

const char *proto_type_name(unsigned type)
{
	if (type < sizeof(proto_type_names) / sizeof(proto_type_names[0]) &&
	    proto_type_names[type])
		return proto_type_names[type];
	return "UNKNOWN";
}

const char *proto_err_name(unsigned code)
{
	if (code < sizeof(proto_err_names) / sizeof(proto_err_names[0]) &&
	    proto_err_names[code])
		return proto_err_names[code];
	return "unknown";
}

static uint32_t proto_max_payload(unsigned type)
{
	return type == PROTO_DATA ? PROTO_MAX_DATA_PAYLOAD : PROTO_MAX_META_PAYLOAD;
}

int proto_hdr_parse(const uint8_t *buf, struct proto_hdr *h)
{
	if (wire_rd32(buf) != PROTO_MAGIC)
		return -EBADMSG;
	h->type = wire_rd16(buf + 4);
	h->flags = wire_rd16(buf + 6);
	h->len = wire_rd32(buf + 8);
	h->clen = wire_rd32(buf + 12);
	h->check = wire_rd64(buf + 16);
	if ((h->type < PROTO_HELLO || h->type > PROTO_GEN_MAX) &&
	    (h->type < PROTO_TREE_REQ || h->type > PROTO_FILE_CHECK))
		return -EBADMSG;
	if (h->len > proto_max_payload(h->type))
		return -EBADMSG;
	if (h->type == PROTO_DATA) {
		if (h->clen > h->len || h->len - h->clen > PROTO_MAX_BLOCK)
			return -EBADMSG;
	} else if (h->clen != h->len) {
		return -EBADMSG;
	}
	return 0;
}

void proto_hdr_write(uint8_t *buf, const struct proto_hdr *h)
{
	wire_le32(buf, PROTO_MAGIC);
	wire_le16(buf + 4, h->type);
	wire_le16(buf + 6, h->flags);
	wire_le32(buf + 8, h->len);
	wire_le32(buf + 12, h->clen);
	wire_le64(buf + 16, h->check);
}

/* XXH3 over frame[0, 24 + clen) with the check field read as zero. The
 * frame is contiguous and writable; the check field is restored. */
static uint64_t proto_frame_hash(uint8_t *frame, uint32_t clen)
{
	uint8_t saved[8];
	uint64_t h;

	memcpy(saved, frame + 16, 8);
	memset(frame + 16, 0, 8);
	h = XXH3_64bits(frame, PROTO_HDR_LEN + (size_t)clen);
	memcpy(frame + 16, saved, 8);
	return h;
}

int proto_frame_parse(uint8_t *buf, size_t have, struct proto_frame *f)
{
	static const uint8_t magic[4] = { 'T', 'W', 'F', '1' };

	if (have < PROTO_HDR_LEN)
		return memcmp(buf, magic, have < 4 ? have : 4) == 0 ? 0 : -EBADMSG;
	if (proto_hdr_parse(buf, &f->h) < 0)
		return -EBADMSG;
	if (have < PROTO_HDR_LEN + (size_t)f->h.len)
		return 0;
	if (proto_frame_hash(buf, f->h.clen) != f->h.check)
		return -EBADMSG;
	f->payload = buf + PROTO_HDR_LEN;
	return 1;
}

int proto_frame_next(struct evbuffer *in, struct proto_frame *f)
{
	uint8_t hdr[PROTO_HDR_LEN];
	size_t have = evbuffer_get_length(in);
	uint8_t *p;

	if (have < PROTO_HDR_LEN) {
		/* reject garbage by its first bytes instead of waiting for 24 */
		static const uint8_t magic[4] = { 'T', 'W', 'F', '1' };
		size_t n = have < 4 ? have : 4;

		if (evbuffer_copyout(in, hdr, n) != (ev_ssize_t)n)
			return -EIO;
		return memcmp(hdr, magic, n) == 0 ? 0 : -EBADMSG;
	}
	if (evbuffer_copyout(in, hdr, sizeof(hdr)) != (ev_ssize_t)sizeof(hdr))
		return -EIO;
	if (proto_hdr_parse(hdr, &f->h) < 0)
		return -EBADMSG;
	if (have < PROTO_HDR_LEN + (size_t)f->h.len)
		return 0;
	p = evbuffer_pullup(in, PROTO_HDR_LEN + (ev_ssize_t)f->h.len);
	if (!p)
		return -ENOMEM;
	if (proto_frame_hash(p, f->h.clen) != f->h.check)
		return -EBADMSG;
	f->payload = p + PROTO_HDR_LEN;
	return 1;
}

void proto_frame_consume(struct evbuffer *in, const struct proto_frame *f)
{
	evbuffer_drain(in, PROTO_HDR_LEN + (size_t)f->h.len);
}

/* ---- encoding ---- */

/* Reserves one contiguous extent for a frame with PLEN payload bytes and
 * points the writer at its payload. */
int proto_out_begin(struct evbuffer *out, struct proto_out *o, size_t plen)
{
	o->plen = plen;
	if (evbuffer_reserve_space(out, (ev_ssize_t)(PROTO_HDR_LEN + plen), &o->v, 1) != 1)
		return -ENOMEM;
	wire_writer_init(&o->w, (uint8_t *)o->v.iov_base + PROTO_HDR_LEN, plen);
	return 0;
}

/* Writes the header (with FLAGS) and check of a frame whose payload is
 * complete and whose first CLEN payload bytes are checked, then commits it. */
static int proto_out_end_flags(struct evbuffer *out, struct proto_out *o, uint16_t type,
			       uint32_t len, uint32_t clen, uint16_t flags)
{
	struct proto_hdr h = { .type = type, .flags = flags, .len = len, .clen = clen };
	uint8_t *frame = o->v.iov_base;

	if (o->w.err)
		return o->w.err == -EMSGSIZE ? -EINVAL : o->w.err;
	if (o->w.off != o->plen)
		return -EINVAL;
	proto_hdr_write(frame, &h);
	h.check = proto_frame_hash(frame, clen);
	wire_le64(frame + 16, h.check);
	o->v.iov_len = PROTO_HDR_LEN + o->plen;
	if (evbuffer_commit_space(out, &o->v, 1) < 0)
		return -ENOMEM;
	return 0;
}

int proto_out_end(struct evbuffer *out, struct proto_out *o,
		  uint16_t type, uint32_t len, uint32_t clen)
{
	return proto_out_end_flags(out, o, type, len, clen, 0);
}

static void proto_put_time(struct wire_writer *w, const struct timespec *t)
{
	wire_put_u64(w, (uint64_t)(int64_t)t->tv_sec);
	wire_put_u32(w, (uint32_t)t->tv_nsec);
}

bool proto_strlen_ok(const char *s, size_t max)
{
	return !s || strlen(s) <= max;
}

int proto_encode_hello(struct evbuffer *out, const struct proto_hello *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(m->name, PROTO_TEXT_MAX))
		return -EINVAL;
	if (m->hist_n > PROTO_HIST_MAX)
		return -EINVAL;
	plen = HELLO_FIXED + wire_str_size(m->name) + 8 + 2 + m->hist_n * HELLO_GEN_LEN;
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, m->version);
	wire_put_u8(&o.w, m->role);
	wire_put_bytes(&o.w, "\0\0\0", 3);
	wire_put_u32(&o.w, m->flags);
	wire_put_bytes(&o.w, m->node_id, 16);
	wire_put_u64(&o.w, m->generation);
	wire_put_u64(&o.w, m->applied_seq);
	wire_put_str(&o.w, m->name);
	wire_put_u64(&o.w, m->head_seq);
	wire_put_u16(&o.w, m->hist_n);
	for (uint16_t i = 0; i < m->hist_n; i++) {
		wire_put_u64(&o.w, m->hist[i].num);
		wire_put_u64(&o.w, m->hist[i].id);
		wire_put_u64(&o.w, m->hist[i].start);
		wire_put_bytes(&o.w, m->hist[i].node, 16);
	}
	return proto_out_end(out, &o, PROTO_HELLO, plen, plen);
}

int proto_encode_raw(struct evbuffer *out, uint16_t type, const void *payload, size_t len)
{
	struct proto_out o;
	int rc;

	if (type < PROTO_HELLO || type > PROTO_FILE_CHECK || type == PROTO_DATA ||
	    len > PROTO_MAX_META_PAYLOAD)
		return -EINVAL;
	rc = proto_out_begin(out, &o, len);
	if (rc < 0)
		return rc;
	wire_put_bytes(&o.w, payload, len);
	return proto_out_end(out, &o, type, (uint32_t)len, (uint32_t)len);
}

int proto_encode_op(struct evbuffer *out, uint64_t seq, const struct journal_op *op)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(op->path, PROTO_PATH_MAX) ||
	    !proto_strlen_ok(op->path2, PROTO_PATH_MAX) ||
	    !proto_strlen_ok(op->xname, PROTO_XNAME_MAX) ||
	    op->xsize > PROTO_XVALUE_MAX || (op->xsize && !op->xvalue))
		return -EINVAL;
	plen = OP_FIXED + wire_str_size(op->path) + wire_str_size(op->path2) +
	       wire_str_size(op->xname) + wire_blob_size(op->xsize) + OP_RES;
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, seq);
	wire_put_u16(&o.w, (uint16_t)op->type);
	wire_put_u16(&o.w, 0);
	wire_put_u32(&o.w, op->flags);
	wire_put_u32(&o.w, op->mode);
	wire_put_u32(&o.w, op->uid);
	wire_put_u32(&o.w, op->gid);
	wire_put_u32(&o.w, op->attr_mask);
	wire_put_u64(&o.w, op->rdev);
	wire_put_u64(&o.w, op->size);
	wire_put_u64(&o.w, op->ino);
	proto_put_time(&o.w, &op->atime);
	proto_put_time(&o.w, &op->mtime);
	wire_put_str(&o.w, op->path);
	wire_put_str(&o.w, op->path2);
	wire_put_str(&o.w, op->xname);
	wire_put_blob(&o.w, op->xvalue, op->xsize);
	wire_put_u32(&o.w, op->res_mask);
	for (int k = 0; k < JRES_N; k++) {
		static const struct timespec none = { 0, 0 };

		proto_put_time(&o.w, (op->res_mask & JRES_BIT(k)) ? &op->res_mtime[k] : &none);
	}
	return proto_out_end(out, &o, PROTO_OP, plen, plen);
}

int proto_encode_attr(struct evbuffer *out, const struct proto_attr *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(m->path, PROTO_PATH_MAX))
		return -EINVAL;
	plen = ATTR_FIXED + wire_str_size(m->path);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, m->mask);
	wire_put_u32(&o.w, m->mode);
	wire_put_u32(&o.w, m->uid);
	wire_put_u32(&o.w, m->gid);
	wire_put_u64(&o.w, m->size);
	proto_put_time(&o.w, &m->atime);
	proto_put_time(&o.w, &m->mtime);
	wire_put_str(&o.w, m->path);
	return proto_out_end(out, &o, PROTO_ATTR, plen, plen);
}

int proto_encode_prune(struct evbuffer *out, const struct proto_prune *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(m->path, PROTO_PATH_MAX) ||
	    m->names_len > PROTO_PRUNE_CHUNK ||
	    (m->names_len && m->names[m->names_len - 1] != '\0'))
		return -EINVAL;
	plen = 8 + 4 + wire_str_size(m->path) + wire_blob_size(m->names_len);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, m->seq);
	wire_put_u32(&o.w, m->flags);
	wire_put_str(&o.w, m->path);
	wire_put_blob(&o.w, m->names, m->names_len);
	return proto_out_end(out, &o, PROTO_PRUNE, plen, plen);
}

static int proto_encode_u64(struct evbuffer *out, uint16_t type, uint64_t v)
{
	struct proto_out o;
	int rc = proto_out_begin(out, &o, 8);

	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, v);
	return proto_out_end(out, &o, type, 8, 8);
}

int proto_encode_batch_end(struct evbuffer *out, uint64_t seq)
{
	return proto_encode_u64(out, PROTO_BATCH_END, seq);
}

int proto_encode_ack(struct evbuffer *out, uint64_t seq)
{
	return proto_encode_u64(out, PROTO_ACK, seq);
}

int proto_encode_heartbeat(struct evbuffer *out, uint64_t now_ms)
{
	return proto_encode_u64(out, PROTO_HEARTBEAT, now_ms);
}

int proto_encode_goodbye(struct evbuffer *out, const char *reason)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(reason, PROTO_TEXT_MAX))
		return -EINVAL;
	plen = wire_str_size(reason);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_str(&o.w, reason);
	return proto_out_end(out, &o, PROTO_GOODBYE, plen, plen);
}

static int proto_encode_error_flags(struct evbuffer *out, uint32_t code, const char *text,
				    uint16_t flags)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!proto_strlen_ok(text, PROTO_TEXT_MAX))
		return -EINVAL;
	plen = 4 + wire_str_size(text);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, code);
	wire_put_str(&o.w, text);
	return proto_out_end_flags(out, &o, PROTO_ERROR, plen, plen, flags);
}

int proto_encode_error(struct evbuffer *out, uint32_t code, const char *text)
{
	return proto_encode_error_flags(out, code, text, 0);
}

int proto_encode_error_retry(struct evbuffer *out, uint32_t code, const char *text)
{
	return proto_encode_error_flags(out, code, text, PROTO_F_RETRY);
}

/*
 * DATA frames are the one place where "hash once" matters: the check of
 * the frame covers the header and the fixed fields (which include the
 * block's XXH3), not the block itself, so the block is hashed once here
 * and once by the receiver before it writes it, and its bytes go from the
 * sender's read buffer to the socket without a copy.
 */
int proto_encode_data_hashed(struct evbuffer *out, const char *path, uint64_t offset,
			     const void *block, uint32_t len, uint64_t xxh3,
			     evbuffer_ref_cleanup_cb cleanup, void *cleanup_arg)
{
	struct proto_out o;
	size_t head;
	int rc;

	if (!path || !proto_strlen_ok(path, PROTO_PATH_MAX) ||
	    len > PROTO_MAX_BLOCK || (len && !block))
		return -EINVAL;
	head = DATA_FIXED + wire_str_size(path);
	rc = proto_out_begin(out, &o, head);
	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, offset);
	wire_put_u32(&o.w, len);
	wire_put_u32(&o.w, 0);
	wire_put_u64(&o.w, xxh3);
	wire_put_str(&o.w, path);
	rc = proto_out_end(out, &o, PROTO_DATA, (uint32_t)(head + len), (uint32_t)head);
	if (rc < 0)
		return rc;
	if (len && evbuffer_add_reference(out, block, len, cleanup, cleanup_arg) < 0)
		return -ENOMEM;
	if (!len && cleanup)
		cleanup(block, 0, cleanup_arg);
	return 0;
}

int proto_encode_data(struct evbuffer *out, const char *path, uint64_t offset,
		      const void *block, uint32_t len,
		      evbuffer_ref_cleanup_cb cleanup, void *cleanup_arg,
		      uint64_t *xxh3_out)
{
	uint64_t xxh3;
	int rc;

	if (len > PROTO_MAX_BLOCK || (len && !block))
		return -EINVAL;
	xxh3 = XXH3_64bits(block, len);
	rc = proto_encode_data_hashed(out, path, offset, block, len, xxh3, cleanup,
				      cleanup_arg);
	if (rc == 0 && xxh3_out)
		*xxh3_out = xxh3;
	return rc;
}

/* ---- decoding ---- */

static int proto_get_time(struct wire_reader *r, struct timespec *t)
{
	int64_t sec = 0;
	uint32_t nsec = 0;

	wire_get_i64(r, &sec);
	if (wire_get_u32(r, &nsec) < 0)
		return -EBADMSG;
	if (nsec >= 1000000000u && nsec != (uint32_t)UTIME_NOW &&
	    nsec != (uint32_t)UTIME_OMIT) {
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	t->tv_sec = (time_t)sec;
	t->tv_nsec = (long)nsec;
	return 0;
}

int proto_decode_hello(const struct proto_frame *f, struct proto_hello *m)
{
	struct wire_reader r;
	const uint8_t *pad, *id;

	if (f->h.type != PROTO_HELLO)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->version);
	wire_get_u8(&r, &m->role);
	wire_get_bytes(&r, 3, &pad);
	wire_get_u32(&r, &m->flags);
	if (wire_get_bytes(&r, 16, &id) == 0)
		memcpy(m->node_id, id, 16);
	wire_get_u64(&r, &m->generation);
	wire_get_u64(&r, &m->applied_seq);
	wire_get_str(&r, PROTO_TEXT_MAX, &m->name, NULL);
	/* an older peer's HELLO ends here: decoded, so that the receiver
	 * can answer ERROR{VERSION} rather than a bad frame */
	if (m->version < 5 && wire_remaining(&r) == 0)
		return wire_reader_done(&r);
	wire_get_u64(&r, &m->head_seq);
	wire_get_u16(&r, &m->hist_n);
	if (m->hist_n > PROTO_HIST_MAX)
		return -EBADMSG;
	for (uint16_t i = 0; i < m->hist_n; i++) {
		const uint8_t *node;

		wire_get_u64(&r, &m->hist[i].num);
		wire_get_u64(&r, &m->hist[i].id);
		wire_get_u64(&r, &m->hist[i].start);
		if (wire_get_bytes(&r, 16, &node) == 0)
			memcpy(m->hist[i].node, node, 16);
	}
	return wire_reader_done(&r);
}

int proto_decode_op(const struct proto_frame *f, struct proto_op *m)
{
	struct wire_reader r;
	struct journal_op *op = &m->op;
	uint16_t type = 0, pad;
	const char *path2 = NULL, *xname = NULL;
	const uint8_t *xvalue = NULL;
	size_t n2 = 0, nx = 0, xsize = 0;

	if (f->h.type != PROTO_OP)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, &m->seq);
	wire_get_u16(&r, &type);
	wire_get_u16(&r, &pad);
	wire_get_u32(&r, &op->flags);
	wire_get_u32(&r, &op->mode);
	wire_get_u32(&r, &op->uid);
	wire_get_u32(&r, &op->gid);
	wire_get_u32(&r, &op->attr_mask);
	wire_get_u64(&r, &op->rdev);
	wire_get_u64(&r, &op->size);
	wire_get_u64(&r, &op->ino);
	proto_get_time(&r, &op->atime);
	proto_get_time(&r, &op->mtime);
	wire_get_str(&r, PROTO_PATH_MAX, &op->path, NULL);
	wire_get_str(&r, PROTO_PATH_MAX, &path2, &n2);
	wire_get_str(&r, PROTO_XNAME_MAX, &xname, &nx);
	wire_get_blob(&r, PROTO_XVALUE_MAX, &xvalue, &xsize);
	wire_get_u32(&r, &op->res_mask);
	for (int k = 0; k < JRES_N; k++)
		proto_get_time(&r, &op->res_mtime[k]);
	if (wire_reader_done(&r) < 0)
		return -EBADMSG;
	if (op->res_mask & ~(JRES_BIT(JRES_N) - 1))
		return -EBADMSG;
	for (int k = 0; k < JRES_N; k++)
		if ((op->res_mask & JRES_BIT(k)) && op->res_mtime[k].tv_nsec >= 1000000000L)
			return -EBADMSG;	/* a result is a real time, never NOW/OMIT */
	if (type < JOP_CREATE || type > JOP_REMOVEXATTR)
		return -EBADMSG;
	op->type = (enum journal_op_type)type;
	op->path2 = n2 ? path2 : NULL;
	op->xname = nx ? xname : NULL;
	op->xvalue = xsize ? xvalue : NULL;
	op->xsize = xsize;
	return 0;
}

int proto_decode_data(const struct proto_frame *f, struct proto_data *m)
{
	struct wire_reader r;
	uint32_t pad = 0;

	if (f->h.type != PROTO_DATA)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.clen);
	wire_get_u64(&r, &m->offset);
	wire_get_u32(&r, &m->len);
	wire_get_u32(&r, &pad);
	wire_get_u64(&r, &m->xxh3);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, NULL);
	if (wire_reader_done(&r) < 0)
		return -EBADMSG;
	if (m->len != f->h.len - f->h.clen)
		return -EBADMSG;
	m->bytes = f->payload + f->h.clen;
	return 0;
}

int proto_data_verify(const struct proto_data *m)
{
	return XXH3_64bits(m->bytes, m->len) == m->xxh3 ? 0 : -EBADMSG;
}

int proto_decode_attr(const struct proto_frame *f, struct proto_attr *m)
{
	struct wire_reader r;

	if (f->h.type != PROTO_ATTR)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->mask);
	wire_get_u32(&r, &m->mode);
	wire_get_u32(&r, &m->uid);
	wire_get_u32(&r, &m->gid);
	wire_get_u64(&r, &m->size);
	proto_get_time(&r, &m->atime);
	proto_get_time(&r, &m->mtime);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, NULL);
	return wire_reader_done(&r);
}

int proto_decode_prune(const struct proto_frame *f, struct proto_prune *m)
{
	struct wire_reader r;
	const uint8_t *names = NULL;
	size_t n = 0, start = 0;
	int rc;

	if (f->h.type != PROTO_PRUNE)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, &m->seq);
	wire_get_u32(&r, &m->flags);
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, NULL);
	wire_get_blob(&r, PROTO_MAX_META_PAYLOAD, &names, &n);
	rc = wire_reader_done(&r);
	if (rc < 0)
		return rc;
	if (n && names[n - 1] != '\0')
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *name = (const char *)names + start;

		if (names[i] != '\0')
			continue;
		len = i - start;
		if (len == 0 || len > PROTO_NAME_MAX || memchr(name, '/', len) ||
		    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return -EBADMSG;
		start = i + 1;
	}
	m->names = (const char *)names;
	m->names_len = n;
	return 0;
}

static int proto_decode_u64(const struct proto_frame *f, uint64_t *v)
{
	struct wire_reader r;

	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, v);
	return wire_reader_done(&r);
}

int proto_decode_seq(const struct proto_frame *f, uint64_t *seq)
{
	if (f->h.type != PROTO_BATCH_END && f->h.type != PROTO_ACK)
		return -EBADMSG;
	return proto_decode_u64(f, seq);
}

int proto_decode_heartbeat(const struct proto_frame *f, uint64_t *now_ms)
{
	if (f->h.type != PROTO_HEARTBEAT)
		return -EBADMSG;
	return proto_decode_u64(f, now_ms);
}

int proto_decode_goodbye(const struct proto_frame *f, const char **reason)
{
	struct wire_reader r;

	if (f->h.type != PROTO_GOODBYE)
		return -EBADMSG;
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_str(&r, PROTO_TEXT_MAX, reason, NULL);
	return wire_reader_done(&r);
}

int proto_decode_error(const struct proto_frame *f, struct proto_error *m)
{
	struct wire_reader r;

	if (f->h.type != PROTO_ERROR)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->code);
	wire_get_str(&r, PROTO_TEXT_MAX, &m->text, NULL);
	return wire_reader_done(&r);
}

#define ENTRY_FIXED (4 + 4 + 4 + 8 + 8 + 8 + 4 + 16 + 16 + 4 + 4 + 4)

int proto_encode_entry(struct evbuffer *out, const struct proto_entry *m)
{
	struct proto_out o;
	size_t plen;
	int rc;

	if (!m->path || !*m->path || !proto_strlen_ok(m->path, PROTO_PATH_MAX) ||
	    !proto_strlen_ok(m->target, PROTO_PATH_MAX) ||
	    !proto_strlen_ok(m->link, PROTO_PATH_MAX))
		return -EINVAL;
	plen = ENTRY_FIXED + wire_str_size(m->path) + wire_str_size(m->target) +
	       wire_str_size(m->link);
	rc = proto_out_begin(out, &o, plen);
	if (rc < 0)
		return rc;
	wire_put_u32(&o.w, m->mode);
	wire_put_u32(&o.w, m->uid);
	wire_put_u32(&o.w, m->gid);
	wire_put_u64(&o.w, m->size);
	wire_put_u64(&o.w, (uint64_t)m->mtime_ns);
	wire_put_u64(&o.w, m->rdev);
	wire_put_u32(&o.w, m->n_xattrs);
	wire_put_bytes(&o.w, m->xattrs, 16);
	wire_put_bytes(&o.w, m->hash, 16);
	wire_put_u32(&o.w, m->err);
	wire_put_u32(&o.w, m->flags);
	wire_put_u32(&o.w, m->nlink);
	wire_put_str(&o.w, m->path);
	wire_put_str(&o.w, m->target);
	wire_put_str(&o.w, m->link);
	return proto_out_end(out, &o, PROTO_ENTRY, plen, plen);
}

int proto_decode_entry(const struct proto_frame *f, struct proto_entry *m)
{
	const uint8_t *b;
	struct wire_reader r;
	uint64_t mt;
	size_t n;

	if (f->h.type != PROTO_ENTRY)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u32(&r, &m->mode);
	wire_get_u32(&r, &m->uid);
	wire_get_u32(&r, &m->gid);
	wire_get_u64(&r, &m->size);
	wire_get_u64(&r, &mt);
	m->mtime_ns = (int64_t)mt;
	wire_get_u64(&r, &m->rdev);
	wire_get_u32(&r, &m->n_xattrs);
	if (wire_get_bytes(&r, 16, &b) == 0)
		memcpy(m->xattrs, b, 16);
	if (wire_get_bytes(&r, 16, &b) == 0)
		memcpy(m->hash, b, 16);
	wire_get_u32(&r, &m->err);
	wire_get_u32(&r, &m->flags);
	wire_get_u32(&r, &m->nlink);
	n = 0;
	wire_get_str(&r, PROTO_PATH_MAX, &m->path, &n);
	if (r.err == 0 && n == 0)
		return -EBADMSG;
	n = 0;
	wire_get_str(&r, PROTO_PATH_MAX, &m->target, &n);
	if (n == 0)
		m->target = NULL;
	n = 0;
	wire_get_str(&r, PROTO_PATH_MAX, &m->link, &n);
	if (n == 0)
		m->link = NULL;
	return wire_reader_done(&r);
}

int proto_encode_entries_end(struct evbuffer *out, uint64_t count, uint32_t err)
{
	struct proto_out o;
	int rc = proto_out_begin(out, &o, 12);

	if (rc < 0)
		return rc;
	wire_put_u64(&o.w, count);
	wire_put_u32(&o.w, err);
	return proto_out_end(out, &o, PROTO_ENTRIES_END, 12, 12);
}

int proto_decode_entries_end(const struct proto_frame *f, uint64_t *count, uint32_t *err)
{
	struct wire_reader r;

	if (f->h.type != PROTO_ENTRIES_END)
		return -EBADMSG;
	wire_reader_init(&r, f->payload, f->h.len);
	wire_get_u64(&r, count);
	wire_get_u32(&r, err);
	return wire_reader_done(&r);
}
