/*
 * histogram — a log-linear latency histogram in the style of HdrHistogram:
 * exact below 256 ns, then 128 linear sub-buckets per power of two, so any
 * recorded value is reported within 1/128 (< 0.8 %) of what it was.
 * Recording is a few instructions and never allocates; each IO thread owns
 * one histogram and the main thread merges them after the threads joined.
 */
#ifndef TWINFS_BENCH_HISTOGRAM_H
#define TWINFS_BENCH_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS 8
#define HISTOGRAM_BUCKETS ((1u << HISTOGRAM_SUB_BITS) + \
			   (64u - HISTOGRAM_SUB_BITS) * (1u << (HISTOGRAM_SUB_BITS - 1)))

struct histogram {
	uint64_t count;		/* values recorded */
	uint64_t min, max;	/* exact extremes (min is UINT64_MAX when empty) */
	long double sum;	/* for the mean only; percentiles use counts[] */
	uint64_t counts[HISTOGRAM_BUCKETS];
};

/* Empties h. */
void histogram_init(struct histogram *h);
/* Adds one value (any unit; the IO code records nanoseconds). */
void histogram_record(struct histogram *h, uint64_t value);
/* Adds every value of src to dst. */
void histogram_merge(struct histogram *dst, const struct histogram *src);
/* The value at or below which a fraction q (0..1) of the recorded values
 * lie: the highest value of the bucket holding the ceil(q*count)-th value,
 * clamped to [min, max]. 0 when empty. */
uint64_t histogram_percentile(const struct histogram *h, double q);
double histogram_mean(const struct histogram *h);

/* Bucket arithmetic, exposed for the unit tests. */
unsigned histogram_index(uint64_t value);
uint64_t histogram_bucket_low(unsigned index);
uint64_t histogram_bucket_high(unsigned index);

#endif
