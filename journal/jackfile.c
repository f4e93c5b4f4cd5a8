/*
 * jackfile — the ack file's writer (thread tw-ackfile): moves
 * STATE/journal/acked forward once the store is durable, and deletes the
 * segments it passed. journal_ack (sender thread) only says how far the
 * ack file may go (ackfile_want); journal_ackfile_flush waits for it.
 *
 * Why a syncfs of the store first. The ack file is where recovery
 * resumes, and it passes an epoch's marks once the peer holds everything
 * they cover. The peer holding a change is not enough: this node's copy
 * of it may still be only in the page cache. After a power cut the store
 * would lose it while the ack file says nothing needs a re-check; the
 * peer would keep a version this node no longer has, and `twinfs sync`
 * would call the pair synced (tests/e2e/replication_power_loss.sh: STATE
 * on another file system than the store, so the journal's own fsyncs do
 * not commit the store's metadata). A syncfs that starts after the peer's
 * ack makes everything the peer holds as of that ack durable here too:
 * the sender read it from the store before the ack came. A crash before
 * the ack file moves only re-checks more (the marks are still there).
 *
 * Off the sender's thread: after a large copy, a syncfs waits for all of
 * its writeback, seconds on a slow disk, and a sender that stopped
 * sending that long would have the peer call the link dead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "journal/journal.h"
#include "journal/journal_int.h"
#include "journal/jseg.h"

#define JACKFILE_RETRY_MS 1000
/* At most one store sync a second: a mount that writes a little every
 * 100 ms ends an epoch as often, and each syncfs costs a device flush the
 * writer never asked for. The ack file then lags the peer by up to this
 * much more, which a crash pays for with a longer re-check. */
#define JACKFILE_INTERVAL_MS 1000

/* Segments wholly at or below the ack file, oldest first, taken out of
 * j->segs; their first seqs go to *dead (malloc'd). Never the last
 * segment: the committer may be appending to it. mu held. */
static size_t jackfile_dead_locked(struct journal *j, uint64_t **dead)
{
	size_t k = 0;

	*dead = malloc((j->nsegs ? j->nsegs : 1) * sizeof(**dead));
	if (!*dead)
		return 0;
	while (k + 1 < j->nsegs && j->segs[k].last_seq <= j->file_acked) {
		(*dead)[k] = j->segs[k].first_seq;
		j->disk_bytes -= j->segs[k].bytes;
		k++;
	}
	if (k) {
		memmove(j->segs, j->segs + k, (j->nsegs - k) * sizeof(*j->segs));
		j->nsegs -= k;
	}
	return k;
}

/* The store durable, then the ack file at WANT, then the segments it
 * passed deleted. 0 or -errno (nothing moved; the caller retries, and
 * REPORT is false while the same failure repeats: one log line a series). */
static int jackfile_advance(struct journal *j, uint64_t want, bool report)
{
	uint64_t *dead = NULL;
	size_t n_dead;
	int rc = 0;

	if (syncfs(j->rootfd) < 0) {
		rc = -errno;
		if (report)
			log_error("cannot make the store durable; the journal keeps what the "
				  "peer acknowledged until it can (retried every second)",
				  "store=%s err=%s", j->store, strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&j->ack_mu);
	rc = jseg_ack_write(j->dirfd, want);
	if (rc < 0) {
		pthread_mutex_unlock(&j->ack_mu);
		if (report)
			log_error("cannot write the journal ack file; acked records stay on "
				  "disk (retried every second)", "dir=%s err=%s", j->dir,
				  strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&j->mu);
	if (want > j->file_acked)
		j->file_acked = want;
	j->n_store_syncs++;
	n_dead = jackfile_dead_locked(j, &dead);
	pthread_mutex_unlock(&j->mu);
	pthread_mutex_unlock(&j->ack_mu);

	for (size_t i = 0; i < n_dead; i++) {
		char name[JSEG_NAME_MAX];

		jseg_name(name, sizeof name, dead[i]);
		if (unlinkat(j->dirfd, name, 0) < 0 && errno != ENOENT)
			log_warn("cannot delete an acked journal segment", "dir=%s seg=%s err=%s",
				 j->dir, name, strerror(errno));
	}
	free(dead);
	pthread_mutex_lock(&j->mu);
	if (want > j->ackfile_done_seq)
		j->ackfile_done_seq = want;
	pthread_cond_broadcast(&j->ackfile_cv);
	pthread_mutex_unlock(&j->mu);
	return 0;
}

void *journal_ackfile_main(void *arg)
{
	struct journal *j = arg;
	bool failing = false;
	uint64_t last_ns = 0;

	pthread_setname_np(pthread_self(), "tw-ackfile");
	pthread_mutex_lock(&j->mu);
	for (;;) {
		uint64_t want;
		int rc;

		while (j->ackfile_want <= j->file_acked && !j->ackfile_stop)
			pthread_cond_wait(&j->ackfile_cv, &j->mu);
		if (j->ackfile_want <= j->file_acked || (failing && j->ackfile_stop))
			break;
		if (last_ns && !j->ackfile_stop &&
		    clock_mono_ns() < last_ns + JACKFILE_INTERVAL_MS * 1000000ull) {
			struct timespec ts;

			journal_timeout_at(&ts, last_ns + JACKFILE_INTERVAL_MS * 1000000ull);
			pthread_cond_timedwait(&j->ackfile_cv, &j->mu, &ts);
			continue;
		}
		want = j->ackfile_want;
		pthread_mutex_unlock(&j->mu);
		rc = jackfile_advance(j, want, !failing);
		pthread_mutex_lock(&j->mu);
		if (rc == 0)
			last_ns = clock_mono_ns();
		if (rc == 0 && failing)
			log_notice("the journal's ack file moves again", "dir=%s seq=%" PRIu64,
				   j->dir, want);
		failing = rc < 0;
		if (failing && !j->ackfile_stop) {
			struct timespec ts;

			journal_timeout_at(&ts, clock_mono_ns() + JACKFILE_RETRY_MS * 1000000ull);
			pthread_cond_timedwait(&j->ackfile_cv, &j->mu, &ts);
		}
	}
	j->ackfile_done = true;
	pthread_cond_broadcast(&j->ackfile_cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

int journal_ackfile_flush(struct journal *j, int timeout_ms)
{
	uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int rc = 0;

	pthread_mutex_lock(&j->mu);
	while (j->ackfile_done_seq < j->ackfile_want && !j->ackfile_done) {
		struct timespec ts;

		journal_timeout_at(&ts, deadline);
		if (pthread_cond_timedwait(&j->ackfile_cv, &j->mu, &ts) == ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	if (!rc && j->ackfile_done_seq < j->ackfile_want)
		rc = -EIO;
	pthread_mutex_unlock(&j->mu);
	return rc;
}
