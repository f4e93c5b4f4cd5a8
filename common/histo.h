/*
 * histo — a latency histogram that any number of threads update with two
 * relaxed atomic adds and no lock (Prometheus buckets: 10 us to 10 s, 1-2.5-5
 * steps, and +Inf), read at any time by another thread (the one rendering
 * /metrics). Fixed size, no allocation; a reader may see an observation's
 * bucket before its sum, which a scrape tolerates.
 */
#ifndef TWINFS_HISTO_H
#define TWINFS_HISTO_H

#include <stdatomic.h>
#include <stdint.h>

#define HISTO_BOUNDS 19		/* finite upper bounds; one more bucket: +Inf */

struct histo {
	atomic_uint_fast64_t n[HISTO_BOUNDS + 1];	/* per bucket, not cumulative */
	atomic_uint_fast64_t sum_ns;
};

/* The finite bounds in nanoseconds, ascending. */
extern const uint64_t histo_bound_ns[HISTO_BOUNDS];

/* Counts one observation of NS nanoseconds. Any thread. */
static inline void histo_observe(struct histo *h, uint64_t ns)
{
	unsigned int i = 0;

	while (i < HISTO_BOUNDS && ns > histo_bound_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->n[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

/* A copy for rendering: cumulative counts (cum[HISTO_BOUNDS] is the total,
 * the +Inf bucket) and the sum. Any thread. */
struct histo_snap {
	uint64_t cum[HISTO_BOUNDS + 1];
	uint64_t sum_ns;
};
void histo_read(const struct histo *h, struct histo_snap *s);

#endif
