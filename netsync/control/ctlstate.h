/*
 * ctlstate — which state directory a control command (`status`, `sync`)
 * talks to: --state DIR, or the `state:` of --config FILE (the file a
 * mount or serve was started from, so the admin need not repeat it).
 * Main thread only.
 */
#ifndef TWINFS_CTLSTATE_H
#define TWINFS_CTLSTATE_H

/* Sets *state (malloc'd) from STATE_FLAG, else from CONFIG's `state:`;
 * *store likewise from the file's `store:` when STORE is NULL (NULL if
 * neither). Returns EX_OK, or the exit code after printing the one-line
 * reason: 64 neither given, 66 the file is missing, 78 it is not a usable
 * config or names no state. */
int ctlstate_resolve(const char *cmd, const char *state_flag, const char *config,
		     char **state, char **store);

#endif
