/*
 * splitres — the secondary's part in ending a split brain and in putting
 * conflict copies back (docs/failover.md): `twinfs resolve` asked here
 * (the primary leads), RESOLVE BEGIN (keep the losing versions aside,
 * send the ones the primary takes) and `--restore FOLDER` (the folder's
 * copies to the primary). Serve's loop thread; it writes only the state
 * directory and the connection's output.
 */
#ifndef TWINFS_SPLITRES_H
#define TWINFS_SPLITRES_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>

#include "netsync/roles/divergence.h"
#include "netsync/wire/proto_gen.h"

/* `resolve WORD [dry]`: the plan into REPLY (one JSON object); unless
 * DRY, RESOLVE REQUEST into PEER (NULL: no split brain with a primary
 * connected, which is refused). NODE: this node's name. */
void splitres_ctl_resolve(const struct divergence *d, struct evbuffer *peer,
			  const char *node, const char *word, bool dry, struct evbuffer *reply);
/* RESOLVE BEGIN: the losers to STATE/conflicts/<stamp>-resolve, then the
 * versions the primary takes and RESOLVE FILES (or FAILED) into OUT.
 * Returns NULL, or why it failed (static until the next call). */
const char *splitres_begin(const struct divergence *d, const struct proto_resolve *m,
		    const char *state, int store_fd, const char *node, struct evbuffer *out);
/* `restore FOLDER`: RESOLVE RESTORE, the folder's files, RESOLVE FILES into
 * PEER (NULL: no primary streaming, refused). On success RESTORING holds
 * the folder (splitres_restored ends it). The reply into REPLY. */
void splitres_ctl_restore(const char *state, const char *folder, struct evbuffer *peer,
			  char *restoring, size_t len, struct evbuffer *reply);
/* The primary's RESOLVE DONE or FAILED for the restore in RESTORING: the
 * folder goes once its copies are in the store. ERR (LEN) gets the
 * primary's reason on failure. */
void splitres_restored(const char *state, char *restoring, const struct proto_resolve *m,
		       char *err, size_t len);

#endif
