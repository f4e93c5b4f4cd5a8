/*
 * result — one measured outcome (a copy phase on a target, or an IO pattern
 * on a target) and the growable list of them that the report writers read.
 * Filled by copy/io/sweep on the main thread; never shared across threads.
 */
#ifndef TWINFS_BENCH_RESULT_H
#define TWINFS_BENCH_RESULT_H

#include <stddef.h>
#include <stdint.h>

enum result_kind { RESULT_COPY, RESULT_IO };

struct result_lat {		/* microseconds */
	double p50, p99, p999, mean, max;
};

struct result_run {		/* one run of a copy phase */
	uint64_t bytes, files;
	double seconds;
	double cpu_pct;		/* this process: CPU / wall / cores * 100 */
	struct result_lat lat;	/* per-file copy time */
	char start[40], end[40];
};

struct result {
	enum result_kind kind;
	char target[4096];
	char name[64];		/* "large" / "small", or the pattern name */
	uint64_t bytes;		/* bytes moved (read + written for IO) */
	double seconds;
	uint64_t files;		/* copy: files copied */
	uint64_t ops;		/* IO: operations completed */
	double iops, read_iops, write_iops;
	struct result_lat lat;
	double cpu_pct;		/* process CPU / wall / cores * 100 */
	int jobs, iodepth, direct;
	int cached;		/* IO: the page cache was kept warm (--cached) */
	uint32_t bs;
	int read_pct, random_pct;
	char start[40], end[40];	/* ISO 8601 with the zone */
	struct result_run *runs;	/* copy with --runs: every run */
	size_t nruns;
};

struct runinfo;

struct result_set {
	const char *command;	/* "copy", "io", "sweep" */
	const struct runinfo *run;	/* what was run (NULL: not written) */
	int knee;		/* sweep: thread count where IOPS stop growing */
	struct result *v;
	size_t n, cap;
};

/* Appends a zeroed result and returns it (NULL on -ENOMEM). The pointer
 * stays valid until the next result_set_add. */
struct result *result_set_add(struct result_set *s, enum result_kind kind,
			      const char *target, const char *name);
void result_set_free(struct result_set *s);

/* bytes / seconds / 1e6 (0 when seconds is 0): the one MB/s definition. */
double result_mb_per_s(const struct result *r);
double result_files_per_s(const struct result *r);

#endif
