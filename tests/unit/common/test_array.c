/*
 * Unit tests for common/array: growth by doubling from the first
 * capacity, contents kept across growth, no change when the room is there,
 * and -ENOMEM (array untouched) when the size would overflow.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/array.h"

struct item {
	uint64_t a, b;
};

static void test_grow_doubles(void **state)
{
	static const struct {
		size_t cap, need, first, want;
	} cases[] = {
		{ 0, 1, 8, 8 },
		{ 0, 8, 8, 8 },
		{ 0, 9, 8, 16 },
		{ 0, 100, 8, 128 },
		{ 0, 1, 0, 1 },		/* first 0 counts as 1 */
		{ 8, 8, 4, 8 },		/* room already */
		{ 8, 9, 4, 16 },	/* doubles from the capacity, not first */
		{ 3, 10, 64, 12 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct item *v = cases[i].cap ? calloc(cases[i].cap, sizeof(*v)) : NULL;
		size_t cap = cases[i].cap;

		assert_int_equal(ARRAY_GROW(v, cap, cases[i].need, cases[i].first), 0);
		if (cap != cases[i].want)
			fail_msg("case %zu: cap %zu, want %zu", i, cap, cases[i].want);
		assert_non_null(v);
		/* the whole capacity is usable */
		memset(v, 0xab, cap * sizeof(*v));
		free(v);
	}
}

static void test_grow_keeps_contents(void **state)
{
	struct item *v = NULL;
	size_t n = 0, cap = 0;

	for (uint64_t k = 0; k < 10000; k++) {
		assert_int_equal(ARRAY_GROW(v, cap, n + 1, 4), 0);
		v[n++] = (struct item){ k, ~k };
	}
	assert_true(cap >= 10000 && cap < 20000);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(v[k].a, k);
		assert_int_equal(v[k].b, ~(uint64_t)k);
	}
	free(v);
}

static void test_grow_bytes(void **state)
{
	char *buf = NULL;
	size_t cap = 0;

	assert_int_equal(ARRAY_GROW(buf, cap, 5000, 4096), 0);
	assert_int_equal(cap, 8192);
	memcpy(buf, "kept", 5);
	assert_int_equal(ARRAY_GROW(buf, cap, 8193, 4096), 0);
	assert_int_equal(cap, 16384);
	assert_string_equal(buf, "kept");
	free(buf);
}

static void test_grow_overflow(void **state)
{
	struct item *v = NULL, *before;
	size_t cap = 0;

	assert_int_equal(ARRAY_GROW(v, cap, 4, 4), 0);
	before = v;
	/* elements * size beyond size_t */
	assert_int_equal(ARRAY_GROW(v, cap, SIZE_MAX / sizeof(*v) + 1, 4), -ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	/* doubling beyond size_t */
	assert_int_equal(array_grow(&v, &cap, SIZE_MAX, 1, 4), -ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	/* more than memory holds (and than malloc accepts) */
	assert_int_equal(ARRAY_GROW(v, cap, SIZE_MAX / sizeof(*v) / 2, 4), -ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_doubles),
		cmocka_unit_test(test_grow_keeps_contents),
		cmocka_unit_test(test_grow_bytes),
		cmocka_unit_test(test_grow_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
