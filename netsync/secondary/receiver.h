/*
 * receiver — applies the replication stream (OP, DATA, ATTR, BATCH_END;
 * docs/protocol.md) to a secondary's store, in arrival order, and keeps
 * STATE/applied. Single-threaded: the serve loop owns it. Every function
 * returns 0 or -errno; -EINVAL means a path that is not allowed, -EBADMSG a
 * DATA block whose XXH3 does not match (nothing written), anything else an
 * error from the store (the text goes to the primary in ERROR{APPLY}).
 */
#ifndef TWINFS_RECEIVER_H
#define TWINFS_RECEIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "netsync/wire/proto.h"
#include "netsync/roles/state.h"
#include "netsync/secondary/syncer.h"

struct receiver;

struct receiver_stats {
	uint64_t applied_seq;	/* last seq durable in the store */
	bool dirty;		/* a batch is partly applied (STATE/applied says so) */
	uint64_t ops;		/* OPs applied (skipped ones not counted) */
	uint64_t data_bytes;	/* block bytes written */
	uint64_t batches;	/* BATCH_ENDs made durable */
};

/* Opens the store root and reads STATE/applied. STATE_DIR NULL: a
 * receiver for a mirror session, with no STATE/applied and no per-file
 * fsyncs (the session ends with a syncfs of the store); only receiver_op,
 * _data, _attr, _prune and receiver_store_fd are then used. Returns 0 or
 * -errno. */
int receiver_open(const char *store_dir, const char *state_dir, struct receiver **out);
void receiver_close(struct receiver *r);

/* When one batch has touched SYNCER_FSYNC_MAX files before its end, the
 * set so far goes to FN (which takes it: fsyncs it now, e.g. on the sync
 * thread, and returns 0 or -errno; no seq becomes durable by it) and a
 * new one starts. Without FN the set is fsynced on the spot. */
typedef int (*receiver_spill_fn)(struct sync_set *set, void *arg);
void receiver_set_spill(struct receiver *r, receiver_spill_fn fn, void *arg);

int receiver_op(struct receiver *r, const struct proto_op *m);
/* Verifies the block's XXH3 first; writes only if it matches. */
int receiver_data(struct receiver *r, const struct proto_data *m);
int receiver_attr(struct receiver *r, const struct proto_attr *m);
/* Collects a PRUNE's names; at the last frame of a directory removes
 * every entry of it (whole subtrees) that the sender did not name.
 * Returns 0 or -errno (receiver_failed_path names the entry). */
int receiver_prune(struct receiver *r, const struct proto_prune *m);
/* Makes everything applied durable (fsync of what the batch touched, or
 * syncfs of the store when it touched many files), then records
 * seq in STATE/applied (atomically, durably, dirty 0). After 0 the caller
 * may ACK seq. */
int receiver_batch_end(struct receiver *r, uint64_t seq);
/*
 * The same in two steps, so that the sync can run off the loop while the
 * next batch is applied (serve does this with netsync/syncer.h):
 * receiver_batch_seal: BATCH_END seq arrived; everything applied so far
 * belongs to seq. Returns 1 and in *set what must be synced (the files
 * and directories touched since the last seal, or the whole filesystem)
 * before seq is durable; 0 if seq already is durable (ack at once).
 * receiver_batch_durable: that sync finished; records seq in
 * STATE/applied (dirty if anything was applied after the seal).
 */
int receiver_batch_seal(struct receiver *r, uint64_t seq, struct sync_set *set);
int receiver_batch_durable(struct receiver *r, uint64_t seq);
/*
 * Pipelined durability (serve, with netsync/syncer.h): after the sync of a
 * sealed batch, the sync thread itself records (seq, dirty) in STATE/applied
 * through receiver_applied_file(); then the loop calls
 * receiver_batch_committed(seq) and may ACK. receiver_idle() writes the
 * file clean once nothing is pending (call it when the stream is idle);
 * returns 1 if it did, 0 if not needed or not possible yet, or -errno.
 */
void receiver_batch_committed(struct receiver *r, uint64_t seq);
int receiver_idle(struct receiver *r);
struct state_applied *receiver_applied_file(const struct receiver *r);
/* True if the store may hold changes after applied_seq (applied but not
 * durable yet, or a half-applied batch from before a restart): the HELLO
 * flag that tells the primary that replay alone is not enough. */
bool receiver_beyond_applied(const struct receiver *r);
/* Moves the recorded position to SEQ (durably), before a stream that
 * resumes there: a demoted primary's journal went on past the seq where
 * its new primary's generation began, and it takes that generation's
 * changes from there (docs/protocol.md, "Generations"). 0 or -errno. */
int receiver_set_position(struct receiver *r, uint64_t seq);
/*
 * A split brain's stream (docs/protocol.md, "Split brain"): the primary
 * replays its changes from COMMON, the seq both nodes last shared, in its
 * own seq space. receiver_split_begin records STATE/applied dirty at this
 * node's own seq (durably: whatever happens next, the next HELLO says the
 * store is beyond it), then applies from COMMON without recording any seq
 * of that stream; receiver_split_end, when the connection ends, goes back
 * to this node's own seq. 0 or -errno.
 */
int receiver_split_begin(struct receiver *r, uint64_t common);
void receiver_split_end(struct receiver *r);
/* An fd on the store's root directory for syncfs (owned by the receiver). */
int receiver_store_fd(const struct receiver *r);
/* The connection ended: closes cached file descriptors. */
void receiver_reset(struct receiver *r);
/* Names in the store may have changed behind R's back (another receiver
 * on the same store applied a rename, a removal, a new folder): drops
 * the fds R keeps by path. */
void receiver_forget(struct receiver *r);

void receiver_get_stats(const struct receiver *r, struct receiver_stats *st);
/* The path of the last failed operation ("" if none), for error texts. */
const char *receiver_failed_path(const struct receiver *r);

#endif
