/*
 * linkrx — a receiving thread for a link (link.h) and the bounded queue of
 * whole frames it fills, so that taking bytes off the socket (the copy out
 * of the kernel, the frame checks) runs beside the thread that acts on the
 * frames. The consumer reads frames in order with linkrx_next, exactly as
 * with link_recv, and may keep sending on the link (split mode). Used by
 * serve's mirror sessions, whose applying thread is the bottleneck.
 */
#ifndef TWINFS_LINKRX_H
#define TWINFS_LINKRX_H

#include <stdbool.h>
#include <stddef.h>

#include "netsync/wire/link.h"

struct linkrx;

/* Starts the thread on L (plaintext, HELLO done; L becomes split). At
 * most MAX_BYTES of frames wait in the queue. 0 or -errno. */
int linkrx_start(struct link *l, size_t max_bytes, struct linkrx **out);
/*
 * The next frame: 1 and *F (valid until the next call), 0 at once when
 * none is queued and WAIT is false, or how the reading ended once every
 * frame before was taken: -ECONNRESET (end of stream), -EBADMSG (a bad
 * frame), -ETIMEDOUT, -errno. The consumer's thread only.
 */
int linkrx_next(struct linkrx *r, struct proto_frame *f, bool wait);
/* A reference to the slab of the frame linkrx_next returned last (release
 * with link_slab_put, any thread), so it outlives the next call. */
struct link_slab *linkrx_hold(struct linkrx *r);
/* Shuts the link's read side, joins the thread and frees the queue; the
 * link itself stays open (not split any more). NULL is a no-op. */
void linkrx_stop(struct linkrx *r);

#endif
