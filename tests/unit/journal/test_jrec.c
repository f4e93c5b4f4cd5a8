/* Unit tests for netsync/jrec: record encode/decode round trips, checksum
 * and bounds checks (every single-byte flip and every truncation of a
 * record is rejected, never over-read). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "journal/jrec.h"

static const struct journal_op ops[] = {
	{ .type = JOP_CREATE, .path = "dir/file", .mode = 0100644, .uid = 1, .gid = 2, .ino = 77 },
	{ .type = JOP_RENAME, .path = "a", .path2 = "b/c", .flags = 1 },
	{ .type = JOP_SETATTR, .path = "x", .attr_mask = 0x3f, .size = 1ull << 40,
	  .atime = { 1, 2 }, .mtime = { 3, 4 } },
	{ .type = JOP_SETXATTR, .path = "x", .xname = "user.k", .xvalue = "v\0al", .xsize = 4 },
	{ .type = JOP_SETXATTR, .path = "x", .xname = "user.empty", .xvalue = "", .xsize = 0 },
	{ .type = JOP_MKDIR, .path = "" },
	{ .type = JOP_MARK_DIR, .path = "d", .mtime = { 1700000000, 5 } },
	/* results: a whiteout rename with every slot, a create with two */
	{ .type = JOP_RENAME, .path = "a", .path2 = "d/b", .flags = 4, .uid = 7, .gid = 8,
	  .res_mask = 0xf, .res_mtime = { { 1, 2 }, { 3, 999999999 }, { 5, 6 }, { -7, 8 } } },
	{ .type = JOP_CREATE, .path = "f", .mode = 0100600,
	  .res_mask = JRES_BIT(JRES_PATH) | JRES_BIT(JRES_DIR),
	  .res_mtime = { { 1800000000, 1 }, { 0, 0 }, { 1800000000, 2 } } },
};

static void test_roundtrip(void **state)
{
	uint8_t buf[4096];

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct journal_op *o = &ops[i];
		struct journal_rec r;
		uint64_t seq = 0;
		int64_t sz = jrec_size(o);
		size_t len = jrec_encode(buf, 1000 + i, o);

		assert_int_equal(sz, (int64_t)len);
		assert_int_equal(jrec_check(buf, len, &seq), (int64_t)len);
		assert_int_equal(seq, 1000 + i);
		assert_int_equal(jrec_decode(buf, len, &r), 0);
		assert_int_equal(r.seq, 1000 + i);
		assert_int_equal(r.op.type, o->type);
		assert_string_equal(r.op.path, o->path);
		if (o->path2)
			assert_string_equal(r.op.path2, o->path2);
		else
			assert_null(r.op.path2);
		if (o->xname)
			assert_string_equal(r.op.xname, o->xname);
		assert_int_equal(r.op.xsize, o->xsize);
		if (o->xvalue)
			assert_memory_equal(r.op.xvalue, o->xvalue, o->xsize);
		else
			assert_null(r.op.xvalue);
		assert_int_equal(r.op.mode, o->mode);
		assert_int_equal(r.op.ino, o->ino);
		assert_int_equal(r.op.size, o->size);
		assert_int_equal(r.op.attr_mask, o->attr_mask);
		assert_int_equal(r.op.mtime.tv_sec, o->mtime.tv_sec);
		assert_int_equal(r.op.mtime.tv_nsec, o->mtime.tv_nsec);
		assert_int_equal(r.op.flags, o->flags);
		assert_int_equal(r.op.uid, o->uid);
		assert_int_equal(r.op.res_mask, o->res_mask);
		for (int k = 0; k < JRES_N; k++) {
			assert_int_equal(r.op.res_mtime[k].tv_sec, o->res_mtime[k].tv_sec);
			assert_int_equal(r.op.res_mtime[k].tv_nsec, o->res_mtime[k].tv_nsec);
		}
		/* results cost bytes only when there are some */
		assert_int_equal(len, jrec_size(&(struct journal_op){ .type = o->type,
			.path = o->path, .path2 = o->path2, .xname = o->xname,
			.xvalue = o->xvalue, .xsize = o->xsize }) + (o->res_mask ? 52 : 0));
	}
}

static void test_damage_rejected(void **state)
{
	uint8_t buf[4096];
	size_t len = jrec_encode(buf, 5, &ops[1]);
	uint64_t seq;

	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x40;
		if (jrec_check(buf, len, &seq) >= 0)
			fail_msg("flip at byte %zu not detected", i);
		buf[i] ^= 0x40;
	}
	for (size_t cut = 0; cut < len; cut++) {
		int64_t rc = jrec_check(buf, cut, &seq);

		if (rc != -EAGAIN)
			fail_msg("truncation to %zu gave %lld, want -EAGAIN", cut, (long long)rc);
	}
	assert_int_equal(jrec_check(buf, len, &seq), (int64_t)len);
}

static void test_too_big(void **state)
{
	static char big[JREC_MAX];
	struct journal_op o = { .type = JOP_SETXATTR, .path = "x", .xname = "user.big",
				.xvalue = big, .xsize = sizeof big };

	assert_int_equal(jrec_size(&o), -E2BIG);
}

static void test_segment_header(void **state)
{
	uint8_t h[JSEG_HDR];
	uint64_t first = 0;

	jseg_hdr_encode(h, 12345);
	assert_int_equal(jseg_hdr_check(h, sizeof h, &first), 0);
	assert_int_equal(first, 12345);
	h[17] ^= 1;
	assert_int_equal(jseg_hdr_check(h, sizeof h, &first), -EBADMSG);
	assert_int_equal(jseg_hdr_check(h, 10, &first), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_damage_rejected),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_segment_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
