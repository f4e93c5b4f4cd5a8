/*
 * stats — FUSE request counters and latency histograms (stats.h). The
 * transport's threads (libfuse workers, ring threads) write them with
 * relaxed atomics; the mount's replication thread reads them for
 * /metrics. Owns nothing else; touches no file and no lock.
 *
 * A request is timed on the thread that read it: the start time and op sit
 * in thread-local storage until that thread writes the reply whose header
 * carries a unique id (notifications carry 0 and are not replies). A
 * request answered by no reply (FORGET) or elsewhere is counted, not timed.
 */
#include "fs/stats.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

static atomic_uint_fast64_t st_requests[FS_STATS_OPS];
static struct histo st_latency[FS_STATS_OPS];
static atomic_uint_fast64_t st_errors[FS_STATS_ERRS];

static __thread uint64_t st_t0;		/* 0: no request being timed */
static __thread uint32_t st_op;
static __thread uint64_t st_unique;

/* Opcodes (linux/fuse.h) to names; anything else counts as "other" (0). */
static const char *const st_names[FS_STATS_OPS] = {
	[0] = "other",
	[FUSE_LOOKUP] = "lookup", [FUSE_FORGET] = "forget", [FUSE_GETATTR] = "getattr",
	[FUSE_SETATTR] = "setattr", [FUSE_READLINK] = "readlink",
	[FUSE_SYMLINK] = "symlink", [FUSE_MKNOD] = "mknod", [FUSE_MKDIR] = "mkdir",
	[FUSE_UNLINK] = "unlink", [FUSE_RMDIR] = "rmdir", [FUSE_RENAME] = "rename",
	[FUSE_LINK] = "link", [FUSE_OPEN] = "open", [FUSE_READ] = "read",
	[FUSE_WRITE] = "write", [FUSE_STATFS] = "statfs", [FUSE_RELEASE] = "release",
	[FUSE_FSYNC] = "fsync", [FUSE_SETXATTR] = "setxattr",
	[FUSE_GETXATTR] = "getxattr", [FUSE_LISTXATTR] = "listxattr",
	[FUSE_REMOVEXATTR] = "removexattr", [FUSE_FLUSH] = "flush",
	[FUSE_INIT] = "init", [FUSE_OPENDIR] = "opendir", [FUSE_READDIR] = "readdir",
	[FUSE_RELEASEDIR] = "releasedir", [FUSE_FSYNCDIR] = "fsyncdir",
	[FUSE_GETLK] = "getlk", [FUSE_SETLK] = "setlk", [FUSE_SETLKW] = "setlkw",
	[FUSE_ACCESS] = "access", [FUSE_CREATE] = "create",
	[FUSE_INTERRUPT] = "interrupt", [FUSE_BMAP] = "bmap",
	[FUSE_DESTROY] = "destroy", [FUSE_IOCTL] = "ioctl", [FUSE_POLL] = "poll",
	[FUSE_BATCH_FORGET] = "batch_forget", [FUSE_FALLOCATE] = "fallocate",
	[FUSE_READDIRPLUS] = "readdirplus", [FUSE_RENAME2] = "rename2",
	[FUSE_LSEEK] = "lseek", [FUSE_COPY_FILE_RANGE] = "copy_file_range",
	[50] = "syncfs", [51] = "tmpfile", [52] = "statx",
};

/* The errnos a reply may carry that an admin tells apart; the rest: other. */
static const struct { int err; const char *name; } st_errs[FS_STATS_ERRS] = {
	{ 0, "other" }, { ENOENT, "ENOENT" }, { EEXIST, "EEXIST" },
	{ ENOTEMPTY, "ENOTEMPTY" }, { ENODATA, "ENODATA" }, { EACCES, "EACCES" },
	{ EPERM, "EPERM" }, { EIO, "EIO" }, { ENOSPC, "ENOSPC" },
	{ EDQUOT, "EDQUOT" }, { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
	{ EROFS, "EROFS" }, { EXDEV, "EXDEV" }, { EINVAL, "EINVAL" },
	{ ENOSYS, "ENOSYS" },
};

static uint64_t st_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fs_stats_begin(const void *in, size_t len)
{
	const struct fuse_in_header *h = in;
	uint32_t op;

	if (len < sizeof(*h))
		return;
	op = h->opcode < FS_STATS_OPS && st_names[h->opcode] ? h->opcode : 0;
	atomic_fetch_add_explicit(&st_requests[op], 1, memory_order_relaxed);
	st_op = op;
	st_unique = h->unique;
	st_t0 = st_now();
}

void fs_stats_end(const void *out, size_t len)
{
	const struct fuse_out_header *h = out;
	size_t k;

	if (!st_t0 || len < sizeof(*h) || h->unique != st_unique)
		return;	/* a notification, or not this thread's request */
	histo_observe(&st_latency[st_op], st_now() - st_t0);
	st_t0 = 0;
	if (!h->error)
		return;
	for (k = 1; k < FS_STATS_ERRS && st_errs[k].err != -h->error; k++)
		;
	atomic_fetch_add_explicit(&st_errors[k < FS_STATS_ERRS ? k : 0], 1,
				  memory_order_relaxed);
}

const char *fs_stats_op_name(size_t i)
{
	return i < FS_STATS_OPS ? st_names[i] : NULL;
}

uint64_t fs_stats_requests(size_t i)
{
	return i < FS_STATS_OPS ? atomic_load_explicit(&st_requests[i], memory_order_relaxed) : 0;
}

const struct histo *fs_stats_latency(size_t i)
{
	return i < FS_STATS_OPS ? &st_latency[i] : NULL;
}

const char *fs_stats_err_name(size_t k)
{
	return k < FS_STATS_ERRS ? st_errs[k].name : NULL;
}

uint64_t fs_stats_errors(size_t k)
{
	return k < FS_STATS_ERRS ? atomic_load_explicit(&st_errors[k], memory_order_relaxed) : 0;
}
