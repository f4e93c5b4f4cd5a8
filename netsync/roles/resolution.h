/*
 * resolution — what `twinfs resolve` does with each path of a split brain
 * (docs/failover.md, "Split brain"): whose version stays at the path,
 * which versions the secondary sends the primary, and which ones each
 * node keeps aside in STATE/conflicts/<stamp>-resolve. Never a version
 * discarded: the loser of `--keep local|peer` goes to the loser's conflict
 * folder; `--keep both` keeps the primary's at NAME and the secondary's
 * beside it as NAME.conflict-<node>-<stamp> (on both nodes, once
 * replicated), and takes each side's own changes. Pure; any thread.
 */
#ifndef TWINFS_RESOLUTION_H
#define TWINFS_RESOLUTION_H

#include <stdbool.h>
#include <stddef.h>

#include "netsync/roles/divergence.h"
#include "netsync/wire/proto_gen.h"

struct resolution_item {
	const struct div_entry *e;
	bool s_sends;		/* the secondary sends its version */
	bool p_saves;		/* the primary keeps its version aside first */
	bool s_saves;		/* the secondary keeps its version aside */
	char *dest;		/* where the primary writes the secondary's
				 * version (the path, or a conflict name); NULL:
				 * the primary's version stays */
};

struct resolution {
	struct resolution_item *it;
	size_t n;
	enum proto_keep keep;
	char folder[96];	/* <stamp>-resolve */
};

/*
 * Plans KEEP over D, as seen from this node (PRIMARY: this node mounts;
 * D's "here" is this node). S_NAME: the secondary's name, STAMP: the UTC
 * time, for conflict names. 0 or -ENOMEM.
 */
int resolution_plan(const struct divergence *d, bool primary, enum proto_keep keep,
		    const char *s_name, const char *stamp, struct resolution *r);
void resolution_free(struct resolution *r);
/* `twinfs resolve --keep local|peer|both` on a node (PRIMARY: it mounts)
 * as the primary sees it. -EINVAL for another word. */
int resolution_keep(const char *word, bool primary, enum proto_keep *keep);
/* One line per path for --dry-run and the log: what happens to it. */
void resolution_describe(const struct resolution *r, bool primary, size_t i, char *buf,
			 size_t len);
/* "20261202T010141Z": now, UTC. */
void resolution_stamp(char *buf, size_t len);

#endif
