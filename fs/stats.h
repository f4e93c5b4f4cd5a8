/*
 * stats — FUSE requests by operation: how many, how long twinfs took to
 * answer them (from reading the request to writing the reply, a histogram
 * per operation) and the errors the replies carried, by errno. The
 * transport calls fs_stats_begin when a request is read and fs_stats_end
 * when a reply is written, on the same thread (libfuse workers and ring
 * threads alike); the cost is three relaxed atomic adds and two clock
 * reads per request, no lock. The mount's /metrics reads the counters from
 * its own thread at any time. One mount per process: the counters are
 * process-wide. Requests libfuse would read by splice (a kernel without
 * FUSE_HANDLE_KILLPRIV_V2, served without rings) bypass the read hook and
 * are not counted; replies spliced from a file are counted, not timed.
 */
#ifndef TWINFS_FS_STATS_H
#define TWINFS_FS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "common/histo.h"

/* A request (struct fuse_in_header first) of LEN bytes was read. */
void fs_stats_begin(const void *in, size_t len);
/* A message (struct fuse_out_header first, LEN bytes of it) is written:
 * the reply of this thread's request, or a notification (unique 0). */
void fs_stats_end(const void *out, size_t len);

/* For the reader: the operations seen, by index 0 .. FS_STATS_OPS-1. */
#define FS_STATS_OPS 64
/* Name of op I ("lookup", "write"...); NULL when the slot is unused. */
const char *fs_stats_op_name(size_t i);
uint64_t fs_stats_requests(size_t i);
const struct histo *fs_stats_latency(size_t i);

/* Errors carried by replies, by errno name; kinds 0 .. FS_STATS_ERRS-1. */
#define FS_STATS_ERRS 16
const char *fs_stats_err_name(size_t k);	/* "ENOENT", ..., "other" */
uint64_t fs_stats_errors(size_t k);

#endif
