/*
 * primary — the replication side of a running mount: one thread with a
 * libevent loop that streams the journal to the peer (if any) and serves
 * the control socket STATE/control.sock (`twinfs status`, `twinfs sync`).
 * The fs starts it once the mount is usable and stops it at unmount; FUSE
 * threads only call primary_wait_peer(), which never touches the loop.
 */
#ifndef TWINFS_PRIMARY_H
#define TWINFS_PRIMARY_H

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

/* Sync mode: called by a FUSE thread from fsync/fdatasync/flush of a file
 * that was written, after the local fsync. Returns once the peer holds
 * every change made before the call durably, or at once in async mode,
 * or after sync.timeout when the peer is unreachable (the primary then
 * degrades to async and says so in status and the log). Never fails the
 * application's call: returns 0, or -ETIMEDOUT for the fs to log. */
int primary_wait_peer(struct primary *p);

#endif
