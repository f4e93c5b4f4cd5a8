/*
 * dataset — plans, writes, scans and drops from the page cache the files
 * that `bench copy` copies. Main thread only. It writes only inside the
 * temporary folder it creates (dataset_write) and only reads a --source
 * folder; it never touches a benchmark target.
 */
#include "bench/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/stop.h"
#include "bench/tree.h"
#include "common/log.h"

static uint64_t dataset_mix(uint64_t x)
{
	/* splitmix64 finaliser: a good 64-bit hash of a counter. */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A uniform double in [0, 1) from the n-th draw of stream `seed`. */
static double dataset_uniform(uint64_t seed, uint64_t n)
{
	return (double)(dataset_mix(seed ^ dataset_mix(n)) >> 11) * 0x1.0p-53;
}

void dataset_fill(uint64_t seed, uint64_t index, uint64_t offset, void *buf,
		  size_t len)
{
	unsigned char *p = buf;
	uint64_t key = dataset_mix(seed ^ dataset_mix(index + 1));

	/* Every aligned 8-byte word is the hash of (file key, word number),
	 * so any range can be produced without generating what precedes it
	 * and the data does not compress (a copy of zeros would flatter
	 * compressing or deduplicating targets). */
	while (len) {
		uint64_t w = dataset_mix(key ^ (offset >> 3) * 0x2545f4914f6cdd1dull);
		size_t skip = offset & 7, n = 8 - skip;

		if (n > len)
			n = len;
		memcpy(p, (unsigned char *)&w + skip, n);
		p += n;
		offset += n;
		len -= n;
	}
}

static char *dataset_strdup(const char *s)
{
	return strdup(s);
}

/*
 * Sizes. A Windows System32 folder (the classic small-file test) holds
 * thousands of files of a few KiB to a few hundred KiB and a handful of
 * multi-MiB ones: the median is far below the mean. We draw each size as
 * exp(ln(lo) + ln(hi/lo) * u^2) with u uniform in [0, 1): log-uniform
 * squared, so half the files land in the bottom quarter of the log range.
 * Then every size is scaled so that the total is what the user asked
 * for, and the rounding remainder goes to the largest file, so the total
 * is exact: the e2e test checks reported bytes against it.
 */
int dataset_plan(struct dataset *ds, uint64_t seed, uint64_t large_size,
		 uint32_t small_count, uint64_t small_total)
{
	const double lo = 1024.0, hi = 8.0 * 1024 * 1024;
	double *raw = NULL, sum = 0;
	char name[64];
	size_t biggest = 0;
	uint64_t assigned = 0;
	int rc = -ENOMEM;

	memset(ds, 0, sizeof(*ds));
	ds->seed = seed;
	if (large_size) {
		ds->has_large = 1;
		ds->large.size = large_size;
		ds->large.path = dataset_strdup("large.iso");
		if (!ds->large.path)
			goto out_free;
	}
	if (small_count == 0)
		return 0;
	ds->dirs = calloc(1 + DATASET_SMALL_DIRS, sizeof(*ds->dirs));
	ds->small = calloc(small_count, sizeof(*ds->small));
	raw = calloc(small_count, sizeof(*raw));
	if (!ds->dirs || !ds->small || !raw)
		goto out_free;
	ds->nsmall = small_count;	/* dataset_free frees what got filled */
	ds->ndirs = 1 + DATASET_SMALL_DIRS;
	ds->dirs[0] = dataset_strdup("small");
	if (!ds->dirs[0])
		goto out_free;
	for (size_t d = 0; d < DATASET_SMALL_DIRS; d++) {
		snprintf(name, sizeof(name), "small/dir%02zu", d);
		ds->dirs[d + 1] = dataset_strdup(name);
		if (!ds->dirs[d + 1])
			goto out_free;
	}
	for (uint32_t i = 0; i < small_count; i++) {
		double u = dataset_uniform(seed, 2ull * i);
		uint64_t d = (uint64_t)(dataset_uniform(seed, 2ull * i + 1) *
					DATASET_SMALL_DIRS);
		static const char *const ext[] = { "dll", "exe", "sys", "mui",
						   "dat", "ini", "cpl", "tlb" };

		raw[i] = exp(log(lo) + log(hi / lo) * u * u);
		sum += raw[i];
		snprintf(name, sizeof(name), "small/dir%02llu/f%05u.%s",
			 (unsigned long long)d, i, ext[i % 8]);
		ds->small[i].path = dataset_strdup(name);
		if (!ds->small[i].path)
			goto out_free;
	}
	for (uint32_t i = 0; i < small_count; i++) {
		ds->small[i].size = (uint64_t)floor(raw[i] * ((double)small_total / sum));
		if (assigned + ds->small[i].size > small_total)
			ds->small[i].size = small_total - assigned;
		assigned += ds->small[i].size;
		if (raw[i] > raw[biggest])
			biggest = i;
	}
	ds->small[biggest].size += small_total - assigned;
	ds->small_bytes = small_total;
	rc = 0;
out_free:
	free(raw);
	if (rc)
		dataset_free(ds);
	return rc;
}

static int dataset_write_file(const struct dataset *ds, const char *root,
			      uint64_t index, const struct dataset_file *f,
			      unsigned char *buf, size_t bufsize,
			      uint64_t *done, uint64_t total,
			      void (*progress)(uint64_t, uint64_t, void *), void *arg)
{
	char path[PATH_MAX];
	uint64_t off = 0;
	int fd, rc = 0;

	if (snprintf(path, sizeof(path), "%s/%s", root, f->path) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out_log;
	}
	while (off < f->size) {
		size_t n = f->size - off < bufsize ? (size_t)(f->size - off) : bufsize;

		dataset_fill(ds->seed, index, off, buf, n);
		ssize_t w = write(fd, buf, n);
		if (stop_requested()) {
			rc = -EINTR;
			goto out_close;
		}
		if (w < 0) {
			rc = -errno;
			goto out_close;
		}
		off += (uint64_t)w;
		*done += (uint64_t)w;
		if (progress && (off & ((64u << 20) - 1)) < (uint64_t)w)
			progress(*done, total, arg);
	}
out_close:
	if (close(fd) < 0 && !rc)
		rc = -errno;
out_log:
	if (rc && rc != -EINTR)
		log_error("cannot write the benchmark dataset",
			  "path=\"%s\" err=\"%s\" hint=\"choose another --dataset-dir\"",
			  path, strerror(-rc));
	return rc;
}

static int dataset_syncfs(const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || syncfs(fd) < 0) {
		rc = -errno;
		log_error("cannot flush the benchmark dataset", "path=\"%s\" err=\"%s\"",
			  root, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int dataset_write(struct dataset *ds, const char *parent_dir,
		  void (*progress)(uint64_t, uint64_t, void *), void *arg)
{
	char path[PATH_MAX];
	const size_t bufsize = 1u << 20;
	unsigned char *buf;
	uint64_t done = 0, total = ds->large.size + ds->small_bytes;
	int rc;

	if (snprintf(path, sizeof(path), "%s/twinfs-bench-data.XXXXXX",
		     parent_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!mkdtemp(path)) {
		rc = -errno;
		log_error("cannot create the dataset folder",
			  "path=\"%s\" err=\"%s\" hint=\"choose another --dataset-dir\"",
			  path, strerror(errno));
		return rc;
	}
	ds->root = strdup(path);
	if (!ds->root)
		return -ENOMEM;
	ds->generated = 1;
	buf = malloc(bufsize);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < ds->ndirs; i++) {
		snprintf(path, sizeof(path), "%s/%s", ds->root, ds->dirs[i]);
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			log_error("cannot create a dataset folder", "path=\"%s\" err=\"%s\"",
				  path, strerror(errno));
			goto out_free;
		}
	}
	if (ds->has_large) {
		rc = dataset_write_file(ds, ds->root, 0, &ds->large, buf, bufsize,
					&done, total, progress, arg);
		if (rc)
			goto out_free;
	}
	for (size_t i = 0; i < ds->nsmall; i++) {
		rc = dataset_write_file(ds, ds->root, i + 1, &ds->small[i], buf,
					bufsize, &done, total, progress, arg);
		if (rc)
			goto out_free;
		if (progress && i % 256 == 0)
			progress(done, total, arg);
	}
	if (progress)
		progress(done, total, arg);
	/* Durable now, so that dataset_drop_cache can actually drop the
	 * pages (the kernel keeps dirty pages whatever fadvise says). One
	 * syncfs for the whole tree: 10,000 fsyncs would take minutes on a
	 * slow disk and measure nothing. */
	rc = dataset_syncfs(ds->root);
out_free:
	free(buf);
	return rc;
}

/* nftw has no user pointer: the scan state lives here for one call. */
static struct dataset *dataset_scanning;
static size_t dataset_scan_root_len;
static size_t dataset_cap_files, dataset_cap_dirs;

static int dataset_scan_one(const char *path, const struct stat *st, int flag,
			    struct FTW *ftw)
{
	struct dataset *ds = dataset_scanning;
	const char *rel = path + dataset_scan_root_len;

	while (*rel == '/')
		rel++;
	if (flag == FTW_D && ftw->level > 0) {
		if (ds->ndirs == dataset_cap_dirs) {
			size_t cap = dataset_cap_dirs ? 2 * dataset_cap_dirs : 64;
			char **d = realloc(ds->dirs, cap * sizeof(*d));
			if (!d)
				return -ENOMEM;
			ds->dirs = d;
			dataset_cap_dirs = cap;
		}
		if (!(ds->dirs[ds->ndirs] = strdup(rel)))
			return -ENOMEM;
		ds->ndirs++;
	} else if (flag == FTW_F && S_ISREG(st->st_mode)) {
		if (ds->nsmall == dataset_cap_files) {
			size_t cap = dataset_cap_files ? 2 * dataset_cap_files : 1024;
			struct dataset_file *f = realloc(ds->small, cap * sizeof(*f));
			if (!f)
				return -ENOMEM;
			ds->small = f;
			dataset_cap_files = cap;
		}
		if (!(ds->small[ds->nsmall].path = strdup(rel)))
			return -ENOMEM;
		ds->small[ds->nsmall].size = (uint64_t)st->st_size;
		ds->nsmall++;
	} else if (flag == FTW_DNR || flag == FTW_NS) {
		log_warn("skipping an unreadable entry of --source", "path=\"%s\"", path);
	}
	return 0;
}

int dataset_scan(struct dataset *ds, const char *src_dir)
{
	char abs[PATH_MAX];
	size_t big = 0;
	int rc;

	memset(ds, 0, sizeof(*ds));
	if (!realpath(src_dir, abs))
		return -errno;
	ds->root = strdup(abs);
	if (!ds->root)
		return -ENOMEM;
	dataset_scanning = ds;
	dataset_scan_root_len = strlen(abs);
	dataset_cap_files = dataset_cap_dirs = 0;
	rc = nftw(abs, dataset_scan_one, 32, FTW_PHYS);
	dataset_scanning = NULL;
	if (rc == -1)
		rc = -errno;	/* nftw itself failed; else our callback's -errno */
	if (rc)
		goto out_free;
	if (ds->nsmall == 0) {
		rc = -ENOENT;
		goto out_free;
	}
	/* The largest file is the large phase; the rest keep walk order. */
	for (size_t i = 1; i < ds->nsmall; i++)
		if (ds->small[i].size > ds->small[big].size)
			big = i;
	ds->has_large = 1;
	ds->large = ds->small[big];
	memmove(&ds->small[big], &ds->small[big + 1],
		(ds->nsmall - big - 1) * sizeof(*ds->small));
	ds->nsmall--;
	for (size_t i = 0; i < ds->nsmall; i++)
		ds->small_bytes += ds->small[i].size;
	return 0;
out_free:
	dataset_free(ds);
	return rc;
}

static int dataset_drop_one(const char *root, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return 0;
}

/* Each file takes whole blocks, and so does each folder: with 10,000
 * small files of ~100 KiB the rounding alone is a few percent. */
uint64_t dataset_space_needed(const struct dataset *ds, uint64_t block)
{
	uint64_t b = block ? block : 4096, need = 0;

	if (ds->has_large)
		need += (ds->large.size + b - 1) / b * b;
	for (size_t i = 0; i < ds->nsmall; i++)
		need += (ds->small[i].size + b - 1) / b * b;
	need += (ds->ndirs + 2) * b;	/* the folders and the work folder */
	return need;
}

size_t dataset_drop_cache(const struct dataset *ds)
{
	size_t failed = 0;

	if (ds->has_large && dataset_drop_one(ds->root, ds->large.path))
		failed++;
	for (size_t i = 0; i < ds->nsmall; i++)
		if (dataset_drop_one(ds->root, ds->small[i].path))
			failed++;
	return failed;
}

int dataset_remove(struct dataset *ds)
{
	int rc;

	if (!ds->generated || !ds->root)
		return 0;
	rc = tree_remove(ds->root);
	if (rc == 0)
		ds->generated = 0;
	return rc;
}

void dataset_free(struct dataset *ds)
{
	free(ds->root);
	free(ds->large.path);
	for (size_t i = 0; i < ds->nsmall; i++)
		free(ds->small[i].path);
	free(ds->small);
	for (size_t i = 0; i < ds->ndirs; i++)
		free(ds->dirs[i]);
	free(ds->dirs);
	memset(ds, 0, sizeof(*ds));
}
