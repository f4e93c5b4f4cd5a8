/*
 * prefetch — the mirror client's read-ahead: a thread goes through the
 * plan's whole-file items (PLAN_FILE, PLAN_REPLACE) in plan order, reads
 * each file once into pooled blocks, hashes each block once, and encodes
 * the item's frames (CREATE, xattrs, DATA by reference to the block, ATTR;
 * a replacement under a temporary name, then RENAME). The client's thread
 * takes the encoded chunks in the same order and sends them, so reading
 * and hashing run beside sending, and small files go out many per send.
 * The pool bounds what is read ahead (PREFETCH_AHEAD bytes).
 */
#ifndef TWINFS_PREFETCH_H
#define TWINFS_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/delta/plan.h"

#define PREFETCH_AHEAD (32u << 20)

struct prefetch;

struct prefetch_chunk {
	size_t item;		/* the plan item it belongs to */
	struct evbuffer *buf;	/* its frames (the caller's to free or move) */
	bool last;		/* the item's last chunk */
	int rc;			/* -errno: the item failed, err says why */
	uint64_t data;		/* content bytes in buf */
	bool sent;		/* last: the file went (not vanished meanwhile) */
	uint64_t size;		/* last and sent: its size as sent */
	char err[256];
};

/* Starts the thread on the plan PL (which must outlive it) for the tree
 * open at ROOTFD; SEQ is the OPs' seq. 0 or -errno. */
int prefetch_start(int rootfd, const struct plan *pl, uint64_t seq, struct prefetch **out);
/* The next chunk in plan order: 1 and *C, or 0 at once when none is ready
 * and WAIT is false. The client's thread only. */
int prefetch_next(struct prefetch *p, struct prefetch_chunk *c, bool wait);
/* Stops the thread (waiting for it) and frees what was not taken. */
void prefetch_stop(struct prefetch *p);

/*
 * The replicated xattrs (common/xattrname.h) of the source's PATH (FD open
 * on it, or -1: by name under ROOTFD, never following it) as the whole
 * xattr state of PEER_PATH on the peer: REMOVEXATTR with the keep-list,
 * then a SETXATTR per name (docs/protocol.md, "Whole xattr state"),
 * appended to OUT. 0, -EINVAL (a name or value the wire cannot carry), or
 * -ENOMEM. Any thread.
 */
int prefetch_xattrs(int rootfd, int fd, const char *path, const char *peer_path,
		    uint64_t seq, struct evbuffer *out);
/*
 * A write or a chown drops a file's capabilities (security.capability) on
 * the peer, and a file's xattrs go before its DATA and ATTR: where the
 * source file open on FD has them, a SETXATTR of them as PEER_PATH's, to
 * follow its ATTR, appended to OUT. 0 or -EINVAL. Any thread.
 */
int prefetch_caps(int fd, const char *peer_path, uint64_t seq, struct evbuffer *out);

#endif
