/*
 * jage — the age of the oldest change the peer does not hold: the
 * recovery point if this node died now (`lag_seconds` in status). Owns
 * the journal's pend_since and its list of taken, unacknowledged batches
 * with the time of each one's oldest change. Every function runs with the
 * journal's mu held, on whichever thread holds it; jage_note_locked is on
 * the FUSE write path and costs a load and a branch except for the first
 * change after each take.
 */
#ifndef TWINFS_JAGE_H
#define TWINFS_JAGE_H

#include <stdint.h>

#include "common/clock.h"

struct journal;

/* A batch taken and not yet acknowledged: its end seq and the wall-clock
 * time (ns) of its oldest change. */
struct jage {
	uint64_t end_seq;
	uint64_t since_ns;
};

/* A change was made now (a record other than BATCH, marked data, a
 * pinned passthrough writer). */
#define jage_note_locked(j)						\
	do {								\
		if (!(j)->pend_since_ns)				\
			(j)->pend_since_ns = clock_real_coarse_ns();	\
	} while (0)

/* A take ending at END_SEQ took what was pending; LEFT: it left dirty
 * files behind (their age stays pending). Returns the batch's oldest
 * change time (0: none known) for its BATCH record. */
uint64_t jage_take_locked(struct journal *j, uint64_t end_seq, int left);
/* Changes of a batch (oldest SINCE_NS) are pending again: requeued or
 * not taken after all. */
void jage_fold_locked(struct journal *j, uint64_t since_ns);
/* The peer holds everything up to ACKED. */
void jage_ack_locked(struct journal *j, uint64_t acked);
/* Wall-clock ns of the oldest change the peer does not hold; 0: none. */
uint64_t jage_oldest_locked(struct journal *j);
/* Recovery: a BATCH record at SEQ found after the ack, with the times it
 * carries (op.mtime: its oldest change; op.atime: when it was taken). */
int jage_recover_batch_locked(struct journal *j, uint64_t seq, uint64_t since_ns,
			      uint64_t taken_ns);
/* Recovery done: changes after the last recovered batch (or all, without
 * one) are pending from the best lower bound known: that batch's take
 * time, else OLDEST_MARK_NS (the first mark of the epoch), else now. */
void jage_recover_end_locked(struct journal *j, uint64_t oldest_mark_ns);
void jage_free(struct journal *j);

#endif
