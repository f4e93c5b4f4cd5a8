/*
 * dataset — the files `bench copy` copies: one large file and a tree of
 * many small ones. Either generated (deterministic for a seed: the same
 * names, sizes and bytes on every machine) or taken from a user folder
 * (--source: its largest file is the large phase, every other regular file
 * the small phase). Paths are relative to the dataset root.
 * Main thread only.
 */
#ifndef TWINFS_BENCH_DATASET_H
#define TWINFS_BENCH_DATASET_H

#include <stddef.h>
#include <stdint.h>

struct dataset_file {
	char *path;		/* relative to the dataset root, '/'-separated */
	uint64_t size;
};

struct dataset {
	char *root;		/* absolute folder holding the files */
	int generated;		/* root was created by dataset_write */
	uint64_t seed;
	int has_large;
	struct dataset_file large;
	struct dataset_file *small;	/* the small-file phase, in copy order */
	size_t nsmall;
	uint64_t small_bytes;	/* sum of small[].size */
	char **dirs;		/* relative folders, parents before children */
	size_t ndirs;
};

#define DATASET_DEFAULT_SEED 0x7477696e66735eedull /* "twinfs" */
#define DATASET_SMALL_DIRS 50

/* Fills ds with the names and sizes of a generated dataset (no IO): one
 * large file of large_size bytes (none when 0), small_count files whose
 * sizes add up to exactly small_total, spread over DATASET_SMALL_DIRS
 * folders, sizes skewed small like a Windows System32 folder. Returns 0 or
 * -ENOMEM; ds must be released with dataset_free. */
int dataset_plan(struct dataset *ds, uint64_t seed, uint64_t large_size,
		 uint32_t small_count, uint64_t small_total);

/* Writes a planned dataset into a new folder under parent_dir (mkdtemp) and
 * syncs it (syncfs) so that its pages can later be dropped from the cache.
 * progress(done_bytes, total_bytes, arg) is called now and then (may be
 * NULL). Returns 0 or -errno (logged, naming the file). */
int dataset_write(struct dataset *ds, const char *parent_dir,
		  void (*progress)(uint64_t, uint64_t, void *), void *arg);

/* Fills ds from an existing folder (see the header comment). Symlinks and
 * special files are skipped. Returns 0, -ENOENT when it holds no regular
 * file, or another -errno. */
int dataset_scan(struct dataset *ds, const char *src_dir);

/* The bytes of generated file `index` (0 = the large file, 1.. = small[i-1])
 * from `offset`: a pure function of (seed, index, offset). */
void dataset_fill(uint64_t seed, uint64_t index, uint64_t offset, void *buf,
		  size_t len);

/* Asks the kernel to drop the cached pages of every dataset file
 * (posix_fadvise DONTNEED), so the next read comes from the disk. Returns
 * the number of files it could not open (dirty or busy pages stay). */
size_t dataset_drop_cache(const struct dataset *ds);

/* Bytes the dataset takes on a filesystem of `block`-byte blocks: every
 * file and folder rounded up to whole blocks (0 means 4096). */
uint64_t dataset_space_needed(const struct dataset *ds, uint64_t block);

/* Removes the generated folder (only if dataset_write created it). */
int dataset_remove(struct dataset *ds);
void dataset_free(struct dataset *ds);

#endif
