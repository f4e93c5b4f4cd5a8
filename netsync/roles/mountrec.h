/*
 * mountrec — STATE/mount, a two-line record of the store and mountpoint
 * that the last mount with this state directory used, so that offline
 * tools (`twinfs status --pending`) need only --state. Main/primary
 * thread at start-up; readers are CLI commands.
 */
#ifndef TWINFS_MOUNTREC_H
#define TWINFS_MOUNTREC_H

#include <stddef.h>

/* Writes STATE/mount atomically (tmp + rename). 0 or -errno. */
int mountrec_write(const char *state_dir, const char *store, const char *mountpoint);
/* Reads it; either buffer may be NULL. 0, -ENOENT, -EBADMSG or -errno. */
int mountrec_read(const char *state_dir, char *store, size_t store_len,
		  char *mountpoint, size_t mp_len);

#endif
