/*
 * histo — bucket bounds and the reader of the lock-free latency histogram
 * (histo.h). Any thread.
 */
#include "common/histo.h"

/* 10 us .. 10 s in 1-2.5-5 steps: FUSE round trips take tens of us, a
 * sync-mode fsync waits milliseconds, a stalled peer seconds. */
const uint64_t histo_bound_ns[HISTO_BOUNDS] = {
	10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000,
	1000000000, 2500000000u, 5000000000u, 10000000000u,
};

void histo_read(const struct histo *h, struct histo_snap *s)
{
	uint64_t c = 0;

	for (int i = 0; i <= HISTO_BOUNDS; i++) {
		c += atomic_load_explicit(&h->n[i], memory_order_relaxed);
		s->cum[i] = c;
	}
	s->sum_ns = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}
