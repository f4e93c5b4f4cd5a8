/*
 * scan — finds what changed in the store while twinfs was not watching,
 * from one stat walk compared with the manifest of the last known point
 * (netsync/delta/manifest.h), and hands each change to the journal as a
 * NEEDS_SCAN so that the sender resyncs it before `twinfs sync` may report
 * success. Runs on the mount's main thread, before the FUSE session takes
 * requests (scan_mount) and after it ended (scan_unmount); never reads
 * file contents.
 */
#ifndef TWINFS_SCAN_H
#define TWINFS_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "netsync/delta/manifest.h"

struct journal;

/* Depth of directories the stat walk descends (as the sender's walk). */
#define SCAN_DEPTH_MAX 128

/* What a change asks the sender to do with a path. */
enum scan_what {
	SCAN_WHOLE,	/* new, replaced, changed, or gone: its whole state */
	SCAN_NAMES,	/* a directory whose names or attributes changed: its
			 * entry and its list of names, not its subtree */
};

struct scan_change {
	enum scan_what what;
	char *path;
};

struct scan_result {
	struct scan_change *c;
	size_t n, cap;
};

/* Stat-walks the store under STORE_FD into *m (sorted, the root "" first),
 * without following symlinks or entering other filesystems. 0 or -errno. */
int scan_store(int store_fd, struct manifest *m);
/* The changes from OLD to NOW (both sorted), in tree order, with nothing
 * under a path that is scanned whole. 0 or -ENOMEM. */
int scan_diff(const struct manifest *old, const struct manifest *now,
	      struct scan_result *out);
void scan_result_free(struct scan_result *r);

/*
 * At mount, before the FUSE session starts: scans STORE, compares with
 * STATE/manifest and records every change as a durable NEEDS_SCAN in J;
 * then writes the new manifest. Without a (usable) manifest the whole
 * store is recorded ("") if the peer already holds data (acked seq > 0);
 * a peer that holds nothing gets a baseline anyway. Returns 0 or -errno
 * (on failure it records the whole store, so nothing is missed).
 */
int scan_mount(struct journal *j, const char *store, const char *state);
/* After a clean unmount (no FUSE request left): writes STATE/manifest
 * from a fresh stat walk. 0 or -errno (then the older manifest stays,
 * which only makes the next mount rescan more). */
int scan_unmount(const char *store, const char *state);

#endif
