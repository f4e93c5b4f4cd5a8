/*
 * mirror — the convergence engine's client: makes the tree of a peer (or
 * subtrees of it) equal to a source tree over a link whose HELLO is done
 * (netsync/wire/link.h). Both sides walk at once (the source here on a
 * thread, the peer its store), the peer streams its entries, the plan
 * (netsync/delta/plan.h) says what differs, and the changes stream back
 * with no round trip per file: whole files for new and small ones, a
 * block-hash delta (HASH_REQ/HASHES, then DATA of the differing blocks and
 * a FILE_CHECK) for changed large ones, renames, links, attributes, PRUNE
 * for --delete; one BATCH_END makes it durable. The users: `twinfs mirror`
 * (a serve peer or a local folder), and anyone resyncing paths of a store
 * against a peer (e.g. after a failover: MIRROR_OPTS roots). Runs on the
 * caller's thread (plus its walk thread); blocking IO.
 */
#ifndef TWINFS_MIRROR_H
#define TWINFS_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct exclude;
struct hashcache;
struct link;

#define MIRROR_BLOCK_SIZE (128u << 10)	/* default delta.block_size */

struct mirror_opts {
	bool delete;		/* remove what the source lacks */
	bool dry_run;		/* plan and report only; the peer is not changed */
	bool checksum;		/* compare content digests, read fresh on both sides */
	uint32_t block_size;	/* delta block (0: MIRROR_BLOCK_SIZE) */
	const struct exclude *exclude;	/* may be NULL */
	/* Subtrees to converge, relative to the source root (NULL/0: the
	 * whole tree). Each is compared and sent as a unit; a root the
	 * source lacks is removed on the peer with delete. */
	const char *const *roots;
	size_t n_roots;
	struct hashcache *cache;	/* the source's digests (may be NULL) */
	bool progress;		/* a progress line on stderr */
	/* One --itemize line per item, in order (may be NULL). */
	void (*item)(const char *line, void *arg);
	void *item_arg;
};

struct mirror_stats {
	uint64_t entries_src, entries_peer;	/* scanned */
	uint64_t files_whole, bytes_whole;	/* sent whole */
	uint64_t files_delta;			/* updated by delta */
	uint64_t bytes_delta;			/* block bytes sent for them */
	uint64_t bytes_matched;			/* block bytes the peer had */
	uint64_t renamed, linked, deleted, meta, created_other, unchanged;
	uint64_t bytes_read;			/* source content read */
	uint64_t wire_tx, wire_rx;		/* bytes on the link */
	double seconds;
	char error[512];			/* why, when it failed */
};

/*
 * Converges the peer on SRC_ROOT. Returns 0, or -errno with a one-line
 * reason in st->error: -ENOENT/-ENOTDIR (the source), -ECONNREFUSED (the
 * peer refused, its reason quoted), -EBADMSG (a malformed or inconsistent
 * answer: entries out of order or escaping the tree, a bad hash list),
 * -EIO and others (the peer failed to apply: its text), -ETIMEDOUT.
 */
int mirror_run(struct link *l, const char *src_root, const struct mirror_opts *o,
	       struct mirror_stats *st);

#endif
