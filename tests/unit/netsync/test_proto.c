/* Unit tests for netsync/wire and netsync/proto: every message round-trips,
 * and truncated, corrupted, oversized or malformed frames are rejected
 * with -EBADMSG before any field is used. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "netsync/wire/proto.h"
#include "netsync/wire/proto_gen.h"
#include "netsync/wire/wire.h"

/* ---- wire ---- */

static void test_wire_reader_bounds(void **state)
{
	static const uint8_t buf[] = { 1, 2, 3, 4, 5, 6, 7 };
	struct wire_reader r;
	uint32_t v32 = 0;
	uint64_t v64 = 0;
	uint16_t v16 = 0;

	wire_reader_init(&r, buf, sizeof(buf));
	assert_int_equal(wire_get_u32(&r, &v32), 0);
	assert_int_equal(v32, 0x04030201u);
	assert_int_equal(wire_get_u64(&r, &v64), -EBADMSG);	/* 3 left */
	assert_int_equal(wire_get_u16(&r, &v16), -EBADMSG);	/* sticky */
	assert_int_equal(wire_reader_done(&r), -EBADMSG);

	wire_reader_init(&r, buf, sizeof(buf));
	assert_int_equal(wire_get_u16(&r, &v16), 0);
	assert_int_equal(v16, 0x0201);
	assert_int_equal(wire_reader_done(&r), -EBADMSG);	/* trailing bytes */
}

static void test_wire_str(void **state)
{
	uint8_t buf[64];
	struct wire_writer w;
	struct wire_reader r;
	const char *s;
	size_t n;

	wire_writer_init(&w, buf, sizeof(buf));
	assert_int_equal(wire_put_str(&w, "abc"), 0);
	assert_int_equal(wire_put_str(&w, NULL), 0);
	assert_int_equal(w.off, 6 + 3);
	wire_reader_init(&r, buf, w.off);
	assert_int_equal(wire_get_str(&r, 100, &s, &n), 0);
	assert_string_equal(s, "abc");
	assert_int_equal(n, 3);
	assert_int_equal(wire_get_str(&r, 100, &s, &n), 0);
	assert_string_equal(s, "");
	assert_int_equal(wire_reader_done(&r), 0);

	/* over the caller's max */
	wire_reader_init(&r, buf, w.off);
	assert_int_equal(wire_get_str(&r, 2, &s, &n), -EBADMSG);

	/* missing NUL */
	buf[5] = 'x';
	wire_reader_init(&r, buf, 6);
	assert_int_equal(wire_get_str(&r, 100, &s, &n), -EBADMSG);
	/* embedded NUL */
	buf[5] = 0;
	buf[3] = 0;
	wire_reader_init(&r, buf, 6);
	assert_int_equal(wire_get_str(&r, 100, &s, &n), -EBADMSG);
	/* length past the end */
	wire_le16(buf, 60);
	wire_reader_init(&r, buf, 9);
	assert_int_equal(wire_get_str(&r, 100, &s, &n), -EBADMSG);
}

static void test_wire_writer_overflow(void **state)
{
	uint8_t buf[10];
	struct wire_writer w;

	wire_writer_init(&w, buf, sizeof(buf));
	assert_int_equal(wire_put_u64(&w, 1), 0);
	assert_int_equal(wire_put_u32(&w, 1), -EMSGSIZE);
	assert_int_equal(wire_put_u8(&w, 1), -EMSGSIZE);	/* sticky */
	assert_int_equal(w.off, 8);
}

/* ---- proto helpers ---- */

/* Takes the next frame out of b, which must be complete and valid. */
static void next_frame(struct evbuffer *b, struct proto_frame *f)
{
	assert_int_equal(proto_frame_next(b, f), 1);
}

static size_t copy_all(struct evbuffer *b, uint8_t **out)
{
	size_t n = evbuffer_get_length(b);

	*out = malloc(n);
	assert_non_null(*out);
	assert_int_equal(evbuffer_copyout(b, *out, n), (ev_ssize_t)n);
	return n;
}

static struct evbuffer *buf_of(const uint8_t *p, size_t n)
{
	struct evbuffer *b = evbuffer_new();

	assert_non_null(b);
	assert_int_equal(evbuffer_add(b, p, n), 0);
	return b;
}

/* ---- round trips ---- */

static void test_roundtrip_hello(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_hello in = {
		.version = PROTO_VERSION, .role = PROTO_ROLE_SECONDARY,
		.flags = PROTO_HELLO_F_DIRTY, .generation = 7,
		.applied_seq = 123456789012ull, .name = "node-b",
		.head_seq = 99, .hist_n = 2,
		.hist = { { 1, 0x1111, 0, { 1 } }, { 2, 0x2222, 50, { 2 } } },
	}, out;
	struct proto_frame f;

	memcpy(in.node_id, "0123456789abcdef", 16);
	assert_int_equal(proto_encode_hello(b, &in), 0);
	next_frame(b, &f);
	assert_int_equal(f.h.type, PROTO_HELLO);
	assert_int_equal(proto_decode_hello(&f, &out), 0);
	assert_int_equal(out.version, PROTO_VERSION);
	assert_int_equal(out.role, PROTO_ROLE_SECONDARY);
	assert_int_equal(out.flags, PROTO_HELLO_F_DIRTY);
	assert_memory_equal(out.node_id, in.node_id, 16);
	assert_int_equal(out.generation, 7);
	assert_int_equal(out.applied_seq, 123456789012ull);
	assert_string_equal(out.name, "node-b");
	assert_int_equal(out.head_seq, 99);
	assert_int_equal(out.hist_n, 2);
	assert_memory_equal(out.hist, in.hist, 2 * sizeof(in.hist[0]));
	/* decoding as another type fails */
	{
		struct proto_op op;

		assert_int_equal(proto_decode_op(&f, &op), -EBADMSG);
	}
	proto_frame_consume(b, &f);
	assert_int_equal(evbuffer_get_length(b), 0);
	evbuffer_free(b);
}

/* TAIL (paths checked), TAIL_ACK and DIVERGED (every entry checked). */
static void test_roundtrip_gen(void **state)
{
	static const char paths[] = "a/b\0c\0";
	struct proto_tail t = { .flags = PROTO_TAIL_F_LAST, .paths = paths, .len = 6 }, to;
	struct proto_version v[2] = { { .path = "a/b", .mode = 0100644, .size = 5,
					.mtime_ns = -3, .hash = { 9 }, .nlink = 3 },
				      { .path = "gone" } }, vo;
	struct evbuffer *b = evbuffer_new();
	struct proto_diverged d;
	struct proto_frame f;
	uint64_t seq;

	(void)state;
	assert_int_equal(proto_encode_tail(b, &t), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_tail(&f, &to), 0);
	assert_int_equal(to.flags, PROTO_TAIL_F_LAST);
	assert_memory_equal(to.paths, paths, 6);
	proto_frame_consume(b, &f);
	t.paths = "../x";	/* a path that escapes is a bad frame */
	t.len = 5;
	assert_int_equal(proto_encode_tail(b, &t), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_tail(&f, &to), -EBADMSG);
	proto_frame_consume(b, &f);
	assert_int_equal(proto_encode_tail_ack(b, 77), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_tail_ack(&f, &seq), 0);
	assert_int_equal(seq, 77);
	proto_frame_consume(b, &f);
	assert_int_equal(proto_encode_diverged(b, PROTO_DIV_F_LAST, v, 2), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_diverged(&f, &d), 0);
	assert_int_equal(d.count, 2);
	assert_int_equal(proto_diverged_next(&d, &vo), 1);
	assert_string_equal(vo.path, "a/b");
	assert_int_equal(vo.mode, 0100644);
	assert_int_equal(vo.mtime_ns, -3);
	assert_int_equal(vo.hash[0], 9);
	assert_int_equal(vo.nlink, 3);
	assert_int_equal(proto_diverged_next(&d, &vo), 1);
	assert_int_equal(vo.mode, 0);
	assert_int_equal(proto_diverged_next(&d, &vo), 0);
	proto_frame_consume(b, &f);
	evbuffer_free(b);
}

static void test_roundtrip_op(void **state)
{
	struct evbuffer *b = evbuffer_new();
	static const char xv[] = "value\0with-nul";
	struct journal_op in = {
		.type = JOP_SETXATTR, .path = "dir/file", .path2 = NULL,
		.mode = 0100644, .uid = 1000, .gid = 100, .rdev = 0x0801,
		.attr_mask = JATTR_MTIME, .size = 1ull << 40,
		.atime = { 1700000000, UTIME_OMIT }, .mtime = { -5, 999999999 },
		.flags = 2, .xname = "user.test", .xvalue = xv, .xsize = sizeof(xv),
		.ino = 42,
	};
	struct journal_op ren = { .type = JOP_RENAME, .path = "a", .path2 = "b/c",
				  .flags = 4, .res_mask = JRES_BIT(JRES_PATH) | JRES_BIT(JRES_DIR2),
				  .res_mtime = { { 11, 12 }, { 0, 0 }, { 0, 0 }, { -13, 999999999 } } };
	struct proto_op out;
	struct proto_frame f;

	assert_int_equal(proto_encode_op(b, 99, &in), 0);
	assert_int_equal(proto_encode_op(b, 100, &ren), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_op(&f, &out), 0);
	assert_int_equal(out.seq, 99);
	assert_int_equal(out.op.type, JOP_SETXATTR);
	assert_string_equal(out.op.path, "dir/file");
	assert_null(out.op.path2);
	assert_int_equal(out.op.mode, 0100644);
	assert_int_equal(out.op.uid, 1000);
	assert_int_equal(out.op.gid, 100);
	assert_int_equal(out.op.rdev, 0x0801);
	assert_int_equal(out.op.attr_mask, JATTR_MTIME);
	assert_int_equal(out.op.size, 1ull << 40);
	assert_int_equal(out.op.atime.tv_sec, 1700000000);
	assert_int_equal(out.op.atime.tv_nsec, UTIME_OMIT);
	assert_int_equal(out.op.mtime.tv_sec, -5);
	assert_int_equal(out.op.mtime.tv_nsec, 999999999);
	assert_int_equal(out.op.flags, 2);
	assert_string_equal(out.op.xname, "user.test");
	assert_int_equal(out.op.xsize, sizeof(xv));
	assert_memory_equal(out.op.xvalue, xv, sizeof(xv));
	assert_int_equal(out.op.ino, 42);
	proto_frame_consume(b, &f);

	next_frame(b, &f);
	assert_int_equal(proto_decode_op(&f, &out), 0);
	assert_int_equal(out.seq, 100);
	assert_int_equal(out.op.type, JOP_RENAME);
	assert_string_equal(out.op.path, "a");
	assert_string_equal(out.op.path2, "b/c");
	assert_null(out.op.xname);
	assert_null(out.op.xvalue);
	assert_int_equal(out.op.flags, 4);
	assert_int_equal(out.op.res_mask, JRES_BIT(JRES_PATH) | JRES_BIT(JRES_DIR2));
	assert_int_equal(out.op.res_mtime[JRES_PATH].tv_sec, 11);
	assert_int_equal(out.op.res_mtime[JRES_PATH].tv_nsec, 12);
	assert_int_equal(out.op.res_mtime[JRES_DIR2].tv_sec, -13);
	assert_int_equal(out.op.res_mtime[JRES_DIR2].tv_nsec, 999999999);
	proto_frame_consume(b, &f);
	/* a result is a real time: UTIME_NOW in a set slot is a bad frame */
	ren.res_mtime[JRES_PATH].tv_nsec = UTIME_NOW;
	assert_int_equal(proto_encode_op(b, 101, &ren), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_op(&f, &out), -EBADMSG);
	proto_frame_consume(b, &f);
	evbuffer_free(b);
}

static int cleanup_calls;
static void count_cleanup(const void *data, size_t len, void *arg)
{
	cleanup_calls++;
	free((void *)data);
}

static void test_roundtrip_data_by_reference(void **state)
{
	struct evbuffer *b = evbuffer_new();
	size_t len = 3u << 20;
	uint8_t *block = malloc(len);
	struct proto_data out;
	struct proto_frame f;
	uint64_t h = 0;

	for (size_t i = 0; i < len; i++)
		block[i] = (uint8_t)(i * 31 + 7);
	cleanup_calls = 0;
	assert_int_equal(proto_encode_data(b, "big.iso", 1ull << 33, block,
					   (uint32_t)len, count_cleanup, NULL, &h), 0);
	assert_int_equal(h, XXH3_64bits(block, len));
	/* the block was added by reference: its first byte lives in `block` */
	{
		struct evbuffer_iovec v[4];
		int n = evbuffer_peek(b, -1, NULL, v, 4);

		assert_true(n >= 2);
		assert_ptr_equal(v[n - 1].iov_base, block);
	}
	next_frame(b, &f);
	assert_int_equal(f.h.type, PROTO_DATA);
	assert_int_equal(f.h.len - f.h.clen, len);
	assert_int_equal(proto_decode_data(&f, &out), 0);
	assert_string_equal(out.path, "big.iso");
	assert_int_equal(out.offset, 1ull << 33);
	assert_int_equal(out.len, len);
	assert_int_equal(out.xxh3, h);
	assert_int_equal(proto_data_verify(&out), 0);
	assert_memory_equal(out.bytes, f.payload + f.h.clen, len);
	proto_frame_consume(b, &f);
	evbuffer_free(b);
	assert_int_equal(cleanup_calls, 1);
}

/* PRUNE: names round-trip; a name that could escape the directory or is
 * not a single component is refused by the decoder, and an encoder
 * refuses a list that is not NUL-terminated or over the chunk size. */
static void test_prune(void **state)
{
	static const char names[] = "a\0bb\0.hidden\0";
	static const char *const bad[] = { "..\0", ".\0", "x/y\0", "ok\0\0" };
	struct evbuffer *b = evbuffer_new();
	struct proto_prune m = { .seq = 9, .flags = PROTO_PRUNE_F_LAST,
				 .path = "d/e", .names = names,
				 .names_len = sizeof(names) - 1 }, mo;
	struct proto_frame f;
	char *big = calloc(1, PROTO_PRUNE_CHUNK + 2);

	assert_int_equal(proto_encode_prune(b, &m), 0);
	next_frame(b, &f);
	assert_int_equal(f.h.type, PROTO_PRUNE);
	assert_int_equal(proto_decode_prune(&f, &mo), 0);
	assert_int_equal(mo.seq, 9);
	assert_int_equal(mo.flags, PROTO_PRUNE_F_LAST);
	assert_string_equal(mo.path, "d/e");
	assert_int_equal(mo.names_len, sizeof(names) - 1);
	assert_memory_equal(mo.names, names, sizeof(names) - 1);
	proto_frame_consume(b, &f);
	/* an empty list: the directory is empty on the sender */
	m.names = NULL;
	m.names_len = 0;
	assert_int_equal(proto_encode_prune(b, &m), 0);
	next_frame(b, &f);
	assert_int_equal(proto_decode_prune(&f, &mo), 0);
	assert_int_equal(mo.names_len, 0);
	proto_frame_consume(b, &f);
	/* the encoder checks termination only; the decoder checks names */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m.names = bad[i];
		m.names_len = strlen(bad[i]) + 1 + (i == 3 ? 1 : 0);
		assert_int_equal(proto_encode_prune(b, &m), 0);
		next_frame(b, &f);
		assert_int_equal(proto_decode_prune(&f, &mo), -EBADMSG);
		proto_frame_consume(b, &f);
	}
	m.names = "abc";
	m.names_len = 3;
	assert_int_equal(proto_encode_prune(b, &m), -EINVAL);
	memset(big, 'x', PROTO_PRUNE_CHUNK + 1);
	m.names = big;
	m.names_len = PROTO_PRUNE_CHUNK + 2;
	assert_int_equal(proto_encode_prune(b, &m), -EINVAL);
	free(big);
	evbuffer_free(b);
}

static void test_roundtrip_small(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_attr a = {
		.path = "x/y", .mask = JATTR_SIZE | JATTR_MODE | JATTR_MTIME,
		.mode = 0100600, .uid = 1, .gid = 2, .size = 12345,
		.atime = { 1, 2 }, .mtime = { 3, 4 },
	}, ao;
	struct proto_error eo;
	struct proto_frame f;
	const char *reason;
	uint64_t v;

	assert_int_equal(proto_encode_attr(b, &a), 0);
	assert_int_equal(proto_encode_batch_end(b, 77), 0);
	assert_int_equal(proto_encode_ack(b, 78), 0);
	assert_int_equal(proto_encode_heartbeat(b, 79), 0);
	assert_int_equal(proto_encode_goodbye(b, "shutting down"), 0);
	assert_int_equal(proto_encode_error(b, PROTO_E_APPLY, "No space left on device"), 0);

	next_frame(b, &f);
	assert_int_equal(proto_decode_attr(&f, &ao), 0);
	assert_string_equal(ao.path, "x/y");
	assert_int_equal(ao.mask, a.mask);
	assert_int_equal(ao.mode, 0100600);
	assert_int_equal(ao.size, 12345);
	assert_int_equal(ao.mtime.tv_sec, 3);
	assert_int_equal(ao.mtime.tv_nsec, 4);
	proto_frame_consume(b, &f);

	next_frame(b, &f);
	assert_int_equal(f.h.type, PROTO_BATCH_END);
	assert_int_equal(proto_decode_seq(&f, &v), 0);
	assert_int_equal(v, 77);
	proto_frame_consume(b, &f);
	next_frame(b, &f);
	assert_int_equal(f.h.type, PROTO_ACK);
	assert_int_equal(proto_decode_seq(&f, &v), 0);
	assert_int_equal(v, 78);
	proto_frame_consume(b, &f);
	next_frame(b, &f);
	assert_int_equal(proto_decode_heartbeat(&f, &v), 0);
	assert_int_equal(v, 79);
	proto_frame_consume(b, &f);
	next_frame(b, &f);
	assert_int_equal(proto_decode_goodbye(&f, &reason), 0);
	assert_string_equal(reason, "shutting down");
	proto_frame_consume(b, &f);
	next_frame(b, &f);
	assert_int_equal(proto_decode_error(&f, &eo), 0);
	assert_int_equal(eo.code, PROTO_E_APPLY);
	assert_string_equal(eo.text, "No space left on device");
	proto_frame_consume(b, &f);
	assert_int_equal(proto_frame_next(b, &f), 0);
	evbuffer_free(b);
}

/* ---- rejection ---- */

static void test_truncated_frames_wait(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct journal_op op = { .type = JOP_CREATE, .path = "f", .mode = 0100644 };
	struct proto_frame f;
	uint8_t *all;
	size_t n;

	assert_int_equal(proto_encode_op(b, 1, &op), 0);
	n = copy_all(b, &all);
	evbuffer_free(b);
	/* every proper prefix is "need more", never a frame */
	for (size_t k = 0; k < n; k++) {
		struct evbuffer *p = buf_of(all, k);

		assert_int_equal(proto_frame_next(p, &f), 0);
		evbuffer_free(p);
	}
	free(all);
}

static void test_bad_check(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct journal_op op = { .type = JOP_MKDIR, .path = "d", .mode = 040755 };
	struct proto_frame f;
	uint8_t *all;
	size_t n;

	assert_int_equal(proto_encode_op(b, 5, &op), 0);
	n = copy_all(b, &all);
	evbuffer_free(b);
	/* flipping any single byte of the frame makes it bad (or, for the length
	 * fields, incomplete or invalid), never a different valid frame */
	for (size_t i = 0; i < n; i++) {
		struct evbuffer *p;
		int rc;

		all[i] ^= 0x20;
		p = buf_of(all, n);
		rc = proto_frame_next(p, &f);
		if (rc != -EBADMSG && rc != 0)
			fail_msg("flipped byte %zu gave %d", i, rc);
		evbuffer_free(p);
		all[i] ^= 0x20;
	}
	free(all);
}

static void test_bad_data_hash(void **state)
{
	struct evbuffer *b = evbuffer_new();
	static uint8_t block[4096];
	struct proto_frame f;
	struct proto_data d;
	uint8_t *all;
	size_t n;

	memset(block, 'a', sizeof(block));
	assert_int_equal(proto_encode_data(b, "f", 0, block, sizeof(block),
					   NULL, NULL, NULL), 0);
	n = copy_all(b, &all);
	evbuffer_free(b);
	all[n - 100] ^= 1;	/* a block byte: not covered by the frame check */
	b = buf_of(all, n);
	next_frame(b, &f);
	assert_int_equal(proto_decode_data(&f, &d), 0);
	assert_int_equal(proto_data_verify(&d), -EBADMSG);
	evbuffer_free(b);
	free(all);
}

/* DATA with the hash computed by the caller (the sender's one hash of a
 * block): the right hash verifies, a wrong one is caught by the peer. */
static void test_data_hashed(void **state)
{
	static uint8_t block[4096];
	struct proto_frame f;
	struct proto_data d;
	struct evbuffer *b;

	memset(block, 'b', sizeof(block));
	for (int wrong = 0; wrong < 2; wrong++) {
		b = evbuffer_new();
		assert_int_equal(proto_encode_data_hashed(b, "f", 1 << 20, block,
							  sizeof(block),
							  XXH3_64bits(block, sizeof(block)) + wrong,
							  NULL, NULL), 0);
		next_frame(b, &f);
		assert_int_equal(proto_decode_data(&f, &d), 0);
		assert_int_equal(d.offset, 1 << 20);
		assert_int_equal(proto_data_verify(&d), wrong ? -EBADMSG : 0);
		evbuffer_free(b);
	}
}

/* Builds a frame with a chosen header and payload and a correct check. */
static struct evbuffer *raw_frame(uint16_t type, uint32_t len, uint32_t clen,
				  const void *payload, size_t plen)
{
	uint8_t *p = calloc(1, PROTO_HDR_LEN + plen);
	struct proto_hdr h = { .type = type, .len = len, .clen = clen };
	struct evbuffer *b;
	size_t hashed = PROTO_HDR_LEN + (clen < plen ? clen : plen);

	proto_hdr_write(p, &h);
	if (plen)
		memcpy(p + PROTO_HDR_LEN, payload, plen);
	wire_le64(p + 16, XXH3_64bits(p, hashed));
	b = buf_of(p, PROTO_HDR_LEN + plen);
	free(p);
	return b;
}

static void test_bad_headers(void **state)
{
	struct proto_frame f;
	struct evbuffer *b;
	uint8_t junk[64];

	/* oversized lengths are refused from the header alone */
	b = raw_frame(PROTO_OP, PROTO_MAX_META_PAYLOAD + 1, PROTO_MAX_META_PAYLOAD + 1, NULL, 0);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	b = raw_frame(PROTO_DATA, PROTO_MAX_DATA_PAYLOAD + 1, 100, NULL, 0);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	b = raw_frame(PROTO_ACK, 0xffffffffu, 0xffffffffu, NULL, 0);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	/* clen rules */
	b = raw_frame(PROTO_ACK, 8, 4, "\1\0\0\0\0\0\0\0", 8);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	b = raw_frame(PROTO_DATA, 40, 41, NULL, 0);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	/* unknown type */
	b = raw_frame(40, 0, 0, NULL, 0);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	/* bad magic: random bytes */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 151 + 3);
	b = buf_of(junk, sizeof(junk));
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	/* an HTTP request is not a frame */
	b = buf_of((const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	/* short garbage is refused before a whole header arrives */
	b = buf_of((const uint8_t *)"GET", 3);
	assert_int_equal(proto_frame_next(b, &f), -EBADMSG);
	evbuffer_free(b);
	b = buf_of((const uint8_t *)"TWF", 3);
	assert_int_equal(proto_frame_next(b, &f), 0);
	evbuffer_free(b);
}

static void test_bad_payloads(void **state)
{
	struct proto_frame f;
	struct evbuffer *b;
	struct proto_op op;
	struct proto_data d;
	uint64_t v;

	/* valid check, payload too short for its type */
	b = raw_frame(PROTO_ACK, 4, 4, "\1\0\0\0", 4);
	next_frame(b, &f);
	assert_int_equal(proto_decode_seq(&f, &v), -EBADMSG);
	evbuffer_free(b);
	/* trailing bytes */
	b = raw_frame(PROTO_ACK, 9, 9, "\1\0\0\0\0\0\0\0\0", 9);
	next_frame(b, &f);
	assert_int_equal(proto_decode_seq(&f, &v), -EBADMSG);
	evbuffer_free(b);
	/* an OP of 60 zero bytes: runs out inside the strings */
	{
		uint8_t z[60] = { 0 };

		b = raw_frame(PROTO_OP, sizeof(z), sizeof(z), z, sizeof(z));
		next_frame(b, &f);
		assert_int_equal(proto_decode_op(&f, &op), -EBADMSG);
		evbuffer_free(b);
	}
	/* an OP with an unknown op type */
	{
		struct evbuffer *e = evbuffer_new();
		struct journal_op jo = { .type = JOP_MARK_DIR, .path = "d" };

		assert_int_equal(proto_encode_op(e, 1, &jo), 0);
		next_frame(e, &f);
		assert_int_equal(proto_decode_op(&f, &op), -EBADMSG);
		evbuffer_free(e);
	}
	/* DATA whose block length disagrees with the frame */
	{
		uint8_t p[24 + 4 + 10] = { 0 };
		struct wire_writer w;

		wire_writer_init(&w, p, sizeof(p));
		wire_put_u64(&w, 0);
		wire_put_u32(&w, 11);	/* says 11, frame has 10 */
		wire_put_u32(&w, 0);
		wire_put_u64(&w, 0);
		wire_put_str(&w, "f");
		assert_int_equal(w.off, 28);
		b = raw_frame(PROTO_DATA, sizeof(p), 28, p, sizeof(p));
		next_frame(b, &f);
		assert_int_equal(proto_decode_data(&f, &d), -EBADMSG);
		evbuffer_free(b);
	}
	/* encoders refuse over-long fields and append nothing */
	{
		struct evbuffer *e = evbuffer_new();
		char *longp = malloc(PROTO_PATH_MAX + 2);
		struct journal_op jo = { .type = JOP_CREATE };

		memset(longp, 'a', PROTO_PATH_MAX + 1);
		longp[PROTO_PATH_MAX + 1] = '\0';
		jo.path = longp;
		assert_int_equal(proto_encode_op(e, 1, &jo), -EINVAL);
		assert_int_equal(proto_encode_data(e, longp, 0, "x", 1, NULL, NULL, NULL), -EINVAL);
		assert_int_equal(proto_encode_data(e, "f", 0, "x", PROTO_MAX_BLOCK + 1,
						   NULL, NULL, NULL), -EINVAL);
		assert_int_equal(evbuffer_get_length(e), 0);
		free(longp);
		evbuffer_free(e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_reader_bounds),
		cmocka_unit_test(test_wire_str),
		cmocka_unit_test(test_wire_writer_overflow),
		cmocka_unit_test(test_roundtrip_hello),
		cmocka_unit_test(test_roundtrip_gen),
		cmocka_unit_test(test_roundtrip_op),
		cmocka_unit_test(test_roundtrip_data_by_reference),
		cmocka_unit_test(test_roundtrip_small),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_truncated_frames_wait),
		cmocka_unit_test(test_bad_check),
		cmocka_unit_test(test_bad_data_hash),
		cmocka_unit_test(test_data_hashed),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bad_payloads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
