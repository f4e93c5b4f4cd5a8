/*
 * linkclaim — the inodes of this store that CREATEs of the current batch
 * wrote, and under which names. Lets the receiver tell a name it holds
 * linked to a file the batch already made from a name the primary still
 * links to it. Serve's loop thread (the receiver's).
 */
#ifndef TWINFS_LINKCLAIM_H
#define TWINFS_LINKCLAIM_H

#include <stdbool.h>
#include <sys/stat.h>

#include "common/pathset.h"

struct linkclaim {
	struct pathset keys;	/* "dev:ino" and "dev:ino:path" */
};

/* ST (this store's inode) was written by a CREATE of PATH, or PATH was
 * linked to it: 0 or -ENOMEM (the claim is then not kept). */
int linkclaim_note(struct linkclaim *lc, const struct stat *st, const char *path);
/* True if ST was claimed in this batch, and never under PATH. */
bool linkclaim_other(const struct linkclaim *lc, const struct stat *st, const char *path);
/*
 * True if NAME in DIRFD (PATH) is a file that this batch's CREATEs wrote
 * under another name not linked to PATH since. A CREATE of a linked file
 * (JCREATE_F_LINKED) keeps the links PATH has here, except then: the
 * primary sends the second name of one of its inodes in a batch as LINK
 * once a walk sent the first (a scan's entry, which may come first, is
 * linked again by its walk or the link search, sender_links.c), so a
 * second CREATE into the inode means the primary's names are two files
 * now while this store still links them (a group the journal, full,
 * recorded only as paths). Written in place, the second file's content
 * would land in the first's names.
 */
bool linkclaim_other_at(const struct linkclaim *lc, int dirfd, const char *name,
			const char *path);
void linkclaim_clear(struct linkclaim *lc);

#endif
