/*
 * copy — the classic copy benchmark: copy the dataset's large file, then its
 * small-file tree, onto each target in turn (open/read/write/close like cp
 * or xcopy /E, keeping mode and mtime), time each phase until the data is
 * durable on the target (and, with a replicated state, acknowledged by the
 * peer), log Start/End lines, and remove the copies afterwards.
 * Main thread only.
 */
#ifndef TWINFS_BENCH_COPY_H
#define TWINFS_BENCH_COPY_H

#include <stddef.h>
#include <stdio.h>

#include "bench/dataset.h"
#include "bench/result.h"

#define COPY_BUFSIZE (1u << 20)	/* what xcopy and robocopy use per IO */

enum copy_durability {
	COPY_FSYNC,	/* fsync(2) every file before close (default) */
	COPY_SYNCFS,	/* one syncfs(2) on the target when the phase ends */
};

struct copy_opts {
	const char *const *targets;
	size_t ntargets;
	int runs;			/* >= 1; the median run is reported */
	enum copy_durability durability;
	const char *replicated_state;	/* run `twinfs sync --state` (or NULL) */
	const char *self_exe;		/* the twinfs binary for `sync` */
	int progress;			/* draw the progress line on stderr */
	FILE *log;			/* Start/End lines */
};

/* Runs every phase on every target and appends one result per target and
 * phase to out. Returns 0 or the first -errno (logged, naming the file or
 * the failed sync); copies already made are removed either way. */
int copy_run(const struct dataset *ds, const struct copy_opts *o,
	     struct result_set *out);

struct progress;

/* Copies one regular file src -> dst (created or truncated) with a buffer
 * of bufsize bytes, then fchmod + futimens from the source; fsyncs dst
 * when do_fsync. Adds the bytes copied to *done and shows them on p (both
 * may be NULL). Returns bytes copied or -errno (not logged). */
long long copy_file(const char *src, const char *dst, void *buf,
		    size_t bufsize, int do_fsync, struct progress *p,
		    uint64_t *done);

#endif
