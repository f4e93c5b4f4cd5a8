/*
 * sweep — the diskspd thread-count script as one command: run one pattern
 * with 1, 2, 4, ... threads on one shared test file, print a line per
 * count, and name the knee where adding threads stops adding IOPS.
 * Main thread only (io_run starts the job threads).
 */
#ifndef TWINFS_BENCH_SWEEP_H
#define TWINFS_BENCH_SWEEP_H

#include <stddef.h>
#include <stdio.h>

#include "bench/io.h"
#include "bench/result.h"

#define SWEEP_MAX_COUNTS 64
#define SWEEP_KNEE_GAIN 0.05	/* less than 5 % more IOPS: the knee */

/* "1..32" -> 1 2 4 8 16 32 (doubling from the low end; the high end is
 * always included: "3..20" -> 3 6 12 20), or a list "1,2,4,8" (ascending).
 * Returns the count of entries stored in counts[max], or -EINVAL. */
int sweep_parse_threads(const char *spec, int *counts, size_t max);

/* The first thread count whose IOPS gain over the previous count is below
 * SWEEP_KNEE_GAIN, or 0 when every step gained more. v[i].jobs and
 * v[i].iops are read. */
int sweep_knee(const struct result *v, size_t n);

/* Runs the sweep on target with the given per-count options (o->jobs is
 * set per count; o->shared_file is forced), printing one line per count
 * to out and appending a result per count to s. Returns 0 or -errno. */
int sweep_run(const char *target, uint64_t size, struct io_opts *o,
	      const int *counts, size_t ncounts, FILE *out,
	      struct result_set *s);

#endif
