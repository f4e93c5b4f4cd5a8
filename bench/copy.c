/*
 * copy — runs the copy benchmark phases on each target, times them, logs
 * Start/End, and cleans up. Main thread only. It writes only inside
 * <target>/twinfs-bench-copy.<pid>/ and removes that folder when a run is
 * over; it reads the dataset and never modifies it.
 */
#include "bench/copy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/histogram.h"
#include "common/progress.h"
#include "bench/report.h"
#include "bench/stop.h"
#include "bench/tree.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/size.h"

extern char **environ;


long long copy_file(const char *src, const char *dst, void *buf,
		    size_t bufsize, int do_fsync, struct progress *p,
		    uint64_t *done)
{
	struct stat st;
	long long copied = 0;
	int in, out, rc = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0) {
		rc = -errno;
		goto out_in;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
	if (out < 0) {
		rc = -errno;
		goto out_in;
	}
	for (;;) {
		ssize_t n = read(in, buf, bufsize), w;

		if (stop_requested()) {
			rc = -EINTR;
			goto out_out;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out_out;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n; off += w) {
			w = write(out, (char *)buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR && !stop_requested()) {
				w = 0;
				continue;
			}
			if (w < 0) {
				rc = -errno;
				goto out_out;
			}
		}
		copied += n;
		if (done) {
			*done += (uint64_t)n;
			progress_update(p, *done);
		}
	}
	/* Mode and mtime like cp -p / xcopy: the umask must not narrow the
	 * mode, and the timestamp is set after the last write. */
	struct timespec times[2] = { st.st_atim, st.st_mtim };
	if (fchmod(out, st.st_mode & 07777) < 0 || futimens(out, times) < 0) {
		rc = -errno;
		goto out_out;
	}
	if (do_fsync && fsync(out) < 0)
		rc = -errno;
out_out:
	if (close(out) < 0 && !rc)
		rc = -errno;
out_in:
	close(in);
	return rc ? rc : copied;
}

/*
 * Replication. With --replicated-state the target is a twinfs mount and a
 * phase is only over once the peer has acknowledged every change: we run
 * `twinfs sync --state DIR` (this very binary) and wait for it. Its time
 * is part of the phase, the way a user of a sync-mode pair waits.
 */
static int copy_replication_sync(const struct copy_opts *o)
{
	char *argv[] = { "twinfs", "sync", "--quiet", "--state", (char *)o->replicated_state, NULL };
	pid_t pid;
	int status, rc;

	rc = posix_spawn(&pid, o->self_exe, NULL, NULL, argv, environ);
	if (rc) {
		log_error("cannot start 'twinfs sync' to wait for the peer",
			  "exe=\"%s\" err=\"%s\"", o->self_exe, strerror(rc));
		return -rc;
	}
	/* On Ctrl-C the child got the signal too (same process group). */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (stop_requested())
		return -EINTR;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	log_error("the peer did not acknowledge the copy: 'twinfs sync' failed",
		  "state=\"%s\" status=%d hint=\"check 'twinfs status --state %s'\"",
		  o->replicated_state,
		  WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
		  o->replicated_state);
	return -EIO;
}

/*
 * Durability. The classic test stops the clock when xcopy returns, and a
 * Windows copy returns once the data has been handed to the storage stack
 * of the target. On Linux the equivalent point that holds for every kind
 * of target is "fsync(2) returned": a FUSE mount such as twinfs only
 * learns about durability through FUSE_FSYNC (syncfs(2) on a FUSE mount
 * does not reach the daemon), so the default fsyncs every file before
 * closing it, like `cp` followed by `sync FILE`, or rsync --fsync.
 * --durability syncfs instead issues one syncfs(2) on the target at the
 * end of the phase: cheaper on local filesystems with many small files,
 * but on FUSE it only proves the data reached the daemon.
 */
static int copy_durable(const char *dir, const struct copy_opts *o)
{
	int fd, rc = 0;

	if (o->durability != COPY_SYNCFS)
		return 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syncfs(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* dir + "/" + rel into buf[PATH_MAX]; -ENAMETOOLONG if it does not fit. */
static int copy_join(char *buf, const char *dir, const char *rel)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, rel);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static void copy_lat(const struct histogram *h, struct result_lat *l)
{
	l->p50 = (double)histogram_percentile(h, 0.50) / 1e3;
	l->p99 = (double)histogram_percentile(h, 0.99) / 1e3;
	l->p999 = (double)histogram_percentile(h, 0.999) / 1e3;
	l->mean = histogram_mean(h) / 1e3;
	l->max = (double)h->max / 1e3;
}

/* Copies one file of the dataset into work/, timing it into h. */
static int copy_one(const struct dataset *ds, const struct dataset_file *f,
		    const char *work, const struct copy_opts *o, void *buf,
		    struct histogram *h, struct progress *p, uint64_t *done)
{
	char src[PATH_MAX], dst[PATH_MAX];
	uint64_t t0 = clock_mono_ns();
	long long n;

	if (copy_join(src, ds->root, f->path) || copy_join(dst, work, f->path)) {
		log_error("path too long", "file=\"%s\"", f->path);
		return -ENAMETOOLONG;
	}
	n = copy_file(src, dst, buf, COPY_BUFSIZE, o->durability == COPY_FSYNC,
		      p, done);
	if (n == -EINTR && stop_requested())
		return (int)n;
	if (n < 0) {
		log_error("copy failed", "src=\"%s\" dst=\"%s\" err=\"%s\"", src, dst,
			  strerror((int)-n));
		return (int)n;
	}
	histogram_record(h, clock_mono_ns() - t0);
	progress_files(p, p->files + 1);
	return 0;
}

static double copy_cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* One phase ("large" or "small") of one run on one target. */
static int copy_phase(const struct dataset *ds, const char *target,
		      const char *work, int large, const struct copy_opts *o,
		      void *buf, struct histogram *h, struct result_run *run)
{
	char path[PATH_MAX], label[128], a[32], fig[256];
	struct progress p;
	uint64_t done = 0, t0, t1;
	double cpu0;
	size_t files = large ? 1 : ds->nsmall;
	int rc = 0;

	/* Cold source: the dataset was fsynced when written, so DONTNEED
	 * really evicts it and every phase reads from the disk alike. */
	dataset_drop_cache(ds);
	histogram_init(h);
	run->bytes = large ? ds->large.size : ds->small_bytes;
	run->files = files;
	snprintf(label, sizeof label, "%s: %s", target, large ? "large" : "small");
	progress_init(&p, stderr, o->progress, label, run->bytes, files);

	clock_wall_str(run->start, sizeof run->start);
	fprintf(o->log, "Start %s  %s phase on %s (%zu file%s, %s)\n", run->start,
		large ? "large" : "small", target, files, files == 1 ? "" : "s",
		size_format_iec(run->bytes, a, sizeof a));
	fflush(o->log);
	cpu0 = copy_cpu_s();
	t0 = clock_mono_ns();
	if (large) {
		char *slash;

		rc = copy_join(path, work, ds->large.path);
		if (rc == 0) {
			slash = strrchr(path, '/');
			*slash = '\0';
			rc = tree_mkdirs(path, 0755);
		}
		if (rc == 0)
			rc = copy_one(ds, &ds->large, work, o, buf, h, &p, &done);
	} else {
		for (size_t i = 0; i < ds->ndirs && !rc; i++) {
			rc = copy_join(path, work, ds->dirs[i]);
			if (rc == 0 && mkdir(path, 0755) < 0 && errno != EEXIST) {
				rc = -errno;
				log_error("cannot create a folder on the target",
					  "path=\"%s\" err=\"%s\"", path, strerror(errno));
			}
		}
		for (size_t i = 0; i < ds->nsmall && !rc; i++)
			rc = copy_one(ds, &ds->small[i], work, o, buf, h, &p, &done);
	}
	if (rc == 0 && (rc = copy_durable(work, o)))
		log_error("syncfs on the target failed", "target=\"%s\" err=\"%s\"",
			  target, strerror(-rc));
	if (rc == 0 && o->replicated_state)
		rc = copy_replication_sync(o);
	t1 = clock_mono_ns();
	progress_done(&p);
	if (rc)
		return rc;
	clock_wall_str(run->end, sizeof run->end);
	run->seconds = (double)(t1 - t0) / 1e9;
	run->cpu_pct = (copy_cpu_s() - cpu0) / run->seconds /
		       (double)(sysconf(_SC_NPROCESSORS_ONLN) > 0 ?
				sysconf(_SC_NPROCESSORS_ONLN) : 1) * 100.0;
	copy_lat(h, &run->lat);
	report_copy_figures(fig, sizeof fig, run->bytes, files, run->seconds);
	fprintf(o->log, "End   %s  %s\n", run->end, fig);
	fflush(o->log);
	return 0;
}

static int copy_cmp_seconds(const void *a, const void *b)
{
	const struct result_run *x = a, *y = b;

	return (x->seconds > y->seconds) - (x->seconds < y->seconds);
}

/* Fills r from its runs: the median run by time (the lower middle one for
 * an even count, so the figures are those of a run that happened). */
static void copy_pick_median(struct result *r)
{
	struct result_run *sorted = malloc(r->nruns * sizeof(*sorted));
	const struct result_run *m = &r->runs[0];

	if (sorted) {
		memcpy(sorted, r->runs, r->nruns * sizeof(*sorted));
		qsort(sorted, r->nruns, sizeof(*sorted), copy_cmp_seconds);
		for (size_t i = 0; i < r->nruns; i++)
			if (r->runs[i].seconds == sorted[(r->nruns - 1) / 2].seconds) {
				m = &r->runs[i];
				break;
			}
		free(sorted);
	}
	r->bytes = m->bytes;
	r->files = m->files;
	r->seconds = m->seconds;
	r->cpu_pct = m->cpu_pct;
	r->lat = m->lat;
	memcpy(r->start, m->start, sizeof r->start);
	memcpy(r->end, m->end, sizeof r->end);
}

int copy_run(const struct dataset *ds, const struct copy_opts *o,
	     struct result_set *out)
{
	struct histogram *h = malloc(sizeof(*h));
	void *buf = malloc(COPY_BUFSIZE);
	int rc = 0;

	if (!h || !buf) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t t = 0; t < o->ntargets && !rc; t++) {
		const char *target = o->targets[t];
		size_t idx[2] = { 0, 0 };
		char work[PATH_MAX];
		int phases[2], np = 0;

		if (ds->has_large)
			phases[np++] = 1;
		if (ds->nsmall)
			phases[np++] = 0;
		/* Indexes, not pointers: adding a result may move the array. */
		for (int k = 0; k < np; k++) {
			struct result *r = result_set_add(out, RESULT_COPY, target,
							  phases[k] ? "large" : "small");

			if (!r || !(r->runs = calloc((size_t)o->runs, sizeof(*r->runs)))) {
				rc = -ENOMEM;
				goto out_free;
			}
			idx[k] = out->n - 1;
		}
		snprintf(work, sizeof work, "%s/twinfs-bench-copy.%d", target,
			 (int)getpid());
		fprintf(o->log, "== target %zu/%zu: %s\n", t + 1, o->ntargets, target);
		/* A replicated pair starts each phase quiet: changes made
		 * before the benchmark, or the removal of the previous run's
		 * copies, are waited for here, outside any timed phase. */
		if (o->replicated_state && (rc = copy_replication_sync(o)))
			break;
		for (int run = 0; run < o->runs && !rc; run++) {
			if (o->runs > 1)
				fprintf(o->log, "-- run %d/%d\n", run + 1, o->runs);
			if (mkdir(work, 0755) < 0) {
				rc = -errno;
				log_error("cannot create the copy folder on the target",
					  "path=\"%s\" err=\"%s\" hint=\"is the target writable?\"",
					  work, strerror(errno));
				break;
			}
			for (int k = 0; k < np && !rc; k++) {
				struct result *r = &out->v[idx[k]];

				rc = copy_phase(ds, target, work, phases[k], o, buf, h,
						&r->runs[run]);
				if (rc == 0)
					r->nruns++;
			}
			/* Removing the copies is not part of any phase. */
			int rm = tree_remove(work);
			if (rm && !rc)
				rc = rm;
			if (!rc && o->replicated_state)
				rc = copy_replication_sync(o);
		}
		for (int k = 0; k < np && !rc; k++)
			copy_pick_median(&out->v[idx[k]]);
	}
out_free:
	free(h);
	free(buf);
	return rc;
}
