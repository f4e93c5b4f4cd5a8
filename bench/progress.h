/*
 * progress — one percentage line redrawn in place ("\r") while a benchmark
 * runs, drawn only when enabled (the caller passes isatty(stdout)), at most
 * ten times a second, erased when done. Main thread only.
 */
#ifndef TWINFS_BENCH_PROGRESS_H
#define TWINFS_BENCH_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *out;
	int enabled;
	char label[96];
	uint64_t total;
	uint64_t last_ns;
};

void progress_init(struct progress *p, FILE *out, int enabled,
		   const char *label, uint64_t total);
/* done out of total; redraws if 100 ms passed since the last draw. */
void progress_update(struct progress *p, uint64_t done);
/* Erases the line. */
void progress_done(struct progress *p);

#endif
