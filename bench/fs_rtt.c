/*
 * fs_rtt — the round-trip micro-benchmark of bench/fs-roundtrip.sh: a
 * loop of getxattr(2) calls on a file (an xattr that does not exist: the
 * kernel caches no xattrs, so on a FUSE mount every call is one request
 * and its reply), timed in batches. Several paths are measured batch by
 * batch in turn, each batch starting at the next path, so a mount and
 * its store share the machine's moods and no path always follows another.
 * Also counts, per call, the CPU migrations and context switches of the
 * calling thread (perf software counters), which show whether the reply
 * wakes the caller on another CPU. Single-threaded; not installed.
 *
 * --name picks the xattr: by default a user xattr, which the daemon looks
 * up in the store; security.capability of a file the mount created is
 * answered from memory (fs/attr.c), which leaves the transport alone.
 *
 * Usage: fs_rtt [--calls N] [--batches B] [--name XATTR] PATH...
 * Prints one line per path:
 *   PATH median_us=M min_us=m max_us=x migrations_per_call=.. cs_per_call=..
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define RTT_MAX_PATHS 8
#define RTT_MAX_BATCHES 1000

static double rtt_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* A software counter of this thread, or -1 where perf is not allowed. */
static int rtt_counter(uint64_t config)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static uint64_t rtt_read(int fd)
{
	uint64_t v = 0;

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static const char *rtt_name = "user.twinfs-rtt";

static int rtt_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Runs N getxattr calls on PATH; returns microseconds per call, or a
 * negative value if the call fails other than with ENODATA. */
static double rtt_batch(const char *path, long n)
{
	char v[64];
	double t0;
	long i;

	t0 = rtt_now_us();
	for (i = 0; i < n; i++) {
		if (getxattr(path, rtt_name, v, sizeof(v)) < 0 &&
		    errno != ENODATA && errno != ENOTSUP) {
			fprintf(stderr, "fs_rtt: getxattr %s: %s\n", path,
				strerror(errno));
			return -1;
		}
	}
	return (rtt_now_us() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	static double us[RTT_MAX_PATHS][RTT_MAX_BATCHES];
	uint64_t mig[RTT_MAX_PATHS] = { 0 }, cs[RTT_MAX_PATHS] = { 0 };
	long calls = 2000, batches = 15;
	int npath = 0, b, p, fmig, fcs;
	char *paths[RTT_MAX_PATHS];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
			calls = atol(argv[++i]);
		else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			rtt_name = argv[++i];
		else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
			batches = atol(argv[++i]);
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: fs_rtt [--calls N] [--batches B] [--name XATTR] PATH...\n");
			return 64;
		} else if (npath < RTT_MAX_PATHS)
			paths[npath++] = argv[i];
	}
	if (npath == 0 || calls < 1 || batches < 1 || batches > RTT_MAX_BATCHES) {
		fprintf(stderr, "usage: fs_rtt [--calls N] [--batches B] [--name XATTR] PATH...\n");
		return 64;
	}
	fmig = rtt_counter(PERF_COUNT_SW_CPU_MIGRATIONS);
	fcs = rtt_counter(PERF_COUNT_SW_CONTEXT_SWITCHES);
	for (p = 0; p < npath; p++)	/* warm the caches, lookups included */
		if (rtt_batch(paths[p], calls / 4 + 1) < 0)
			return 1;
	for (b = 0; b < batches; b++) {
		/* Each batch starts at another path: no path always runs
		 * right after the same one. */
		for (int k = 0; k < npath; k++) {
			uint64_t m0 = rtt_read(fmig), c0 = rtt_read(fcs);

			p = (b + k) % npath;
			us[p][b] = rtt_batch(paths[p], calls);
			if (us[p][b] < 0)
				return 1;
			mig[p] += rtt_read(fmig) - m0;
			cs[p] += rtt_read(fcs) - c0;
		}
	}
	for (p = 0; p < npath; p++) {
		double total = (double)calls * (double)batches;

		qsort(us[p], (size_t)batches, sizeof(double), rtt_cmp);
		printf("%s median_us=%.2f min_us=%.2f max_us=%.2f "
		       "migrations_per_call=%.3f cs_per_call=%.3f\n", paths[p],
		       us[p][batches / 2], us[p][0], us[p][batches - 1],
		       fmig < 0 ? -1.0 : (double)mig[p] / total,
		       fcs < 0 ? -1.0 : (double)cs[p] / total);
	}
	return 0;
}
