/*
 * sweep — thread-count sweep over one IO pattern and knee detection.
 * Main thread only; it lays out one test file under the target, runs
 * io_run once per count, and removes the file.
 */
#include "bench/sweep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report.h"

static int sweep_number(const char *s, char **end)
{
	long v;

	errno = 0;
	v = strtol(s, end, 10);
	if (errno || *end == s || v < 1 || v > 4096)
		return -EINVAL;
	return (int)v;
}

int sweep_parse_threads(const char *spec, int *counts, size_t max)
{
	const char *dots = strstr(spec, "..");
	char *end;
	size_t n = 0;

	if (dots) {
		int lo = sweep_number(spec, &end), hi;

		if (lo < 0 || end != dots)
			return -EINVAL;
		hi = sweep_number(dots + 2, &end);
		if (hi < 0 || *end || hi < lo)
			return -EINVAL;
		for (long c = lo; c < hi && n < max; c *= 2)
			counts[n++] = (int)c;
		if (n < max)
			counts[n++] = hi;
		return (int)n;
	}
	for (const char *p = spec; ; p = end + 1) {
		int c = sweep_number(p, &end);

		if (c < 0 || (*end && *end != ',') || n == max ||
		    (n && c <= counts[n - 1]))
			return -EINVAL;
		counts[n++] = c;
		if (!*end)
			break;
	}
	return (int)n;
}

int sweep_knee(const struct result *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i - 1].iops <= 0 ||
		    v[i].iops < v[i - 1].iops * (1.0 + SWEEP_KNEE_GAIN))
			return v[i].jobs;
	return 0;
}

int sweep_run(const char *target, uint64_t size, struct io_opts *o,
	      const int *counts, size_t ncounts, FILE *out,
	      struct result_set *s)
{
	struct io_files files;
	size_t first = s->n;
	char rate[64];
	int rc;

	rc = io_files_layout(&files, target, 1, size, o->progress);
	if (rc)
		return rc;
	o->shared_file = 1;
	fprintf(out, "%-8s %12s %-26s %10s %10s %10s %6s %s\n", "threads", "IOPS",
		"throughput", "lat p50", "p99", "p99.9", "CPU%", "gain");
	fflush(out);
	for (size_t i = 0; i < ncounts; i++) {
		struct result *r = result_set_add(s, RESULT_IO, target, o->pat.name);
		char gain[32] = "-";

		if (!r) {
			rc = -ENOMEM;
			break;
		}
		o->jobs = counts[i];
		rc = io_run(&files, o, r);
		if (rc) {
			s->n--;
			break;
		}
		if (i > 0 && s->v[s->n - 2].iops > 0)
			snprintf(gain, sizeof gain, "%+.1f%%",
				 (r->iops / s->v[s->n - 2].iops - 1.0) * 100.0);
		fprintf(out, "%-8d %12.0f %-26s %8.1f us %7.1f us %7.1f us %6.1f %s\n",
			r->jobs, r->iops, report_rate(result_mb_per_s(r) * 1e6, rate, sizeof rate),
			r->lat.p50, r->lat.p99, r->lat.p999, r->cpu_pct, gain);
		fflush(out);
	}
	io_files_remove(&files);
	if (rc)
		return rc;
	s->knee = sweep_knee(&s->v[first], s->n - first);
	if (s->knee)
		fprintf(out, "knee: %d threads (the first count gaining less than "
			"%.0f%% IOPS over the previous one)\n", s->knee,
			SWEEP_KNEE_GAIN * 100);
	else
		fprintf(out, "knee: none in range (IOPS grew by %.0f%% or more at "
			"every step; try more threads)\n", SWEEP_KNEE_GAIN * 100);
	return 0;
}
