/*
 * startcheck — the start-up checks that `mount` and `serve` share, all run
 * before either creates a file: the state directory must lie outside the
 * store and be safe from other users, and each store and state directory
 * has one writer (dirlock).
 * Each check prints its one-line refusal ("twinfs CMD: ..., reason") to
 * stderr. Main thread only.
 */
#ifndef TWINFS_STARTCHECK_H
#define TWINFS_STARTCHECK_H

#include <stdbool.h>

#include "common/dirlock.h"

/* Is PATH (which may not exist yet; its parent does) DIR or inside DIR?
 * Compares resolved paths. */
bool startcheck_inside(const char *dir, const char *path);

/* Refuses (-EINVAL) a state directory inside the store: the store's
 * changes (replicated, or written through the mount) could overwrite the
 * journal and node state. 0 otherwise. */
int startcheck_state_outside(const char *cmd, const char *store, const char *state);

/* Refuses (-EPERM) a state directory that exists and that others could
 * tamper with: writable by its group or others, owned by another user,
 * or holding a symbolic link (in it, journal/ or tls/: twinfs creates
 * none and follows none it did not make). A state directory that does
 * not exist yet is made 0700 later: 0. */
int startcheck_state_safe(const char *cmd, const char *state);

/* Takes the writer lock on DIR (WHAT: "store" or "state directory").
 * 0; -EBUSY naming the holder's PID; -errno when DIR cannot be opened. */
int startcheck_lock(const char *cmd, const char *what, const char *dir,
		    struct dirlock *l);

#endif
