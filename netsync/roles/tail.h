/*
 * tail — STATE/tail: the paths a demoted primary changed after the last
 * seq its peer acknowledged (its journal's pending list, taken by `twinfs
 * demote`), and the conflict folder holding its versions of them. The
 * secondary sends them in TAIL frames; the new primary resends their
 * state; the copies that turn out the same are dropped (serve.c).
 * Blocking file IO; callers decide the thread.
 */
#ifndef TWINFS_TAIL_H
#define TWINFS_TAIL_H

#include <stdbool.h>
#include <stddef.h>

struct tail {
	char id[96];		/* conflict folder (STATE/conflicts/ID) */
	char *paths;		/* NUL-terminated paths back to back */
	size_t len, cap;
	size_t n;		/* paths */
};

/* Adds PATH (a store path, never ""). 0 or -ENOMEM. */
int tail_add(struct tail *t, const char *path);
/*
 * PATH (added too) was renamed: as a folder, in a split brain it stands
 * for everything in it (divergence.h, whole). Kept in the same list as
 * "/PATH" (a store path never starts with '/'); tail_moved says whether
 * an entry is one, and the callers that want store paths skip those.
 */
int tail_add_moved(struct tail *t, const char *path);
bool tail_moved(const char *entry);
/* Writes STATE/tail atomically. 0 or -errno. */
int tail_save(const char *state, const struct tail *t);
/* Reads STATE/tail: 1 (present), 0 (none) or -errno / -EBADMSG. */
int tail_load(const char *state, struct tail *t);
int tail_remove(const char *state);
void tail_free(struct tail *t);

#endif
