/* Unit tests for what the bench options rely on: size parsing edge cases,
 * pattern names, thread-count specs and knee detection. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bench/io.h"
#include "bench/sweep.h"
#include "common/size.h"

static void test_sizes_we_rely_on(void **state)
{
	static const struct { const char *in; int rc; uint64_t out; } cases[] = {
		{ "7.71G", 0, 8278549463ull },	/* the classic ISO */
		{ "1.94GB", 0, 1940000000ull },	/* the classic System32 */
		{ "32M", 0, 32ull << 20 },
		{ "256M", 0, 256ull << 20 },
		{ "1G", 0, 1ull << 30 },
		{ "64KiB", 0, 65536 },
		{ "4k", 0, 4096 },
		{ "1m", 0, 1u << 20 },		/* --bs 1m */
		{ "0", 0, 0 },			/* --large 0 skips the phase */
		{ "512", 0, 512 },
		{ "", -EINVAL, 0 },
		{ "M", -EINVAL, 0 },
		{ "-1G", -EINVAL, 0 },
		{ "10 X", -EINVAL, 0 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t v = 0;
		int rc = size_parse(cases[i].in, &v);

		if (rc != cases[i].rc || (rc == 0 && v != cases[i].out))
			fail_msg("size_parse(\"%s\") = %d/%llu, want %d/%llu", cases[i].in,
				 rc, (unsigned long long)v, cases[i].rc,
				 (unsigned long long)cases[i].out);
	}
}

static void test_patterns(void **state)
{
	struct io_pattern p;
	size_t n;

	io_patterns(&n);
	assert_int_equal(n, 7);
	assert_int_equal(io_pattern_find("4k-randrw70", &p), 0);
	assert_int_equal(p.bs, 4096);
	assert_int_equal(p.read_pct, 70);
	assert_int_equal(p.random_pct, 100);
	assert_int_equal(io_pattern_find("1m-seqwrite", &p), 0);
	assert_int_equal(p.bs, 1u << 20);
	assert_int_equal(p.read_pct, 0);
	assert_int_equal(p.random_pct, 0);
	assert_int_equal(io_pattern_find("4k-random", &p), -ENOENT);
}

static void test_thread_specs(void **state)
{
	static const struct { const char *in; int n; int v[8]; } cases[] = {
		{ "1..32", 6, { 1, 2, 4, 8, 16, 32 } },
		{ "1..4", 3, { 1, 2, 4 } },
		{ "3..20", 4, { 3, 6, 12, 20 } },
		{ "8..8", 1, { 8 } },
		{ "1,2,4,8", 4, { 1, 2, 4, 8 } },
		{ "6", 1, { 6 } },
		{ "4..1", -EINVAL, { 0 } },
		{ "0..4", -EINVAL, { 0 } },
		{ "1,,2", -EINVAL, { 0 } },
		{ "4,2", -EINVAL, { 0 } },
		{ "1..x", -EINVAL, { 0 } },
		{ "", -EINVAL, { 0 } },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int got[SWEEP_MAX_COUNTS];
		int n = sweep_parse_threads(cases[i].in, got, SWEEP_MAX_COUNTS);

		if (n != cases[i].n)
			fail_msg("\"%s\": %d counts, want %d", cases[i].in, n, cases[i].n);
		for (int k = 0; k < n; k++)
			if (got[k] != cases[i].v[k])
				fail_msg("\"%s\"[%d] = %d, want %d", cases[i].in, k, got[k],
					 cases[i].v[k]);
	}
}

static void test_knee(void **state)
{
	struct result r[5];

	memset(r, 0, sizeof r);
	for (int i = 0; i < 5; i++)
		r[i].jobs = 1 << i;
	r[0].iops = 1000; r[1].iops = 1900; r[2].iops = 3500;
	r[3].iops = 3600; r[4].iops = 3700;	/* 8 threads: +2.9 % */
	assert_int_equal(sweep_knee(r, 5), 8);
	r[3].iops = 3675;			/* exactly +5 %: still growing */
	r[4].iops = 3700;
	assert_int_equal(sweep_knee(r, 5), 16);
	r[4].iops = 5000;
	assert_int_equal(sweep_knee(r, 5), 0);	/* grows all the way */
	r[1].iops = 900;			/* fewer IOPS with 2 threads */
	assert_int_equal(sweep_knee(r, 5), 2);
	assert_int_equal(sweep_knee(r, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_we_rely_on),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_thread_specs),
		cmocka_unit_test(test_knee),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
