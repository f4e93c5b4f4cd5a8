/*
 * plan — what converging a peer's tree on a source tree takes, from the
 * two inventories (netsync/delta/inventory.h): one item per path that
 * differs, in tree order (parents before children), each saying how it is
 * sent (whole, block delta, rename, link, attributes only) and what
 * differs (rsync's --itemize-changes letters); the directories whose
 * names the peer must prune (--delete); the directories whose attributes
 * go last. Plain data built from, and pointing into, the inventories:
 * they must outlive the plan. Any thread.
 */
#ifndef TWINFS_PLAN_H
#define TWINFS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netsync/delta/inventory.h"

struct exclude;

enum plan_act {
	PLAN_MKDIR,	/* a directory the peer lacks (or has as another type) */
	PLAN_FILE,	/* a file the peer lacks: sent whole at its name */
	PLAN_REPLACE,	/* a small changed file: whole, to a temp name, renamed */
	PLAN_DELTA,	/* a changed file updated in place, differing blocks only */
	PLAN_RENAME,	/* a peer-only file moved here (same size, mtime), then
			 * checked and fixed as a DELTA */
	PLAN_LINK,	/* a further name of an inode: LINK from s->link */
	PLAN_SYMLINK,
	PLAN_SPECIAL,	/* fifo, socket, device */
	PLAN_META,	/* attributes and/or xattrs only */
	PLAN_DELETE,	/* a peer-only entry (removed by its folder's PRUNE) */
};

/* What differs (itemize letters). */
#define PLAN_W_NEW	(1u << 0)
#define PLAN_W_TYPE	(1u << 1)	/* another type at the path */
#define PLAN_W_CONTENT	(1u << 2)	/* c: digests differ (--checksum) */
#define PLAN_W_SIZE	(1u << 3)	/* s */
#define PLAN_W_TIME	(1u << 4)	/* t */
#define PLAN_W_PERMS	(1u << 5)	/* p */
#define PLAN_W_OWNER	(1u << 6)	/* o */
#define PLAN_W_GROUP	(1u << 7)	/* g */
#define PLAN_W_XATTR	(1u << 8)	/* x */
#define PLAN_W_TARGET	(1u << 9)	/* a symlink's target, a device's numbers */
#define PLAN_W_LINK	(1u << 10)	/* hard-link group */

struct plan_item {
	enum plan_act act;
	const struct proto_entry *s;	/* the source's entry (NULL: DELETE) */
	const struct proto_entry *p;	/* the peer's at the same path, or NULL */
	const char *from;		/* RENAME: the peer's old path */
	uint32_t why;			/* PLAN_W_* */
};

/* A directory of which the peer keeps only the listed names. */
struct plan_prune {
	const char *dir;	/* the directory ("" = the root) */
	char *names;		/* NUL-terminated names back to back */
	size_t len, cap;
};

struct plan {
	struct plan_item *it;
	size_t n, cap;
	struct plan_prune *pr;
	size_t n_pr, cap_pr;
	const struct proto_entry **dirs;	/* attributes at the end */
	size_t n_dirs, cap_dirs;
	/* what the items will cost at most */
	uint64_t files_whole, bytes_whole;	/* FILE, REPLACE */
	uint64_t files_delta, bytes_delta;	/* DELTA, RENAME: their sizes */
	uint64_t deletes;
	uint64_t unchanged;			/* source entries needing nothing */
};

struct plan_opts {
	bool delete;		/* remove peer entries the source lacks */
	bool checksum;		/* compare digests (both sides HASHED) too */
	uint32_t delta_min;	/* smaller changed files are replaced whole */
	const struct exclude *exclude;	/* peer entries it matches are kept */
};

/* Builds OUT from SRC (the source) and PEER. 0 or -ENOMEM. */
int plan_build(const struct inventory *src, const struct inventory *peer,
	       const struct plan_opts *o, struct plan *out);
void plan_free(struct plan *p);

/* One --itemize line for IT, without the newline: "YXcstpogx PATH". */
void plan_itemize(const struct plan_item *it, char *buf, size_t len);

#endif
