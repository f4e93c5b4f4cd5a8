/*
 * exclude — `--exclude PATTERN` of `twinfs mirror`, in the spirit of
 * rsync's: a pattern without '/' matches the last component of a path at
 * any depth; a pattern with a '/' inside matches the whole relative path
 * (a leading '/' anchors it at the tree's root); a trailing '/' matches
 * directories only. Shell wildcards (* ? [...]) per fnmatch(3); '*' stops
 * at '/', '**' crosses it. An excluded directory is left out with all it
 * holds, on both sides: not sent, and never deleted on the peer. Plain
 * data, any thread.
 */
#ifndef TWINFS_EXCLUDE_H
#define TWINFS_EXCLUDE_H

#include <stdbool.h>
#include <stddef.h>

struct exclude {
	struct exclude_pat {
		char *pat;	/* without a leading or trailing '/' */
		bool anchored;	/* matched against the whole path */
		bool dir_only;
	} *p;
	size_t n, cap;
};

/* Adds PATTERN. 0, -EINVAL (empty or only "/"), or -ENOMEM. */
int exclude_add(struct exclude *x, const char *pattern);
/* True if PATH (relative, no leading '/') is excluded itself. */
bool exclude_match(const struct exclude *x, const char *path, bool is_dir);
/* The inventory_opts callback: ARG is a struct exclude. */
bool exclude_cb(const char *path, bool is_dir, void *arg);
void exclude_free(struct exclude *x);

#endif
