/*
 * limits — the caps on what one peer connection can make a node hold:
 * the size of each frame a peer of a given role may send, the bytes
 * queued to a peer that does not read, and the durability work (files
 * held open for fsync, batches queued) a primary can pile up on serve
 * behind a slow disk. Pure functions and constants, any thread; serve's
 * loop, the sender and `twinfs verify` apply them (docs/protocol.md,
 * "Limits").
 */
#ifndef TWINFS_LIMITS_H
#define TWINFS_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/wire/proto.h"

/* Every small frame a secondary sends (HELLO, ACK, HEARTBEAT, ERROR,
 * GOODBYE, ENTRY, ENTRIES_END, RESOLVE) fits in this; its lists (HASHES,
 * TAIL, DIVERGED) in the protocol's 256 KiB, its DATA (a resolution's
 * file versions) in PROTO_BLOCK_SIZE blocks. A larger header is refused
 * before its payload is waited for, so a peer cannot make a primary or a
 * verify client buffer 16 MiB for a frame it never needed. */
#define LIMITS_FROM_SECONDARY_MAX (16u << 10)

/* serve stops reading from its primary while more than this is queued to
 * it (ACKs and heartbeats: a primary that reads them never gets near), and
 * reads again below LIMITS_OUT_LOW. A primary that does not read for
 * PROTO_DEAD_BEATS heartbeats while over it is dropped. */
#define LIMITS_OUT_MAX (1u << 20)
#define LIMITS_OUT_LOW (256u << 10)

/* Batches queued for the syncer at most; reading resumes below half. */
#define LIMITS_SYNC_JOBS_MAX 256

/* serve applies frames for at most this long per pass of its loop, so
 * that heartbeats, the tick and the syncer's ACKs are not held up by a
 * read of many small frames (a primary drops a peer silent for
 * PROTO_DEAD_BEATS heartbeats). */
#define LIMITS_APPLY_SLICE_NS (50ull * 1000000ull)

/* Why serve stopped reading from its primary. */
enum limits_over {
	LIMITS_OK = 0,
	LIMITS_OVER_OUTPUT,	/* the primary does not read what we send */
	LIMITS_OVER_SYNC_FDS,	/* files held open for fsync behind the disk */
	LIMITS_OVER_SYNC_JOBS,	/* batches queued behind the disk */
	LIMITS_STORE_FULL,	/* the store refuses writes for want of room
				 * (serve sets it; limits_check never does) */
};

/* What the connection holds now. */
struct limits_use {
	size_t out_bytes;	/* queued to the peer */
	size_t sync_fds;	/* held open by the syncer's queue */
	size_t sync_jobs;	/* batches in the syncer's queue */
};

/*
 * Which cap U is over, or LIMITS_OK. PAUSED says reading is stopped
 * already: then a cap counts as over until use is back below its low
 * mark (half the cap, LIMITS_OUT_LOW for the output), so reading does
 * not flap on and off at the edge.
 */
enum limits_over limits_check(const struct limits_use *u, bool paused);
const char *limits_over_name(enum limits_over why);

/* Files the syncer's queue may hold open on behalf of the peer: a quarter
 * of the open-file limit, at most 2 * SYNCER_FSYNC_MAX. */
size_t limits_sync_fds_max(void);
/* Files one batch's touch set may hold before it is handed to the syncer:
 * an eighth of the open-file limit, at most RECV_TOUCH_MAX (4096). */
size_t limits_touch_max(void);

/*
 * proto_frame_next for frames from a peer of role FROM (enum proto_role):
 * from a secondary only the types it sends, each at most
 * LIMITS_FROM_SECONDARY_MAX bytes, checked from the header alone; from a
 * primary or a verifier the protocol's own limits. Returns as
 * proto_frame_next, and -EPROTO for a type the peer never sends or
 * -EMSGSIZE for a header over the cap (IN is left as it is).
 */
int limits_frame_next(struct evbuffer *in, unsigned from, struct proto_frame *f);
/* Makes the next close of FD reset the connection (SO_LINGER 0) instead
 * of leaving the kernel to deliver what is queued: a peer dropped for not
 * reading would otherwise hold up to a socket buffer of this node's
 * memory for minutes after the close. */
void limits_abort_on_close(int fd);
/* What a negative limits_frame_next result means, for a log line. */
const char *limits_frame_error(int rc);

#endif
