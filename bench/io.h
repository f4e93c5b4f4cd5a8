/*
 * io — synthetic IO patterns in the manner of fio, diskspd and iometer: N
 * jobs (threads), each with its own test file (or one shared file, as
 * diskspd does), issuing block-sized reads and writes at random or
 * sequential offsets for a fixed time. iodepth 1 uses pread/pwrite;
 * iodepth > 1 keeps that many IOs in flight per job with io_uring.
 * Reports IOPS, MB/s, latency percentiles (log-linear histogram) and CPU.
 * The main thread calls these; io_run starts and joins the job threads.
 */
#ifndef TWINFS_BENCH_IO_H
#define TWINFS_BENCH_IO_H

#include <stddef.h>
#include <stdint.h>

#include "bench/result.h"

struct io_pattern {
	char name[48];
	uint32_t bs;		/* bytes per IO */
	int read_pct;		/* share of reads, 0..100 */
	int random_pct;		/* share of random offsets, 0..100 */
};

/* The named patterns (4k-randread ... 1m-seqwrite), NULL-terminated by
 * count: *n receives how many. */
const struct io_pattern *io_patterns(size_t *n);
/* 0 and *out filled, or -ENOENT for an unknown name. */
int io_pattern_find(const char *name, struct io_pattern *out);

/* The test files: one per job, or one shared. Created by io_files_layout
 * and removed by io_files_remove. */
struct io_files {
	char **paths;
	int n;
	uint64_t size;
};

struct io_opts {
	struct io_pattern pat;
	int jobs;		/* threads */
	int iodepth;		/* IOs in flight per job */
	double runtime;		/* seconds */
	int direct;		/* O_DIRECT; cleared if the target rejects it */
	int cached;		/* buffered, file read into the cache first */
	int shared_file;	/* every job on files.paths[0] */
	int progress;		/* progress line on stderr */
	uint64_t seed;
};

/* Creates n files of `size` bytes under dir, filled with non-zero pseudo-
 * random data, fsynced and dropped from the page cache (what fio's
 * invalidate=1 does before a job). Returns 0 or -errno (logged). */
int io_files_layout(struct io_files *f, const char *dir, int n, uint64_t size,
		    int progress);
void io_files_remove(struct io_files *f);

/* Bytes of test files the jobs of o touch (one file, or one per job). */
uint64_t io_working_set(const struct io_files *f, const struct io_opts *o);

/* Runs o->pat on the files and fills r (target and name set by the
 * caller). When O_DIRECT was asked for but the target refuses it, says so
 * on stderr, clears o->direct and runs buffered. Returns 0 or -errno. */
int io_run(const struct io_files *f, struct io_opts *o, struct result *r);

#endif
