/*
 * primary — the replication side of a running mount: one thread with a
 * libevent loop that streams the journal to the peer (if any) and serves
 * the control socket STATE/control.sock (`twinfs status`, `twinfs sync`).
 * The fs starts it once the mount is usable and stops it at unmount; FUSE
 * threads only call primary_peer_begin()/primary_peer_end(), which never
 * touch the loop.
 */
#ifndef TWINFS_PRIMARY_H
#define TWINFS_PRIMARY_H

#include <stdbool.h>
#include <stdint.h>

struct primary;
struct journal;
struct conf;

/* Starts the primary thread. conf->peer may be NULL (local-only mount:
 * the control socket still answers status/sync, lag grows until a peer is
 * configured). mountpoint is reported by status and used by `twinfs sync`
 * to flush the kernel's cache (syncfs). Returns 0 or -errno. */
int primary_start(struct journal *j, const struct conf *c,
		  const char *mountpoint, struct primary **out);
/* Stops the thread: tries for up to flush_ms to get the peer to ack
 * everything pending, sends goodbye, closes. Safe with NULL. */
void primary_stop(struct primary *p, int flush_ms);

/* Sync mode, in two steps so that the local sync runs while the peer's
 * is on its way. A FUSE thread calls primary_peer_begin() from
 * fsync/fdatasync/flush of a written file once the file's changes are
 * appended to the journal and before its local fsync: it sets the
 * barrier that makes the sender take them at once, and returns true with
 * *seq set when the caller must wait (sync mode, a peer, not degraded),
 * false when there is nothing to wait for. After the local fsync, primary_peer_end(p, seq)
 * returns once the peer holds everything up to seq durably, or after
 * sync.timeout when the peer is unreachable (the primary then degrades to
 * async and says so in status and the log). Every begin that returned
 * true needs its end. End returns 0 once the peer acked (which implies the
 * journal holds every record before the barrier durably: the sender
 * commits a batch before sending it); -ETIMEDOUT, after which the fs
 * commits the journal itself; or -ESHUTDOWN when the journal closes first
 * (at unmount, when no FUSE request is left). */
bool primary_peer_begin(struct primary *p, uint64_t *seq);
int primary_peer_end(struct primary *p, uint64_t seq);

#endif
