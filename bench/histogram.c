/*
 * histogram — log-linear latency buckets, percentile queries, merging.
 * Pure data structure: no locks, no allocation, no IO. One owner thread
 * records; merging happens after that thread has finished.
 */
#include "bench/histogram.h"

#include <string.h>

/*
 * Layout. With S = HISTOGRAM_SUB_BITS, values below 2^S get one bucket
 * each (index == value). A larger value v with highest set bit b (b >= S)
 * falls in "group" g = b - S + 1 >= 1; within the group we keep the S top
 * bits of v, i.e. m = v >> g, which lies in [2^(S-1), 2^S). The index is
 * 2^S + (g-1) * 2^(S-1) + (m - 2^(S-1)). Every bucket in group g spans
 * 2^g values while holding values >= 2^(S+g-1), so the width relative to
 * the value is at most 2^-(S-1): two significant decimal digits and then
 * some, the precision HdrHistogram users usually pick, in 59 KiB.
 */
#define SUB (1ull << HISTOGRAM_SUB_BITS)
#define HALF (SUB >> 1)

unsigned histogram_index(uint64_t v)
{
	unsigned b, g;

	if (v < SUB)
		return (unsigned)v;
	b = 63u - (unsigned)__builtin_clzll(v);
	g = b - HISTOGRAM_SUB_BITS + 1;
	return (unsigned)(SUB + (uint64_t)(g - 1) * HALF + ((v >> g) - HALF));
}

uint64_t histogram_bucket_low(unsigned index)
{
	uint64_t g, m;

	if (index < SUB)
		return index;
	g = (index - SUB) / HALF + 1;
	m = (index - SUB) % HALF + HALF;
	return m << g;
}

uint64_t histogram_bucket_high(unsigned index)
{
	uint64_t g;

	if (index < SUB)
		return index;
	g = (index - SUB) / HALF + 1;
	return histogram_bucket_low(index) + ((1ull << g) - 1);
}

void histogram_init(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void histogram_record(struct histogram *h, uint64_t value)
{
	h->counts[histogram_index(value)]++;
	h->count++;
	h->sum += (long double)value;
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
}

void histogram_merge(struct histogram *dst, const struct histogram *src)
{
	for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++)
		dst->counts[i] += src->counts[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t histogram_percentile(const struct histogram *h, double q)
{
	uint64_t rank, seen = 0, v;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* The ceil(q*count)-th smallest value (1-based); the tolerance keeps
	 * q = 0.99 of 100 values at rank 99 whichever way 0.99 rounds. */
	long double x = (long double)q * (long double)h->count;
	rank = (uint64_t)x;
	if (x - (long double)rank > 1e-9L)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			v = histogram_bucket_high(i);
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double histogram_mean(const struct histogram *h)
{
	return h->count ? (double)(h->sum / (long double)h->count) : 0.0;
}
