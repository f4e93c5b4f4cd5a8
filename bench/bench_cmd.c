/*
 * bench_cmd — command-line front end of the benchmarks: option parsing,
 * target checks, the order of work (dataset, runs, table, outputs,
 * cleanup) and exit codes. Main thread only. It reaches targets only
 * through copy/io/sweep, and removes everything they wrote.
 */
#include "bench/bench_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/copy.h"
#include "bench/dataset.h"
#include "bench/io.h"
#include "common/progress.h"
#include "bench/report.h"
#include "bench/runinfo.h"
#include "bench/stop.h"
#include "bench/sweep.h"
#include "bench/tree.h"
#include "common/cli.h"
#include "common/log.h"
#include "common/size.h"

#define BENCH_MAX_TARGETS 16
#define BENCH_MAX_PATTERNS 32

/* The whole command line ("bench", "copy", ...), for the result files. */
static int bench_argc;
static char **bench_argv;

static void bench_usage(FILE *out)
{
	fputs("Usage: twinfs bench copy|io|sweep [OPTIONS]\n"
	      "Measures folders and mounts through plain POSIX calls and prints a\n"
	      "table plus machine-readable results.\n\n"
	      "  copy   copy one large file and a tree of small files onto each\n"
	      "         target, timed until durable (the classic copy test)\n"
	      "  io     fio-style IO patterns: IOPS, MB/s, latency percentiles, CPU\n"
	      "  sweep  one pattern at 1, 2, 4... threads; finds where IOPS stop growing\n\n"
	      "'twinfs bench copy --help' (or io, sweep) lists the options.\n", out);
}

static void bench_copy_usage(FILE *out)
{
	fputs("Usage: twinfs bench copy --target DIR [--target DIR]... [OPTIONS]\n"
	      "Copies one large file, then a tree of small files, onto each target in\n"
	      "turn (open/read/write/close, keeping mode and mtime), logs Start/End\n"
	      "per phase and prints a side-by-side table with ratios to the first\n"
	      "target. The copies are removed afterwards.\n\n"
	      "  --target DIR            folder to measure (repeat for several, up to 16)\n"
	      "  --source DIR            copy this folder instead of generated data: its\n"
	      "                          largest file is the large phase, the rest the small\n"
	      "  --large SIZE            large file size (default 1G; 0 skips the phase)\n"
	      "  --small-count N         number of small files (default 10000; 0 skips)\n"
	      "  --small-total SIZE      total size of the small files (default 1G)\n"
	      "  --runs N                repeat each phase N times, report the median (1)\n"
	      "  --durability MODE       fsync: fsync every file before close (default,\n"
	      "                          the only way that reaches a FUSE daemon);\n"
	      "                          syncfs: one syncfs() per target at phase end\n"
	      "  --replicated-state DIR  the target is a twinfs mount: a phase also waits\n"
	      "                          for 'twinfs sync --state DIR' (peer acknowledged)\n"
	      "  --dataset-dir DIR       where to generate the dataset (default $TMPDIR or\n"
	      "                          /var/tmp; best on another disk than the targets)\n"
	      "  --keep-dataset          do not delete the generated dataset\n"
	      "  --seed N                dataset seed (same seed, same files)\n"
	      "  --json FILE  --csv FILE  --report DIR   machine-readable results;\n"
	      "                          --report writes results.json, results.csv, report.html\n"
	      "  --progress WHEN         auto (default: when stderr is a terminal), always,\n"
	      "                          never: a line with bytes, rate, ETA and files left\n"
	      "  -v, -q                  more or less logging\n"
	      "  -h, --help              show this help\n\n"
	      "Sizes: 7.71G, 1.94GB, 64KiB, 100M (K/M/G and KiB = 1024, kB/MB/GB = 1000).\n"
	      "MB/s is bytes / seconds / 1e6. Before each phase the source files are\n"
	      "dropped from the page cache (posix_fadvise DONTNEED) so reads come from disk.\n"
	      "The results (JSON, report) open with the run: version, command line, every\n"
	      "parameter, host, and each target's filesystem, mount options and free space.\n\n"
	      "Exit status: 0 done; 64 usage; 66 a target is missing; 73 (EX_CANTCREAT) a\n"
	      "target or the dataset folder has less free space than the data needs (checked\n"
	      "before anything is written, both numbers printed); 74 an IO error; 130 Ctrl-C.\n",
	      out);
}

static void bench_io_usage(FILE *out)
{
	size_t n;
	const struct io_pattern *p = io_patterns(&n);

	fputs("Usage: twinfs bench io --target DIR [--target DIR]... [OPTIONS]\n"
	      "Runs IO patterns on test files laid out in each target (one file per job)\n"
	      "and reports IOPS, MB/s, latency p50/p99/p99.9 and CPU use.\n\n"
	      "  --target DIR       folder to measure (repeat for several)\n"
	      "  --pattern NAME     repeatable; default: all of\n                    ", out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %s", p[i].name);
	fputs("\n"
	      "  --bs SIZE --read-pct N --random-pct N\n"
	      "                     a custom access spec (iometer style, e.g. 4K; 70% read;\n"
	      "                     80% random); runs besides any --pattern\n"
	      "  --jobs N           threads, each with its own file (default 1)\n"
	      "  --iodepth N        IOs in flight per job; > 1 uses io_uring (default 1)\n"
	      "  --size SIZE        test file size per job (default 256M)\n"
	      "  --runtime SEC      seconds per pattern (default 10)\n"
	      "  --direct           O_DIRECT (buffered with a message if refused)\n"
	      "  --cached           measure the page cache: each job reads its file once\n"
	      "                     before the run and nothing is dropped\n"
	      "  --progress WHEN    auto (stderr is a terminal), always or never\n"
	      "  --json FILE  --csv FILE  --report DIR   machine-readable results\n"
	      "  -h, --help         show this help\n\n"
	      "Without --direct or --cached, IO is buffered and the test files are dropped\n"
	      "from the page cache as fio does by default (invalidate=1): after they are\n"
	      "laid out, when each job starts (after an fdatasync, since files are reused\n"
	      "across patterns) and at the end of each sequential pass. A random run still\n"
	      "fills the cache as it goes; a warning says when the files fit in memory.\n"
	      "The JSON says per result which of the three it was (page_cache).\n", out);
}

static void bench_sweep_usage(FILE *out)
{
	fputs("Usage: twinfs bench sweep --target DIR --pattern NAME [OPTIONS]\n"
	      "Runs one pattern with an increasing number of threads on one shared test\n"
	      "file (like the diskspd thread-count script), one line per count, and names\n"
	      "the knee: the first count that gains less than 5% IOPS over the previous.\n\n"
	      "  --target DIR       folder to measure\n"
	      "  --pattern NAME     pattern (default 4k-randread), or --bs/--read-pct/--random-pct\n"
	      "  --threads SPEC     1..32 (doubling: 1 2 4 8 16 32) or a list 1,2,4,8\n"
	      "                     (default 1..32)\n"
	      "  --iodepth N        IOs in flight per thread (default 1)\n"
	      "  --size SIZE        shared test file size (default 256M)\n"
	      "  --runtime SEC      seconds per thread count (default 5)\n"
	      "  --direct           O_DIRECT\n"
	      "  --cached           measure the page cache (see 'bench io --help')\n"
	      "  --progress WHEN    auto (stderr is a terminal), always or never\n"
	      "  --json FILE  --csv FILE  --report DIR   machine-readable results\n"
	      "  -h, --help         show this help\n", out);
}

/* Shared option parsing helpers: print the usage error and return 64. */
static int bench_parse_size(const char *cmd, const char *opt, const char *arg,
			    uint64_t *out)
{
	int rc = size_parse(arg, out);

	if (rc)
		return cli_usage_error(cmd, "%s '%s': not a size (try 1G, 100M, 64KiB)",
				       opt, arg);
	return 0;
}

static int bench_parse_int(const char *cmd, const char *opt, const char *arg,
			   long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi)
		return cli_usage_error(cmd, "%s '%s': expected a whole number from %ld to %ld",
				       opt, arg, lo, hi);
	*out = (int)v;
	return 0;
}

static int bench_parse_seconds(const char *cmd, const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 86400)
		return cli_usage_error(cmd, "--runtime '%s': expected seconds (0 < SEC <= 86400)",
				       arg);
	*out = v;
	return 0;
}

/* Every target must be an existing folder; nothing is created for them. */
static int bench_check_targets(const char *cmd, const char *const *t, size_t n)
{
	struct stat st;

	if (n == 0)
		return cli_usage_error(cmd, "--target DIR is required");
	for (size_t i = 0; i < n; i++) {
		int bad = stat(t[i], &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

		if (bad) {
			fprintf(stderr, "twinfs bench %s: target '%s' is not a folder (%s); "
				"create it or mount it first\n", cmd, t[i], strerror(bad));
			return EX_NOINPUT;
		}
		if (access(t[i], W_OK | X_OK) < 0) {
			fprintf(stderr, "twinfs bench %s: target '%s' is not writable (%s)\n",
				cmd, t[i], strerror(errno));
			return EX_NOPERM;
		}
	}
	return 0;
}

static void bench_dataset_progress(uint64_t done, uint64_t total, void *arg)
{
	progress_update(arg, done);
}

/* The exit code once a command has cleaned up: 130 after Ctrl-C. */
static int bench_exit(int rc)
{
	if (stop_requested()) {
		fprintf(stderr, "twinfs bench: interrupted; the files it wrote were removed\n");
		return 128 + 2;
	}
	return rc ? cli_exit_code(rc) : EX_OK;
}

enum {
	OPT_TARGET = 256, OPT_SOURCE, OPT_LARGE, OPT_SMALL_COUNT, OPT_SMALL_TOTAL,
	OPT_RUNS, OPT_REPLICATED, OPT_JSON, OPT_CSV, OPT_REPORT, OPT_KEEP,
	OPT_DATASET_DIR, OPT_DURABILITY, OPT_SEED, OPT_PATTERN, OPT_JOBS,
	OPT_IODEPTH, OPT_SIZE, OPT_RUNTIME, OPT_DIRECT, OPT_BS, OPT_READ_PCT,
	OPT_RANDOM_PCT, OPT_THREADS, OPT_PROGRESS, OPT_CACHED,
};

static int bench_progress_mode(const char *cmd, const char *arg, int *enabled)
{
	if (progress_mode(arg, enabled))
		return cli_usage_error(cmd, "--progress '%s': use auto, always or never", arg);
	return 0;
}

/* `bench copy` options once parsed. */
struct bench_copy_args {
	const char *targets[BENCH_MAX_TARGETS];
	size_t nt;
	const char *source, *json, *csv, *report, *dataset_dir, *progress;
	uint64_t large, small_total, seed;
	int small_count, keep;
	struct copy_opts o;
};

/* 0, or the exit code for a usage error (-1: --help was printed). */
static int bench_copy_parse(int argc, char **argv, struct bench_copy_args *a)
{
	static const struct option longopts[] = {
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "large", required_argument, NULL, OPT_LARGE },
		{ "small-count", required_argument, NULL, OPT_SMALL_COUNT },
		{ "small-total", required_argument, NULL, OPT_SMALL_TOTAL },
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "replicated-state", required_argument, NULL, OPT_REPLICATED },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "keep-dataset", no_argument, NULL, OPT_KEEP },
		{ "dataset-dir", required_argument, NULL, OPT_DATASET_DIR },
		{ "durability", required_argument, NULL, OPT_DURABILITY },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "progress", required_argument, NULL, OPT_PROGRESS },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "bench copy";
	int verbose = 0, quiet = 0, c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hvq", longopts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case OPT_TARGET:
			if (a->nt == BENCH_MAX_TARGETS)
				return cli_usage_error(cmd, "at most %d --target",
						       BENCH_MAX_TARGETS);
			a->targets[a->nt++] = optarg;
			break;
		case OPT_SOURCE: a->source = optarg; break;
		case OPT_LARGE: rc = bench_parse_size(cmd, "--large", optarg, &a->large); break;
		case OPT_SMALL_TOTAL:
			rc = bench_parse_size(cmd, "--small-total", optarg, &a->small_total);
			break;
		case OPT_SMALL_COUNT:
			rc = bench_parse_int(cmd, "--small-count", optarg, 0, 10000000,
					     &a->small_count);
			break;
		case OPT_RUNS:
			rc = bench_parse_int(cmd, "--runs", optarg, 1, 1000, &a->o.runs);
			break;
		case OPT_REPLICATED: a->o.replicated_state = optarg; break;
		case OPT_JSON: a->json = optarg; break;
		case OPT_CSV: a->csv = optarg; break;
		case OPT_REPORT: a->report = optarg; break;
		case OPT_KEEP: a->keep = 1; break;
		case OPT_DATASET_DIR: a->dataset_dir = optarg; break;
		case OPT_PROGRESS: a->progress = optarg; break;
		case OPT_DURABILITY:
			if (strcmp(optarg, "fsync") == 0)
				a->o.durability = COPY_FSYNC;
			else if (strcmp(optarg, "syncfs") == 0)
				a->o.durability = COPY_SYNCFS;
			else
				return cli_usage_error(cmd, "--durability '%s': use fsync or syncfs",
						       optarg);
			break;
		case OPT_SEED: {
			char *end;

			errno = 0;
			a->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end)
				return cli_usage_error(cmd, "--seed '%s': not a number", optarg);
			break;
		}
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h': bench_copy_usage(stdout); return -1;
		default:
			return cli_usage_error(cmd, "unknown or incomplete option");
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	log_adjust(verbose, quiet);
	if (a->source && (a->dataset_dir || a->keep))
		return cli_usage_error(cmd, "--dataset-dir and --keep-dataset apply to "
				       "generated data, not to --source");
	if (!a->source && a->large == 0 && a->small_count == 0)
		return cli_usage_error(cmd, "--large 0 and --small-count 0 leave nothing "
				       "to copy");
	return 0;
}

/* Every parameter of a copy run, for the result files. */
static void bench_copy_describe(struct runinfo *ri, const struct bench_copy_args *a,
				const struct dataset *ds)
{
	runinfo_param_str(ri, "benchmark", "copy");
	runinfo_param_str(ri, "source", a->source ? a->source : "generated");
	if (!a->source) {
		runinfo_param_str(ri, "dataset_dir", a->dataset_dir);
		runinfo_param_uint(ri, "seed", a->seed);
		runinfo_param_bool(ri, "keep_dataset", a->keep);
	}
	runinfo_param_uint(ri, "large_bytes", ds->has_large ? ds->large.size : 0);
	runinfo_param_uint(ri, "small_count", ds->nsmall);
	runinfo_param_uint(ri, "small_total_bytes", ds->small_bytes);
	runinfo_param_uint(ri, "small_dirs", ds->ndirs);
	runinfo_param_int(ri, "runs", a->o.runs);
	runinfo_param_str(ri, "durability",
			  a->o.durability == COPY_SYNCFS ? "syncfs" : "fsync");
	runinfo_param_str(ri, "replicated_state",
			  a->o.replicated_state ? a->o.replicated_state : "");
	runinfo_param_uint(ri, "copy_buffer_bytes", COPY_BUFSIZE);
	runinfo_param_str(ri, "source_cache", "dropped before each phase (posix_fadvise DONTNEED)");
}

/*
 * Free space. A copy that runs out of space part way tells nothing and
 * may leave a replicated pair with a journal to drain, so the dataset's
 * size in whole blocks is checked against each target (and, for a
 * generated dataset, against its folder, twice over where a target shares
 * that filesystem) before anything is written. Exit 73, EX_CANTCREAT:
 * the output cannot be created.
 */
static int bench_copy_check_space(const struct bench_copy_args *a,
				  const struct dataset *ds, const struct runinfo *ri)
{
	char need_s[32], free_s[32];
	int bad = 0;

	for (size_t i = 0; i < ri->ntargets; i++) {
		const struct runinfo_target *t = &ri->targets[i];
		uint64_t need = dataset_space_needed(ds, t->block_size);
		int shared = !a->source && tree_same_fs(a->dataset_dir, t->path) == 1;

		if (shared)
			need *= 2;
		if (need <= t->free_bytes)
			continue;
		fprintf(stderr, "twinfs bench copy: target '%s' has %s free, the copy needs "
			"%s%s; free some space or lower --large/--small-total\n", t->path,
			size_format_iec(t->free_bytes, free_s, sizeof free_s),
			size_format_iec(need, need_s, sizeof need_s),
			shared ? " (the dataset is generated on the same "
			"filesystem, so twice its size)" : "");
		bad = 1;
	}
	if (!a->source) {
		struct runinfo_target d = { 0 };
		struct statvfs sv;

		if (statvfs(a->dataset_dir, &sv) < 0) {
			fprintf(stderr, "twinfs bench copy: cannot use --dataset-dir '%s': %s\n",
				a->dataset_dir, strerror(errno));
			return EX_CANTCREAT;
		}
		d.block_size = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
		d.free_bytes = (uint64_t)sv.f_bavail * d.block_size;
		if (dataset_space_needed(ds, d.block_size) > d.free_bytes) {
			fprintf(stderr, "twinfs bench copy: dataset folder '%s' has %s free, the "
				"dataset needs %s; use --dataset-dir on a larger filesystem\n",
				a->dataset_dir,
				size_format_iec(d.free_bytes, free_s, sizeof free_s),
				size_format_iec(dataset_space_needed(ds, d.block_size), need_s,
						sizeof need_s));
			bad = 1;
		}
	}
	return bad ? EX_CANTCREAT : 0;
}

static int bench_copy_dataset(struct bench_copy_args *a, struct dataset *ds)
{
	struct progress p;
	char x[32], y[32];
	int rc;

	printf("Generating the dataset in %s: %s large file, %d small files "
	       "totalling %s\n", a->dataset_dir,
	       a->large ? size_format_iec(a->large, x, sizeof x) : "no",
	       a->small_count,
	       size_format_iec(a->small_count ? a->small_total : 0, y, sizeof y));
	fflush(stdout);
	progress_init(&p, stderr, a->o.progress, "generating dataset",
		      a->large + a->small_total, 0);
	rc = dataset_write(ds, a->dataset_dir, bench_dataset_progress, &p);
	progress_done(&p);
	return rc;
}

static int bench_copy(int argc, char **argv)
{
	struct bench_copy_args a = {
		.large = 1ull << 30, .small_total = 1ull << 30,
		.seed = DATASET_DEFAULT_SEED, .small_count = 10000,
		.o = { .runs = 1, .durability = COPY_FSYNC,
		       .self_exe = "/proc/self/exe", .log = stdout },
	};
	struct result_set results = { .command = "copy" };
	struct runinfo *ri = calloc(1, sizeof(*ri));
	struct dataset ds;
	int rc;

	if (!ri)
		return EX_OSERR;
	rc = bench_copy_parse(argc, argv, &a);
	if (rc)
		goto out_ri;
	if ((rc = bench_check_targets("copy", a.targets, a.nt)))
		goto out_ri;
	if ((rc = bench_progress_mode("bench copy", a.progress, &a.o.progress)))
		goto out_ri;
	runinfo_init(ri, bench_argc, bench_argv);
	for (size_t i = 0; i < a.nt; i++)
		runinfo_add_target(ri, a.targets[i]);
	a.o.targets = a.targets;
	a.o.ntargets = a.nt;
	if (a.source) {
		rc = dataset_scan(&ds, a.source);
		if (rc) {
			fprintf(stderr, "twinfs bench copy: cannot use --source '%s': %s\n",
				a.source, rc == -ENOENT ? "it holds no regular file" :
				strerror(-rc));
			rc = cli_exit_code(rc);
			goto out_ri;
		}
	} else {
		if (!a.dataset_dir)
			a.dataset_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
		rc = dataset_plan(&ds, a.seed, a.large, (uint32_t)a.small_count,
				  a.small_total);
		if (rc) {
			rc = cli_exit_code(rc);
			goto out_ri;
		}
	}
	bench_copy_describe(ri, &a, &ds);
	if ((rc = bench_copy_check_space(&a, &ds, ri))) {
		dataset_free(&ds);
		goto out_ri;
	}
	if (!a.source && (rc = bench_copy_dataset(&a, &ds)))
		goto out_dataset;
	for (size_t i = 0; i < a.nt; i++)
		if (tree_same_fs(ds.root, a.targets[i]) == 1)
			printf("Note: the dataset (%s) and target %s share a filesystem; "
			       "reads and writes compete for the same disk.\n",
			       ds.root, a.targets[i]);
	results.run = ri;
	rc = copy_run(&ds, &a.o, &results);
	runinfo_finish(ri);
	if (rc == 0) {
		report_print_table(stdout, &results);
		rc = report_write_outputs(&results, a.json, a.csv, a.report);
	}
out_dataset:
	if (a.keep && ds.generated)
		printf("Dataset kept in %s\n", ds.root);
	else
		dataset_remove(&ds);
	dataset_free(&ds);
	result_set_free(&results);
	rc = bench_exit(rc);
out_ri:
	free(ri);
	return rc < 0 ? EX_OK : rc;
}

/* Options shared by `bench io` and `bench sweep`. */
struct bench_io_args {
	const char *targets[BENCH_MAX_TARGETS];
	size_t nt;
	struct io_pattern pats[BENCH_MAX_PATTERNS];
	size_t np;
	uint64_t bs, size;
	int read_pct, random_pct, custom;
	const char *json, *csv, *report, *threads, *progress;
	struct io_opts o;
};

static int bench_io_parse(const char *cmd, int argc, char **argv,
			  struct bench_io_args *a, void (*usage)(FILE *))
{
	static const struct option longopts[] = {
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "pattern", required_argument, NULL, OPT_PATTERN },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "iodepth", required_argument, NULL, OPT_IODEPTH },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "runtime", required_argument, NULL, OPT_RUNTIME },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "cached", no_argument, NULL, OPT_CACHED },
		{ "progress", required_argument, NULL, OPT_PROGRESS },
		{ "bs", required_argument, NULL, OPT_BS },
		{ "read-pct", required_argument, NULL, OPT_READ_PCT },
		{ "random-pct", required_argument, NULL, OPT_RANDOM_PCT },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc, verbose = 0, quiet = 0, sweep = strcmp(cmd, "bench sweep") == 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hvq", longopts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case OPT_TARGET:
			if (a->nt == BENCH_MAX_TARGETS || (sweep && a->nt == 1))
				return cli_usage_error(cmd, "too many --target");
			a->targets[a->nt++] = optarg;
			break;
		case OPT_PATTERN:
			if (a->np == BENCH_MAX_PATTERNS || (sweep && a->np == 1))
				return cli_usage_error(cmd, "too many --pattern");
			if (io_pattern_find(optarg, &a->pats[a->np]) < 0)
				return cli_usage_error(cmd, "--pattern '%s': unknown; see --help "
						       "for the list", optarg);
			a->np++;
			break;
		case OPT_JOBS:
			if (sweep)
				return cli_usage_error(cmd, "use --threads, not --jobs");
			rc = bench_parse_int(cmd, "--jobs", optarg, 1, 256, &a->o.jobs);
			break;
		case OPT_IODEPTH:
			rc = bench_parse_int(cmd, "--iodepth", optarg, 1, 1024, &a->o.iodepth);
			break;
		case OPT_SIZE: rc = bench_parse_size(cmd, "--size", optarg, &a->size); break;
		case OPT_RUNTIME: rc = bench_parse_seconds(cmd, optarg, &a->o.runtime); break;
		case OPT_DIRECT: a->o.direct = 1; break;
		case OPT_CACHED: a->o.cached = 1; break;
		case OPT_PROGRESS: a->progress = optarg; break;
		case OPT_BS:
			rc = bench_parse_size(cmd, "--bs", optarg, &a->bs);
			if (!rc && (a->bs == 0 || a->bs > (64u << 20)))
				return cli_usage_error(cmd, "--bs '%s': from 1 byte to 64MiB", optarg);
			a->custom = 1;
			break;
		case OPT_READ_PCT:
			rc = bench_parse_int(cmd, "--read-pct", optarg, 0, 100, &a->read_pct);
			a->custom = 1;
			break;
		case OPT_RANDOM_PCT:
			rc = bench_parse_int(cmd, "--random-pct", optarg, 0, 100, &a->random_pct);
			a->custom = 1;
			break;
		case OPT_THREADS:
			if (!sweep)
				return cli_usage_error(cmd, "--threads is for 'bench sweep'; use --jobs");
			a->threads = optarg;
			break;
		case OPT_JSON: a->json = optarg; break;
		case OPT_CSV: a->csv = optarg; break;
		case OPT_REPORT: a->report = optarg; break;
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h': usage(stdout); return -1;
		default:
			return cli_usage_error(cmd, "unknown or incomplete option");
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	log_adjust(verbose, quiet);
	if (a->custom) {
		struct io_pattern *p;
		char bs[32];

		if (a->np == BENCH_MAX_PATTERNS || (sweep && a->np == 1))
			return cli_usage_error(cmd, "--bs/--read-pct/--random-pct make one more "
					       "pattern; too many patterns");
		if (a->bs == 0)
			a->bs = 4096;
		p = &a->pats[a->np++];
		p->bs = (uint32_t)a->bs;
		p->read_pct = a->read_pct;
		p->random_pct = a->random_pct;
		size_format_iec(a->bs, bs, sizeof bs);
		for (char *s = bs; *s; s++)	/* "4.00 KiB" -> "4.00KiB" */
			if (*s == ' ')
				memmove(s, s + 1, strlen(s));
		snprintf(p->name, sizeof p->name, "%s-r%d-rnd%d", bs, p->read_pct,
			 p->random_pct);
	}
	if (a->o.direct && a->o.cached)
		return cli_usage_error(cmd, "--direct bypasses the page cache that --cached "
				       "measures; pick one");
	if ((rc = bench_progress_mode(cmd, a->progress, &a->o.progress)))
		return rc;
	if (a->o.direct)
		for (size_t i = 0; i < a->np; i++)
			if (a->pats[i].bs % 512)
				return cli_usage_error(cmd, "--direct needs a block size that is a "
						       "multiple of 512 (pattern %s)", a->pats[i].name);
	return 0;
}

/* Every parameter of an io or sweep run, for the result files. */
static void bench_io_describe(struct runinfo *ri, const char *what,
			      const struct bench_io_args *a)
{
	char pats[512] = "";

	runinfo_param_str(ri, "benchmark", what);
	for (size_t i = 0; i < a->np; i++)
		snprintf(pats + strlen(pats), sizeof pats - strlen(pats), "%s%s",
			 i ? "," : "", a->pats[i].name);
	runinfo_param_str(ri, "patterns", pats);
	if (a->custom) {
		runinfo_param_uint(ri, "bs", a->bs);
		runinfo_param_int(ri, "read_pct", a->read_pct);
		runinfo_param_int(ri, "random_pct", a->random_pct);
	}
	if (a->threads)
		runinfo_param_str(ri, "threads", a->threads);
	else
		runinfo_param_int(ri, "jobs", a->o.jobs);
	runinfo_param_int(ri, "iodepth", a->o.iodepth);
	runinfo_param_str(ri, "engine", a->o.iodepth > 1 ? "io_uring" : "psync");
	runinfo_param_uint(ri, "size_bytes", a->size);
	runinfo_param_str(ri, "files", a->threads ? "one shared" : "one per job");
	runinfo_param_double(ri, "runtime_s", a->o.runtime);
	runinfo_param_bool(ri, "direct", a->o.direct);
	runinfo_param_bool(ri, "cached", a->o.cached);
	runinfo_param_str(ri, "page_cache", a->o.direct ? "bypassed (O_DIRECT)" :
			  a->o.cached ? "kept warm (--cached)" :
			  "dropped after layout, before each job and each pass "
			  "(fio invalidate=1)");
	runinfo_param_uint(ri, "seed", a->o.seed);
}

/* A buffered run whose files fit in memory ends up reading the cache. */
static void bench_io_warn_cache(const char *cmd, const struct bench_io_args *a,
				uint64_t working_set, uint64_t mem_available)
{
	char ws[32], mem[32];

	if (a->o.direct || a->o.cached || !mem_available || working_set >= mem_available)
		return;
	fprintf(stderr, "twinfs %s: warning: buffered IO on %s of test files, which fit "
		"in the %s of available memory: the files are dropped from the page cache "
		"before each job (as fio does), but random IO refills it as the run goes, "
		"so later IOs measure memory; use --direct, or a --size whose total is "
		"above memory, to measure the target\n", cmd,
		size_format_iec(working_set, ws, sizeof ws),
		size_format_iec(mem_available, mem, sizeof mem));
}

static int bench_io(int argc, char **argv)
{
	struct bench_io_args a = { .size = 256ull << 20, .read_pct = 100,
				   .random_pct = 100,
				   .o = { .jobs = 1, .iodepth = 1, .runtime = 10,
					  .seed = 0x10be1c4 } };
	struct result_set results = { .command = "io" };
	struct runinfo *ri;
	int rc;

	rc = bench_io_parse("bench io", argc, argv, &a, bench_io_usage);
	if (rc)
		return rc < 0 ? EX_OK : rc;
	if ((rc = bench_check_targets("io", a.targets, a.nt)))
		return rc;
	if (a.np == 0) {
		size_t n;
		const struct io_pattern *all = io_patterns(&n);

		for (size_t i = 0; i < n; i++)
			a.pats[a.np++] = all[i];
	}
	if (!(ri = calloc(1, sizeof(*ri))))
		return EX_OSERR;
	runinfo_init(ri, bench_argc, bench_argv);
	for (size_t t = 0; t < a.nt; t++)
		runinfo_add_target(ri, a.targets[t]);
	bench_io_describe(ri, "io", &a);
	results.run = ri;
	bench_io_warn_cache("bench io", &a, a.size * (uint64_t)a.o.jobs, ri->mem_available);
	for (size_t t = 0; t < a.nt && !rc; t++) {
		struct io_files files;
		char sz[32];

		printf("== target %zu/%zu: %s (%d job%s x %s, iodepth %d, %.0f s per pattern)\n",
		       t + 1, a.nt, a.targets[t], a.o.jobs, a.o.jobs == 1 ? "" : "s",
		       size_format_iec(a.size, sz, sizeof sz), a.o.iodepth, a.o.runtime);
		printf("%-14s %11s %-26s %10s %10s %10s %6s\n", "pattern", "IOPS",
		       "throughput", "lat p50", "p99", "p99.9", "CPU%");
		fflush(stdout);
		rc = io_files_layout(&files, a.targets[t], a.o.jobs, a.size, a.o.progress);
		if (rc)
			break;
		for (size_t i = 0; i < a.np && !rc; i++) {
			struct result *r = result_set_add(&results, RESULT_IO, a.targets[t],
							  a.pats[i].name);
			if (!r) {
				rc = -ENOMEM;
				break;
			}
			a.o.pat = a.pats[i];
			rc = io_run(&files, &a.o, r);
			if (rc == 0) {
				char fig[256];

				report_io_figures(fig, sizeof fig, r);
				printf("%-14s %s\n", r->name, fig);
			}
			fflush(stdout);
		}
		io_files_remove(&files);
	}
	runinfo_finish(ri);
	if (rc == 0) {
		report_print_table(stdout, &results);
		rc = report_write_outputs(&results, a.json, a.csv, a.report);
	}
	result_set_free(&results);
	free(ri);
	return bench_exit(rc);
}

static int bench_sweep(int argc, char **argv)
{
	struct bench_io_args a = { .size = 256ull << 20, .read_pct = 100,
				   .random_pct = 100, .threads = "1..32",
				   .o = { .jobs = 1, .iodepth = 1, .runtime = 5,
					  .seed = 0x5eeb } };
	struct result_set results = { .command = "sweep" };
	int counts[SWEEP_MAX_COUNTS], n, rc;
	struct runinfo *ri;

	rc = bench_io_parse("bench sweep", argc, argv, &a, bench_sweep_usage);
	if (rc)
		return rc < 0 ? EX_OK : rc;
	if ((rc = bench_check_targets("sweep", a.targets, a.nt)))
		return rc;
	n = sweep_parse_threads(a.threads, counts, SWEEP_MAX_COUNTS);
	if (n < 0)
		return cli_usage_error("bench sweep", "--threads '%s': use LO..HI (1..32) "
				       "or an ascending list (1,2,4,8)", a.threads);
	if (a.np == 0)
		io_pattern_find("4k-randread", &a.pats[a.np++]);
	a.o.pat = a.pats[0];
	if (!(ri = calloc(1, sizeof(*ri))))
		return EX_OSERR;
	runinfo_init(ri, bench_argc, bench_argv);
	runinfo_add_target(ri, a.targets[0]);
	bench_io_describe(ri, "sweep", &a);
	results.run = ri;
	bench_io_warn_cache("bench sweep", &a, a.size, ri->mem_available);
	printf("== sweep %s on %s, iodepth %d, %.0f s per count\n", a.o.pat.name,
	       a.targets[0], a.o.iodepth, a.o.runtime);
	fflush(stdout);
	rc = sweep_run(a.targets[0], a.size, &a.o, counts, (size_t)n, stdout, &results);
	runinfo_finish(ri);
	if (rc == 0)
		rc = report_write_outputs(&results, a.json, a.csv, a.report);
	result_set_free(&results);
	free(ri);
	return bench_exit(rc);
}

int bench_cmd_main(int argc, char **argv)
{
	bench_argc = argc;
	bench_argv = argv;
	stop_install();
	if (argc < 2) {
		bench_usage(stderr);
		return EX_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		bench_usage(stdout);
		return EX_OK;
	}
	if (strcmp(argv[1], "copy") == 0)
		return bench_copy(argc - 1, argv + 1);
	if (strcmp(argv[1], "io") == 0)
		return bench_io(argc - 1, argv + 1);
	if (strcmp(argv[1], "sweep") == 0)
		return bench_sweep(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return cli_usage_error("bench", "unknown option '%s'", argv[1]);
	return cli_usage_error("bench", "unknown benchmark '%s' (copy, io or sweep)",
			       argv[1]);
}
