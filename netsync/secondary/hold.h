/*
 * hold — the paths a secondary keeps its own version of while it takes a
 * primary's stream in a split brain (docs/protocol.md, "Split brain"):
 * the paths it changed itself after the common point, and every path a
 * frame of the stream was held back for. A frame is held back when it
 * names a held path, or a path below one that is not a folder here (what
 * the folder held is this node's to decide: it removed or replaced it),
 * or another name of a held file here (a hard link: it would change the
 * held file too), or when it would remove or replace a folder a held
 * path is in. The other names of a held file are held too
 * (hold_each_alias). A held
 * folder keeps its attributes and its place; the entries in it that this
 * node did not change still take the primary's changes. Loop thread of
 * serve (serve_split.c).
 */
#ifndef TWINFS_HOLD_H
#define TWINFS_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pathset.h"
#include "journal/op.h"
#include "netsync/wire/proto.h"

struct hold_inode {
	uint64_t dev, ino;
};

struct hold {
	struct pathset held;	/* the held paths */
	struct pathset anc;	/* their proper ancestors ("" the root included) */
	struct hold_inode *inos; /* held files that have other names here */
	size_t n_inos, cap_inos;
	struct pathset mtimes;	/* folder -> this node's mtime to keep (ns) */
};

void hold_init(struct hold *h);
void hold_clear(struct hold *h);
/* PATH held; SUBTREE: everything below it too. 0 or -ENOMEM. */
int hold_add(struct hold *h, const char *path, bool subtree);
/*
 * Held PATH (under STORE_FD) as a file: if it has other names (hard
 * links), a frame naming any of them would change it too, so those are
 * held back as well (hold_alias). 0 or -ENOMEM.
 */
int hold_add_inode(struct hold *h, int store_fd, const char *path);
/* PATH (under STORE_FD) is another name of a held file. */
bool hold_alias(const struct hold *h, int store_fd, const char *path);
/*
 * The other names of the held files hold_add_inode recorded from its
 * FROM-th on (h->n_inos before the call: only new ones are looked for):
 * FN(path, ARG) for each name under STORE_FD not held yet (nor below a
 * subtree held). A change made
 * through one name changed them all, so each is as diverged as the held
 * file. Walks the whole store, which is why it is only called when a
 * held file has other names. 0, FN's first error, or -errno.
 */
typedef int (*hold_alias_fn)(const char *path, void *arg);
int hold_each_alias(struct hold *h, int store_fd, size_t from, hold_alias_fn fn, void *arg);
/*
 * Every file with other names below DIR (a folder held whole) is held as
 * an inode too (hold_add_inode), so that hold_each_alias finds its names
 * outside DIR: a change the primary makes through the name inside would
 * change them, and it is held back. 0 or -errno.
 */
int hold_add_tree_inodes(struct hold *h, int store_fd, const char *dir);
/*
 * The mtime of a held folder, and of a folder above a held path until the
 * primary sets it (ATTR), is this node's: the stream's changes of the
 * entries in it would move it, and the primary's ATTR that would set it
 * is held back (or never comes: the folder's removal is held back).
 * hold_note_mtimes records the mtimes of those folders not recorded yet
 * (call it after hold_add, before the stream changes them); 0 or -ENOMEM.
 * hold_mtime: 1 and *NS if DIR's is recorded, else 0. hold_forget_mtime:
 * the primary's ATTR of DIR was applied, its mtime is the primary's now.
 */
int hold_note_mtimes(struct hold *h, int store_fd);
int hold_mtime(const struct hold *h, const char *dir, int64_t *ns);
void hold_forget_mtime(struct hold *h, const char *dir);
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
