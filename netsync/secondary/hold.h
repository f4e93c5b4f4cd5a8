/*
 * hold — the paths a secondary keeps its own version of while it takes a
 * primary's stream in a split brain (docs/protocol.md, "Split brain"):
 * the paths it changed itself after the common point, and every path a
 * frame of the stream was held back for. A frame is held back when it
 * names a held path, or a path below one that is not a folder here (what
 * the folder held is this node's to decide: it removed or replaced it),
 * or when it would remove or replace a folder a held path is in. A held
 * folder keeps its attributes and its place; the entries in it that this
 * node did not change still take the primary's changes. Loop thread of
 * serve (serve_split.c).
 */
#ifndef TWINFS_HOLD_H
#define TWINFS_HOLD_H

#include <stdbool.h>
#include <stddef.h>

#include "common/pathset.h"
#include "journal/op.h"
#include "netsync/wire/proto.h"

struct hold {
	struct pathset held;	/* the held paths */
	struct pathset anc;	/* their proper ancestors ("" the root included) */
};

void hold_init(struct hold *h);
void hold_clear(struct hold *h);
/* PATH held; SUBTREE: everything below it too. 0 or -ENOMEM. */
int hold_add(struct hold *h, const char *path, bool subtree);
/* A frame naming PATH is held back: PATH is held, or below a subtree. */
bool hold_covers(const struct hold *h, const char *path);
/* PATH is a held subtree or below one. */
bool hold_subtree(const struct hold *h, const char *path);
/* PATH is a folder above a held path. */
bool hold_above(const struct hold *h, const char *path);
/*
 * Whether OP must be held back: it names a held path (or one below it)
 * in path or path2, or it names a folder above one for anything but a
 * change of attributes or xattrs (which leaves what the folder holds).
 * *WHY gets the path it is held back for (op->path or op->path2).
 */
bool hold_op(const struct hold *h, const struct journal_op *op, const char **why);
/*
 * A PRUNE of a folder above held paths must not remove them: the names
 * of the folder's entries that lead to one are added to M's names, in
 * *BUF (the caller frees it; NULL when nothing was added). 0 or -ENOMEM.
 */
int hold_prune_keep(const struct hold *h, struct proto_prune *m, char **buf);

#endif
