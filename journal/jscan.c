/*
 * jscan — the journal's needs-scan bookkeeping: NEEDS_SCAN records for
 * paths the journal could not describe (overflow, recovery, the mount-time
 * store scan of netsync/delta), and the set of paths already scanned whole
 * in this epoch, so that a path below one is not recorded again. Called
 * with or without mu as each function says; any thread.
 */
#include "journal/journal.h"

#include <errno.h>
#include <stdint.h>

#include "common/pathset.h"
#include "journal/journal_int.h"

/* Records that path must be rescanned (whole, or with JSCAN_NAMES its
 * names only). A names-only scan covers nothing below it, so it is not
 * kept in the needs_scan set. Returns a seq. mu held. */
static int64_t journal_needs_scan_flags_locked(struct journal *j, const char *path,
					       uint32_t flags)
{
	struct journal_op op = { .type = JOP_NEEDS_SCAN, .path = path, .flags = flags };
	int64_t seq;

	/* Covered only by a whole scan not taken yet: the sender reads the
	 * store for it later, so it sees this change too. One already taken
	 * (in a batch sent, or being sent) may have read the store before
	 * this change: the change needs a record of its own. (Before, a
	 * change below a folder rescanned earlier in the epoch was dropped,
	 * and `twinfs sync` exited 0 with the peer behind.) */
	if (pathset_covering(&j->needs_scan, path,
			     (j->taking_end > j->sent_seq ? j->taking_end : j->sent_seq) + 1))
		return (int64_t)j->head_seq;
	journal_mark_time(&op);
	seq = journal_append_locked(j, &op, true);
	if (seq < 0 || (flags & JSCAN_NAMES))
		return seq;
	switch (pathset_add(&j->needs_scan, path, (uint64_t)seq)) {
	case 0:		/* recorded before, taken since: it covers from here */
		pathset_find(&j->needs_scan, path)->value = (uint64_t)seq;
		break;
	case 1:
		break;
	default:
		return -ENOMEM;
	}
	return seq;
}

/* Records that path must be rescanned whole (overflow). mu held. */
int64_t journal_needs_scan_locked(struct journal *j, const char *path)
{
	return journal_needs_scan_flags_locked(j, path, 0);
}

int64_t journal_needs_scan(struct journal *j, const char *path, uint32_t flags)
{
	int64_t seq;

	if (!journal_path_ok(path) || (flags & ~JSCAN_NAMES))
		return -EINVAL;
	pthread_mutex_lock(&j->mu);
	seq = journal_needs_scan_flags_locked(j, path, flags);
	if (seq > 0)
		journal_notify_locked(j);
	pthread_mutex_unlock(&j->mu);
	return seq;
}


/*
 * A rescan of the whole store is owed when records were lost in the middle
 * of the journal (recovery dropped the segments after a hole) or a
 * NEEDS_SCAN could not be appended when it was needed: only it is sure to
 * cover what is missing. The flag outlives a failed append; journal_open
 * tries first, every take_batch again before its BATCH record (and fails
 * until it succeeds), journal_close last, so the rescan is never dropped
 * in silence.
 */
int journal_rescan_locked(struct journal *j)
{
	struct journal_op op = { .type = JOP_NEEDS_SCAN, .path = "" };
	int64_t seq;

	if (!j->rescan_owed)
		return 0;
	journal_mark_time(&op);
	seq = journal_append_locked(j, &op, true);
	if (seq < 0)
		return (int)seq;
	j->rescan_owed = false;
	return 0;
}
