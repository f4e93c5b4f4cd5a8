/*
 * inventory — every entry of a tree with each attribute two replicas must
 * agree on, read fresh from the disk (content and xattrs hashed with
 * XXH3-128 every time: a cached hash or an mtime would let bit rot or a
 * write behind the mount's back pass for equal), and the comparison of two
 * inventories field by field. The engine of `twinfs verify`; both nodes
 * build theirs the same way. Plain data and blocking IO; whichever thread
 * builds an inventory owns it.
 */
#ifndef TWINFS_INVENTORY_H
#define TWINFS_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netsync/wire/proto.h"

struct evbuffer;

struct inventory {
	struct proto_entry *e;	/* sorted in tree order; strings owned */
	size_t n, cap;
	uint64_t bytes_read;	/* content hashed while building it */
	/* the root's own mode, owner, mtime and xattrs (path ""), when the
	 * whole tree was walked: a replica's root must match too */
	struct proto_entry root;
	bool has_root;
};

/* Tree order: byte order with '/' below every other byte, so that a
 * directory's descendants follow it ("a", "a/x", "a-b"). */
int inventory_path_cmp(const char *a, const char *b);

/*
 * Walks ROOT (never following a symlink, never opening a FIFO, socket or
 * device) and fills INV, sorted, with every entry below the root; skips
 * the subtree SKIP (relative, may be NULL: e.g. a state dir inside the
 * tree). Content and every xattr are hashed fresh (verify's rule). An
 * entry that cannot be read is kept with its errno in err.
 * Returns 0, or -errno if ROOT itself cannot be walked.
 */
int inventory_build(const char *root, const char *skip, struct inventory *inv);


/* How inventory_walk reads a tree (the mirror and resync walks). */
struct inventory_opts {
	bool hash_content;	/* read and hash every regular file */
	bool replicated_xattrs;	/* digest only what replication carries
				 * (common/xattrname.h), not every name */
	const char *skip;	/* a subtree left out (may be NULL) */
	const char *sub;	/* walk only this subtree ("" or NULL: all) */
	bool with_sub;		/* include the entry of SUB itself */
	/* Entries for which this returns true are left out, with their
	 * subtrees (may be NULL). */
	bool (*exclude)(const char *path, bool is_dir, void *arg);
	void *exclude_arg;
};

/* inventory_build with options O: ROOT is the tree's root, paths stay
 * relative to it. Returns 0 or -errno (-ENOENT: SUB is not there). */
int inventory_walk(const char *root, const struct inventory_opts *o, struct inventory *inv);
/* Index of PATH in a sorted inventory, or -1. */
long inventory_find(const struct inventory *inv, const char *path);

/*
 * Appends the entry at PATH of the tree under ROOTFD, read as a walk of
 * what replication carries reads it (the replicated xattrs; the
 * content hashed if HASH; no link field). Returns 1, 0 when nothing is
 * there (nothing appended), or -errno. For single paths (a demoted
 * primary's tail, a split brain's versions), not walks.
 */
int inventory_add_path(struct inventory *inv, int rootfd, const char *path, bool hash);
/* Every field two replicas must agree on is equal (all but link); a
 * regular file only if both contents were hashed. */
int inventory_entry_same(const struct proto_entry *a, const struct proto_entry *b);

/* Appends a copy of E (its strings copied). 0 or -ENOMEM. */
int inventory_add(struct inventory *inv, const struct proto_entry *e);
/* The root's ENTRY frame ("." with PROTO_ENTRY_F_ROOT), first of a whole
 * tree's, if INV has the root: 0 or -errno. */
int inventory_encode_root(const struct inventory *inv, struct evbuffer *out);
/* A received entry E that is a root: kept as INV's root (true), or false
 * for any other entry. *BAD is set when E claims to be the root but is
 * not a folder named ".", or INV has one already (the caller checks that
 * it came first). */
bool inventory_take_root(struct inventory *inv, const struct proto_entry *e, bool *bad);
/* Sorts and assigns the link field of hard-linked names (after a build
 * this is done; after inventory_add of received entries it is not
 * needed: they arrive with theirs). */
void inventory_sort(struct inventory *inv);
void inventory_free(struct inventory *inv);

/* Calls FN once per difference between L (ours) and R (theirs), with the
 * path and one line saying what differs ("mode: 0644 here, 0600 on the
 * peer"); LNAME and RNAME name the sides. Returns the count. */
size_t inventory_compare(const struct inventory *l, const struct inventory *r,
			 const char *lname, const char *rname,
			 void (*fn)(const char *path, const char *what, void *arg), void *arg);

#endif
