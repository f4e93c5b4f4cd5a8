/*
 * jage — the age of the oldest change the peer lacks (jage.h). Runs under
 * the journal's mu on whichever thread holds it (FUSE threads noting a
 * change, the sender taking batches and acking, journal_open recovering).
 *
 * Design: a change not yet in a batch is pending since pend_since (the
 * first such change after the previous take: one coarse clock read per
 * batch, not per write). A take moves that time into a list of taken
 * batches keyed by end seq; an ack drops the batches it covers. The
 * oldest change the peer lacks is the least of pend_since and the times
 * in the list. A batch put back (requeue, files with no fd to send them)
 * folds its time back into pend_since, so a retry never makes a change
 * look younger. The time goes into the batch's BATCH record on disk, so
 * after a restart the batches after the ack keep their age
 * (docs/journal.md, "Lag in seconds").
 */
#include "journal/jage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "journal/journal_int.h"

/* Adds (or merges into the last) an entry; -ENOMEM leaves the time in
 * pend_since instead, so it is never lost, only kept longer. */
static int jage_push(struct journal *j, uint64_t end_seq, uint64_t since_ns)
{
	struct jage *last = j->n_ages ? &j->ages[j->n_ages - 1] : NULL;

	if (!since_ns)
		return 0;
	if (last && last->end_seq >= end_seq) {
		/* the same BATCH record taken again after a requeue */
		if (since_ns < last->since_ns)
			last->since_ns = since_ns;
		return 0;
	}
	if (ARRAY_GROW(j->ages, j->cap_ages, j->n_ages + 1, 16) < 0)
		return -ENOMEM;
	j->ages[j->n_ages++] = (struct jage){ end_seq, since_ns };
	return 0;
}

uint64_t jage_take_locked(struct journal *j, uint64_t end_seq, int left)
{
	uint64_t since = j->pend_since_ns;

	if (jage_push(j, end_seq, since) < 0)
		return since;	/* stays pending (see jage_push) */
	if (!left)
		j->pend_since_ns = 0;
	return since;
}

void jage_fold_locked(struct journal *j, uint64_t since_ns)
{
	if (since_ns && (!j->pend_since_ns || since_ns < j->pend_since_ns))
		j->pend_since_ns = since_ns;
}

void jage_ack_locked(struct journal *j, uint64_t acked)
{
	size_t k = 0;

	while (k < j->n_ages && j->ages[k].end_seq <= acked)
		k++;
	if (k) {
		memmove(j->ages, j->ages + k, (j->n_ages - k) * sizeof(*j->ages));
		j->n_ages -= k;
	}
}

uint64_t jage_oldest_locked(struct journal *j)
{
	uint64_t oldest;

	/* Nothing pending at all: a pinned file unpinned without a write, say,
	 * leaves no change behind to age. */
	if (j->head_seq <= j->acked_seq && !j->dirty_head && !j->lost_paths.n &&
	    !j->n_pins && !j->rescan_owed) {
		j->pend_since_ns = 0;
		return 0;
	}
	oldest = j->pend_since_ns;

	for (size_t i = 0; i < j->n_ages; i++)
		if (j->ages[i].since_ns && (!oldest || j->ages[i].since_ns < oldest))
			oldest = j->ages[i].since_ns;
	return oldest;
}

int jage_recover_batch_locked(struct journal *j, uint64_t seq, uint64_t since_ns,
			      uint64_t taken_ns)
{
	j->age_last_batch = seq;
	j->age_last_taken_ns = taken_ns;
	return jage_push(j, seq, since_ns);
}

void jage_recover_end_locked(struct journal *j, uint64_t oldest_mark_ns)
{
	uint64_t after = j->age_last_batch > j->acked_seq ? j->age_last_batch : j->acked_seq;

	jage_ack_locked(j, j->acked_seq);	/* only batches after the ack age */

	if (j->head_seq <= after && !j->dirty_head && !j->lost_paths.n && !j->rescan_owed)
		return;	/* nothing after the last batch */
	if (j->age_last_batch > j->acked_seq && j->age_last_taken_ns)
		j->pend_since_ns = j->age_last_taken_ns;
	else if (oldest_mark_ns)
		j->pend_since_ns = oldest_mark_ns;
	else
		j->pend_since_ns = clock_real_coarse_ns();
}

void jage_free(struct journal *j)
{
	free(j->ages);
	j->ages = NULL;
	j->n_ages = j->cap_ages = 0;
}
