/* Unit tests for netsync/rangeset and netsync/pathset: merging of dirty
 * byte ranges (overlapping, adjacent, disjoint, truncate) and the path set
 * with ancestor coverage. Table-driven. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/pathset.h"
#include "journal/rangeset.h"

#define MAXR 8

struct rs_case {
	const char *name;
	uint64_t add[MAXR][2];	/* off, len; len 0 ends the list */
	uint64_t want[MAXR][2];	/* off, end; end 0 ends the list */
};

static const struct rs_case rs_cases[] = {
	{ "single", { { 0, 10 } }, { { 0, 10 } } },
	{ "sequential appends merge", { { 0, 4096 }, { 4096, 4096 }, { 8192, 100 } },
	  { { 0, 8292 } } },
	{ "adjacent before merges", { { 100, 50 }, { 50, 50 } }, { { 50, 150 } } },
	{ "overlap in the middle", { { 0, 10 }, { 20, 10 }, { 5, 20 } }, { { 0, 30 } } },
	{ "disjoint stay apart", { { 30, 5 }, { 0, 5 }, { 10, 5 } },
	  { { 0, 5 }, { 10, 15 }, { 30, 35 } } },
	{ "inside an existing range", { { 0, 100 }, { 10, 5 } }, { { 0, 100 } } },
	{ "covers several", { { 10, 5 }, { 20, 5 }, { 30, 5 }, { 0, 100 } }, { { 0, 100 } } },
	{ "bridges two", { { 0, 10 }, { 20, 10 }, { 10, 10 } }, { { 0, 30 } } },
	{ "extends last backwards", { { 0, 5 }, { 100, 10 }, { 95, 5 } },
	  { { 0, 5 }, { 95, 110 } } },
	{ "zero length is a no-op", { { 5, 0 } }, { { 0, 0 } } },
	{ "clamped at the top", { { UINT64_MAX - 10, 100 } }, { { UINT64_MAX - 10, UINT64_MAX } } },
};

static void test_rangeset_table(void **state)
{
	for (size_t c = 0; c < sizeof(rs_cases) / sizeof(rs_cases[0]); c++) {
		const struct rs_case *t = &rs_cases[c];
		struct rangeset rs;
		uint64_t bytes = 0;
		size_t n = 0;

		rangeset_init(&rs);
		for (size_t i = 0; i < MAXR && (t->add[i][1] || i == 0); i++)
			assert_int_equal(rangeset_add(&rs, t->add[i][0], t->add[i][1]), 0);
		for (; n < MAXR && t->want[n][1]; n++) {
			if (n >= rs.n || rs.v[n].off != t->want[n][0] || rs.v[n].end != t->want[n][1])
				fail_msg("%s: range %zu differs", t->name, n);
			bytes += t->want[n][1] - t->want[n][0];
		}
		if (rs.n != n)
			fail_msg("%s: %zu ranges, want %zu", t->name, rs.n, n);
		if (rs.bytes != bytes)
			fail_msg("%s: %llu bytes, want %llu", t->name,
				 (unsigned long long)rs.bytes, (unsigned long long)bytes);
		rangeset_free(&rs);
	}
}

static void test_rangeset_truncate(void **state)
{
	struct rangeset rs;

	rangeset_init(&rs);
	rangeset_add(&rs, 0, 10);
	rangeset_add(&rs, 20, 10);
	rangeset_add(&rs, 40, 10);
	rangeset_truncate(&rs, 25);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.v[1].end, 25);
	assert_int_equal(rs.bytes, 15);
	rangeset_truncate(&rs, 0);
	assert_int_equal(rs.n, 0);
	assert_int_equal(rs.bytes, 0);
	rangeset_free(&rs);
}

/* Random adds checked against a byte map. */
static void test_rangeset_random(void **state)
{
	enum { SPACE = 4096 };
	static uint8_t map[SPACE];
	struct rangeset rs;

	srand(7);
	for (int round = 0; round < 50; round++) {
		memset(map, 0, sizeof map);
		rangeset_init(&rs);
		for (int i = 0; i < 200; i++) {
			uint64_t off = (uint64_t)(rand() % (SPACE - 64)), len = (uint64_t)(rand() % 64);

			rangeset_add(&rs, off, len);
			memset(map + off, 1, len);
		}
		uint64_t bytes = 0;

		for (size_t i = 0; i < rs.n; i++) {
			assert_true(rs.v[i].off < rs.v[i].end);
			if (i > 0)
				assert_true(rs.v[i - 1].end < rs.v[i].off);	/* not adjacent */
			bytes += rs.v[i].end - rs.v[i].off;
		}
		uint64_t want = 0;

		for (size_t b = 0; b < SPACE; b++) {
			bool in = false;

			want += map[b];
			for (size_t i = 0; i < rs.n; i++)
				if (b >= rs.v[i].off && b < rs.v[i].end)
					in = true;
			assert_int_equal(in, map[b]);
		}
		assert_int_equal(bytes, want);
		assert_int_equal(rs.bytes, want);
		rangeset_free(&rs);
	}
}

static void test_rangeset_merge_into(void **state)
{
	struct rangeset a, b;

	rangeset_init(&a);
	rangeset_init(&b);
	rangeset_add(&a, 0, 10);
	rangeset_add(&b, 5, 10);
	rangeset_add(&b, 100, 1);
	assert_int_equal(rangeset_merge_into(&a, &b), 0);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.v[0].end, 15);
	assert_int_equal(b.n, 0);
	rangeset_free(&a);
	rangeset_free(&b);
}

static void test_pathset(void **state)
{
	static const struct { const char *path; bool covered; } cases[] = {
		{ "a/b", true }, { "a/b/c/d", true }, { "a", false }, { "a/bc", false },
		{ "x", true }, { "x/y", true }, { "", false }, { "ab", false },
	};
	struct pathset s;
	char buf[32];

	pathset_init(&s);
	assert_int_equal(pathset_add(&s, "a/b", 1), 1);
	assert_int_equal(pathset_add(&s, "a/b", 2), 0);
	assert_int_equal(pathset_add(&s, "x", 3), 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (pathset_covers(&s, cases[i].path) != cases[i].covered)
			fail_msg("covers(%s) wrong", cases[i].path);
	assert_int_equal(pathset_find(&s, "a/b")->value, 1);
	/* Growth keeps every entry. */
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof buf, "d/%d", i);
		assert_int_equal(pathset_add(&s, buf, (uint64_t)i), 1);
	}
	for (int i = 0; i < 5000; i += 499) {
		snprintf(buf, sizeof buf, "d/%d", i);
		assert_non_null(pathset_find(&s, buf));
	}
	assert_true(pathset_remove(&s, "x"));
	assert_false(pathset_covers(&s, "x/y"));
	assert_int_equal(s.n, 5001);
	pathset_add(&s, "", 0);
	assert_true(pathset_covers(&s, "anything/at/all"));
	pathset_clear(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rangeset_table),
		cmocka_unit_test(test_rangeset_truncate),
		cmocka_unit_test(test_rangeset_random),
		cmocka_unit_test(test_rangeset_merge_into),
		cmocka_unit_test(test_pathset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
