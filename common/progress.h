/*
 * progress — one status line redrawn in place ("\r") while a benchmark or
 * a sync runs: bytes done and total, percent, rate, time left, files done
 * and left. Drawn only when enabled (the caller decides: --progress auto
 * means stderr is a terminal), at most four times a second, erased when
 * done. Main thread only.
 */
#ifndef TWINFS_COMMON_PROGRESS_H
#define TWINFS_COMMON_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *out;
	int enabled;
	int timed;		/* counts milliseconds of a timed run, not bytes */
	char label[96];
	uint64_t total, total_files;
	uint64_t done, files;
	uint64_t start_ns, last_ns;
};

/* total bytes and total_files (0: no file count shown). */
void progress_init(struct progress *p, FILE *out, int enabled,
		   const char *label, uint64_t total, uint64_t total_files);
/* A run of a fixed duration: the line shows seconds elapsed of total. */
void progress_init_timed(struct progress *p, FILE *out, int enabled,
			 const char *label, double seconds);
/* done bytes (or milliseconds) out of total; redraws if 250 ms passed. */
void progress_update(struct progress *p, uint64_t done);
/* files done out of total_files; redraws like progress_update. */
void progress_files(struct progress *p, uint64_t files);
/* Erases the line. */
void progress_done(struct progress *p);

/* The line itself (no "\r"): "LABEL: 1.00 GiB / 4.00 GiB  25%  100 MiB/s
 * ETA 0:30  files 2500/10000 (7500 left)". Returns buf. */
char *progress_format(char *buf, size_t len, const char *label, uint64_t done,
		      uint64_t total, uint64_t files, uint64_t total_files,
		      double elapsed_s);

/* --progress auto|always|never: *enabled set from it (auto: stderr is a
 * terminal). 0, or -EINVAL for another word. */
int progress_mode(const char *arg, int *enabled);

#endif
