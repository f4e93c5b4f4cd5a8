/*
 * versions — sends a path's version from this node's tree to the primary
 * over the replication connection, the one way files travel from a
 * secondary (docs/protocol.md, "Split brain"): an ENTRY with its state
 * (mode 0: nothing there) and, for a regular file, its content as DATA
 * frames. Used by `twinfs resolve` (the versions the primary takes) and
 * `--restore` (a conflict folder put back). Serve's loop; blocking reads.
 */
#ifndef TWINFS_VERSIONS_H
#define TWINFS_VERSIONS_H

#include <event2/buffer.h>

/* PATH of the tree under ROOTFD, sent as AS (the store path the primary
 * writes it to). Returns the bytes of content sent, or -errno. */
long long versions_send(struct evbuffer *out, int rootfd, const char *path, const char *as);
/* Every non-directory of the tree under DIRFD (a conflict folder), each
 * as its own path. Returns the number sent, or -errno. */
int versions_send_tree(struct evbuffer *out, int dirfd);
/* PATH as itself and, for a folder, everything in it (folders included),
 * as `resolve` sends a version. Returns >= 0 or -errno. */
long long versions_send_path(struct evbuffer *out, int rootfd, const char *path);

#endif
