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
#include <unistd.h>

#include "bench/copy.h"
#include "bench/dataset.h"
#include "bench/io.h"
#include "bench/progress.h"
#include "bench/report.h"
#include "bench/stop.h"
#include "bench/sweep.h"
#include "bench/tree.h"
#include "common/cli.h"
#include "common/log.h"
#include "common/size.h"

#define BENCH_MAX_TARGETS 16
#define BENCH_MAX_PATTERNS 32

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
	      "  -v, -q                  more or less logging\n"
	      "  -h, --help              show this help\n\n"
	      "Sizes: 7.71G, 1.94GB, 64KiB, 100M (K/M/G and KiB = 1024, kB/MB/GB = 1000).\n"
	      "MB/s is bytes / seconds / 1e6. Before each phase the source files are\n"
	      "dropped from the page cache (posix_fadvise DONTNEED) so reads come from disk.\n",
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
	      "  --json FILE  --csv FILE  --report DIR   machine-readable results\n"
	      "  -h, --help         show this help\n", out);
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
	OPT_RANDOM_PCT, OPT_THREADS,
};

static int bench_copy(int argc, char **argv)
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
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	const char *targets[BENCH_MAX_TARGETS];
	const char *source = NULL, *json = NULL, *csv = NULL, *report = NULL;
	const char *dataset_dir = NULL;
	uint64_t large = 1ull << 30, small_total = 1ull << 30, seed = DATASET_DEFAULT_SEED;
	int small_count = 10000, keep = 0, verbose = 0, quiet = 0, c, rc;
	struct copy_opts o = { .runs = 1, .durability = COPY_FSYNC,
			       .self_exe = "/proc/self/exe", .log = stdout };
	struct result_set results = { .command = "copy" };
	struct dataset ds;
	size_t nt = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hvq", longopts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case OPT_TARGET:
			if (nt == BENCH_MAX_TARGETS)
				return cli_usage_error("bench copy", "at most %d --target",
						       BENCH_MAX_TARGETS);
			targets[nt++] = optarg;
			break;
		case OPT_SOURCE: source = optarg; break;
		case OPT_LARGE: rc = bench_parse_size("bench copy", "--large", optarg, &large); break;
		case OPT_SMALL_TOTAL:
			rc = bench_parse_size("bench copy", "--small-total", optarg, &small_total);
			break;
		case OPT_SMALL_COUNT:
			rc = bench_parse_int("bench copy", "--small-count", optarg, 0,
					     10000000, &small_count);
			break;
		case OPT_RUNS:
			rc = bench_parse_int("bench copy", "--runs", optarg, 1, 1000, &o.runs);
			break;
		case OPT_REPLICATED: o.replicated_state = optarg; break;
		case OPT_JSON: json = optarg; break;
		case OPT_CSV: csv = optarg; break;
		case OPT_REPORT: report = optarg; break;
		case OPT_KEEP: keep = 1; break;
		case OPT_DATASET_DIR: dataset_dir = optarg; break;
		case OPT_DURABILITY:
			if (strcmp(optarg, "fsync") == 0)
				o.durability = COPY_FSYNC;
			else if (strcmp(optarg, "syncfs") == 0)
				o.durability = COPY_SYNCFS;
			else
				return cli_usage_error("bench copy",
						       "--durability '%s': use fsync or syncfs", optarg);
			break;
		case OPT_SEED: {
			char *end;

			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end)
				return cli_usage_error("bench copy", "--seed '%s': not a number",
						       optarg);
			break;
		}
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h': bench_copy_usage(stdout); return EX_OK;
		default:
			return cli_usage_error("bench copy", "unknown or incomplete option");
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error("bench copy", "unexpected argument '%s'", argv[optind]);
	log_adjust(verbose, quiet);
	if ((rc = bench_check_targets("copy", targets, nt)))
		return rc;
	if (source && (dataset_dir || keep))
		return cli_usage_error("bench copy",
				       "--dataset-dir and --keep-dataset apply to generated data, "
				       "not to --source");
	o.targets = targets;
	o.ntargets = nt;
	o.progress = isatty(STDOUT_FILENO);

	if (source) {
		rc = dataset_scan(&ds, source);
		if (rc) {
			fprintf(stderr, "twinfs bench copy: cannot use --source '%s': %s\n",
				source, rc == -ENOENT ? "it holds no regular file" : strerror(-rc));
			return cli_exit_code(rc);
		}
	} else {
		struct progress p;
		char a[32], b[32];

		if (!dataset_dir)
			dataset_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
		rc = dataset_plan(&ds, seed, large, (uint32_t)small_count, small_total);
		if (rc)
			return cli_exit_code(rc);
		if (large == 0 && small_count == 0)
			return cli_usage_error("bench copy", "--large 0 and --small-count 0 "
					       "leave nothing to copy");
		printf("Generating the dataset in %s: %s large file, %d small files "
		       "totalling %s\n", dataset_dir,
		       large ? size_format_iec(large, a, sizeof a) : "no",
		       small_count, size_format_iec(small_count ? small_total : 0, b, sizeof b));
		fflush(stdout);
		progress_init(&p, stdout, o.progress, "generating dataset",
			      large + small_total);
		rc = dataset_write(&ds, dataset_dir, bench_dataset_progress, &p);
		progress_done(&p);
		if (rc)
			goto out_dataset;
	}
	for (size_t i = 0; i < nt; i++)
		if (tree_same_fs(ds.root, targets[i]) == 1)
			printf("Note: the dataset (%s) and target %s share a filesystem; "
			       "reads and writes compete for the same disk.\n",
			       ds.root, targets[i]);
	rc = copy_run(&ds, &o, &results);
	if (rc == 0) {
		report_print_table(stdout, &results);
		rc = report_write_outputs(&results, json, csv, report);
	}
out_dataset:
	if (keep && ds.generated)
		printf("Dataset kept in %s\n", ds.root);
	else
		dataset_remove(&ds);
	dataset_free(&ds);
	result_set_free(&results);
	return bench_exit(rc);
}

/* Options shared by `bench io` and `bench sweep`. */
struct bench_io_args {
	const char *targets[BENCH_MAX_TARGETS];
	size_t nt;
	struct io_pattern pats[BENCH_MAX_PATTERNS];
	size_t np;
	uint64_t bs, size;
	int read_pct, random_pct, custom;
	const char *json, *csv, *report, *threads;
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
	if (a->o.direct)
		for (size_t i = 0; i < a->np; i++)
			if (a->pats[i].bs % 512)
				return cli_usage_error(cmd, "--direct needs a block size that is a "
						       "multiple of 512 (pattern %s)", a->pats[i].name);
	return 0;
}

static int bench_io(int argc, char **argv)
{
	struct bench_io_args a = { .size = 256ull << 20, .read_pct = 100,
				   .random_pct = 100,
				   .o = { .jobs = 1, .iodepth = 1, .runtime = 10,
					  .seed = 0x10be1c4 } };
	struct result_set results = { .command = "io" };
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
	a.o.progress = isatty(STDOUT_FILENO);
	for (size_t t = 0; t < a.nt && !rc; t++) {
		struct io_files files;
		char sz[32];

		printf("== target %zu/%zu: %s (%d job%s x %s, iodepth %d, %.0f s per pattern)\n",
		       t + 1, a.nt, a.targets[t], a.o.jobs, a.o.jobs == 1 ? "" : "s",
		       size_format_iec(a.size, sz, sizeof sz), a.o.iodepth, a.o.runtime);
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
			if (rc == 0)
				printf("%-14s %10.0f IOPS  %8.1f MB/s  p99 %.1f us\n", r->name,
				       r->iops, result_mb_per_s(r), r->lat.p99);
			fflush(stdout);
		}
		io_files_remove(&files);
	}
	if (rc == 0) {
		report_print_table(stdout, &results);
		rc = report_write_outputs(&results, a.json, a.csv, a.report);
	}
	result_set_free(&results);
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
	a.o.progress = isatty(STDOUT_FILENO);
	printf("== sweep %s on %s, iodepth %d, %.0f s per count\n", a.o.pat.name,
	       a.targets[0], a.o.iodepth, a.o.runtime);
	fflush(stdout);
	rc = sweep_run(a.targets[0], a.size, &a.o, counts, (size_t)n, stdout, &results);
	if (rc == 0)
		rc = report_write_outputs(&results, a.json, a.csv, a.report);
	result_set_free(&results);
	return bench_exit(rc);
}

int bench_cmd_main(int argc, char **argv)
{
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
