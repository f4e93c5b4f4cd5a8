/* Unit tests for bench/histogram: bucket layout, percentiles against
 * known data, precision bound, merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "bench/histogram.h"

static void test_buckets_cover_without_gaps(void **state)
{
	/* Consecutive buckets tile the value range exactly. */
	for (unsigned i = 0; i + 1 < HISTOGRAM_BUCKETS; i++) {
		if (histogram_bucket_high(i) + 1 != histogram_bucket_low(i + 1))
			fail_msg("gap after bucket %u: high %llu, next low %llu", i,
				 (unsigned long long)histogram_bucket_high(i),
				 (unsigned long long)histogram_bucket_low(i + 1));
	}
	assert_int_equal(histogram_index(0), 0);
	assert_int_equal(histogram_index(255), 255);
	assert_int_equal(histogram_index(256), 256);
	assert_int_equal(histogram_bucket_high(HISTOGRAM_BUCKETS - 1), UINT64_MAX);
	assert_int_equal(histogram_index(UINT64_MAX), HISTOGRAM_BUCKETS - 1);
}

static void test_index_roundtrip_and_precision(void **state)
{
	static const uint64_t vals[] = { 0, 1, 100, 255, 256, 257, 511, 512, 1000,
		4095, 4096, 123456, 999999, 1000000, 1ull << 40, (1ull << 40) + 12345,
		UINT64_MAX / 3, UINT64_MAX };

	for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
		uint64_t v = vals[k];
		unsigned i = histogram_index(v);
		uint64_t lo = histogram_bucket_low(i), hi = histogram_bucket_high(i);

		if (v < lo || v > hi)
			fail_msg("%llu not inside its bucket [%llu, %llu]",
				 (unsigned long long)v, (unsigned long long)lo,
				 (unsigned long long)hi);
		/* Bucket width below 1/128 of the value: < 0.8 % error. */
		if (v >= 256 && (double)(hi - lo) > (double)v / 128.0)
			fail_msg("bucket of %llu too wide: %llu", (unsigned long long)v,
				 (unsigned long long)(hi - lo));
	}
}

static void test_percentiles_exact_small_values(void **state)
{
	struct histogram *h = malloc(sizeof(*h));

	/* Values 1..100, shuffled order: p50 = 50, p99 = 99, p99.9 = 100. */
	histogram_init(h);
	for (int i = 0; i < 100; i++)
		histogram_record(h, (uint64_t)((i * 37) % 100 + 1));
	assert_int_equal(h->count, 100);
	assert_int_equal(histogram_percentile(h, 0.50), 50);
	assert_int_equal(histogram_percentile(h, 0.99), 99);
	assert_int_equal(histogram_percentile(h, 0.999), 100);
	assert_int_equal(histogram_percentile(h, 0.0), 1);
	assert_int_equal(histogram_percentile(h, 1.0), 100);
	assert_true(histogram_mean(h) > 50.49 && histogram_mean(h) < 50.51);
	free(h);
}

static void test_percentiles_large_values(void **state)
{
	struct histogram *h = malloc(sizeof(*h));

	/* 1000 latencies: 990 at 100 us, 9 at 5 ms, 1 at 80 ms (in ns). */
	histogram_init(h);
	for (int i = 0; i < 990; i++)
		histogram_record(h, 100000);
	for (int i = 0; i < 9; i++)
		histogram_record(h, 5000000);
	histogram_record(h, 80000000);
	uint64_t p50 = histogram_percentile(h, 0.5);
	uint64_t p99 = histogram_percentile(h, 0.99);
	uint64_t p999 = histogram_percentile(h, 0.999);
	uint64_t p9999 = histogram_percentile(h, 0.9999);

	/* Within the bucket precision of the true values. */
	assert_true(p50 >= 100000 && p50 <= 100000 + 100000 / 128);
	assert_true(p99 >= 100000 && p99 <= 100000 + 100000 / 128);	/* rank 990 */
	assert_true(p999 >= 5000000 && p999 <= 5000000 + 5000000 / 128); /* rank 999 */
	assert_int_equal(p9999, 80000000);	/* clamped to the exact max */
	assert_int_equal(h->min, 100000);
	assert_int_equal(h->max, 80000000);
	free(h);
}

static void test_empty_and_merge(void **state)
{
	struct histogram *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));

	histogram_init(a);
	histogram_init(b);
	assert_int_equal(histogram_percentile(a, 0.5), 0);
	assert_true(histogram_mean(a) == 0.0);
	for (uint64_t v = 1; v <= 50; v++)
		histogram_record(a, v);
	for (uint64_t v = 51; v <= 100; v++)
		histogram_record(b, v);
	histogram_merge(a, b);
	assert_int_equal(a->count, 100);
	assert_int_equal(a->min, 1);
	assert_int_equal(a->max, 100);
	assert_int_equal(histogram_percentile(a, 0.5), 50);
	assert_int_equal(histogram_percentile(a, 0.75), 75);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets_cover_without_gaps),
		cmocka_unit_test(test_index_roundtrip_and_precision),
		cmocka_unit_test(test_percentiles_exact_small_values),
		cmocka_unit_test(test_percentiles_large_values),
		cmocka_unit_test(test_empty_and_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
