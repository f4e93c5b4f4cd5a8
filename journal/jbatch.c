/*
 * jbatch — the sender's side of the journal (journal/journal.h): taking
 * batches, putting them back, acks, rewinds and the end of an epoch.
 * Runs on the sender (primary) thread; shares struct journal with
 * journal.c through journal_int.h. Reads segment files; says how far the
 * ack file may go (jackfile.c writes it); never touches the store's data.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "journal/journal.h"
#include "journal/journal_int.h"
#include "journal/jrec.h"

/* A dirty inode taken out of the table for one batch: the journal's fd
 * (moved out of the inode) or a copy of its file handle. */
struct jtaken {
	uint64_t ino;
	int fd;
	struct file_handle *fh;
	bool whole;
	bool recovered;
	struct rangeset ranges;
};

void journal_batch_free(struct journal_batch *b)
{
	struct jbatch *jb = (struct jbatch *)b;

	if (!b)
		return;
	for (size_t i = 0; i < b->n_files; i++) {
		free(b->files[i].path);
		free(b->files[i].ranges);
		if (b->files[i].fd >= 0)
			close(b->files[i].fd);
	}
	free(b->files);
	free(b->recs);
	free(jb->raw);
	free(jb);
}

/*
 * Copies records first..end from the segment files into jb->raw and
 * decodes them into b->recs. The records are durable (take_batch waited),
 * so the committer only ever appends beyond them. segs is a snapshot of
 * the segment list. Caller holds the ns lock (which serialises takes and
 * owns the read cursor), not mu.
 */
static int jbatch_read_recs(struct journal *j, const struct jseg_info *segs, size_t nsegs,
			    uint64_t first, uint64_t end, struct jbatch *jb)
{
	size_t raw_len = 0, raw_cap = 0, n = 0, want = (size_t)(end - first + 1);
	struct journal_batch *b = &jb->b;
	uint64_t expect = first;
	size_t si = 0;
	int rc = 0;

	b->recs = calloc(want, sizeof(*b->recs));
	if (!b->recs)
		return -ENOMEM;
	while (si < nsegs && !(segs[si].last_seq >= first && segs[si].first_seq <= first))
		si++;
	for (; si < nsegs && expect <= end; si++) {
		struct jseg_reader r;
		const uint8_t *rec;
		uint64_t seq, off;
		int64_t len;

		rc = jseg_reader_open(&r, j->dirfd, segs[si].first_seq);
		if (rc < 0)
			goto out;
		if (j->rd_seq == expect && j->rd_seg == segs[si].first_seq)
			jseg_reader_seek(&r, j->rd_off);
		while (expect <= end) {
			len = jseg_reader_next(&r, &rec, &seq, &off);
			if (len <= 0)
				break;
			if (seq < expect)
				continue;
			if (seq != expect) {
				len = -EBADMSG;
				break;
			}
			if (ARRAY_GROW(jb->raw, raw_cap, raw_len + (size_t)len, 256 * 1024) < 0) {
				len = -ENOMEM;
				break;
			}
			memcpy(jb->raw + raw_len, rec, (size_t)len);
			raw_len += (size_t)len;
			expect++;
			j->rd_seq = expect;
			j->rd_seg = segs[si].first_seq;
			j->rd_off = off + (uint64_t)len;
		}
		jseg_reader_close(&r);
		if (len < 0) {
			rc = (int)len;
			goto out;
		}
	}
	if (expect <= end) {
		rc = -EIO;
		goto out;
	}
	for (size_t pos = 0; pos < raw_len; n++) {
		uint64_t seq;
		int64_t len = jrec_check(jb->raw + pos, raw_len - pos, &seq);

		if (len < 0 || jrec_decode(jb->raw + pos, (size_t)len, &b->recs[n]) < 0) {
			rc = -EBADMSG;
			goto out;
		}
		pos += (size_t)len;
	}
	b->n_recs = n;
out:
	if (rc < 0) {
		j->rd_seq = 0;
		log_error("journal cannot read back its records; the peer will need a "
			  "full resync", "dir=%s first=%" PRIu64 " end=%" PRIu64 " err=%s",
			  j->dir, first, end, strerror(-rc));
	}
	return rc;
}

/*
 * Turns one taken inode into a batch file: path as of now (the ns lock
 * is held), a read-only fd owned by the batch, ranges. An inode known by
 * handle is opened here: this is the only place the journal spends fds
 * on dirty files, at most journal_batch_files per batch. Returns 0,
 * -ENOENT when the inode is gone (the caller drops it), -EMFILE/-ENFILE
 * (the caller leaves it dirty for a later batch), -ESTALE when it exists
 * but has no path under the store (the caller has it rescanned), -errno.
 */
static int jbatch_resolve(struct journal *j, struct jtaken *t, struct journal_dirty *f)
{
	bool disconnected = false;
	char link[64];
	struct stat st;
	int rc, rfd;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (t->fd < 0 && t->fh) {
		rc = jhandle_open(j->rootfd, t->fh, &disconnected);
		if (rc == -ESTALE)
			return -ENOENT;	/* unlinked and evicted: nothing to send */
		if (rc < 0)
			return rc;
		t->fd = rc;
	}
	if (t->fd < 0)
		return -ENOENT;
	rc = journal_fd_path(j, t->fd, &f->path);
	if (rc < 0) {
		/* nlink > 0 but no name under the store: moved and evicted, or
		 * the fd (ours, or the one open_by_handle_at picked: the kernel
		 * may hand back the alias an fd still pins) names a link that
		 * was removed while others remain. The data must still go:
		 * dropping it left a hard-linked file's write off the peer. */
		if (rc == -ENOENT && (disconnected ||
		    (fstat(t->fd, &st) == 0 && st.st_nlink > 0)))
			return -ESTALE;
		return rc;
	}
	if (fstat(t->fd, &st) < 0)
		return -errno;
	/* The fs may have handed us a write-only fd, a handle gives O_PATH;
	 * the sender must read. Only regular files and directories are
	 * reopened (a FIFO would block, a device must not be opened). */
	rfd = -1;
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		snprintf(link, sizeof link, "/proc/self/fd/%d", t->fd);
		rfd = open(link, O_RDONLY | O_CLOEXEC);
		if (rfd < 0 && (errno == EMFILE || errno == ENFILE))
			return -errno;
	}
	if (rfd >= 0) {
		close(t->fd);
	} else {
		rfd = t->fd;
	}
	t->fd = -1;
	f->fd = rfd;
	f->ino = t->ino;
	f->whole = t->whole;
	f->recovered = t->recovered;
	if (f->whole) {
		if (S_ISREG(st.st_mode))
			f->bytes = (uint64_t)st.st_size;
		return 0;
	}
	f->ranges = malloc((t->ranges.n ? t->ranges.n : 1) * sizeof(*f->ranges));
	if (!f->ranges)
		return -ENOMEM;
	for (size_t i = 0; i < t->ranges.n; i++) {
		f->ranges[i].off = t->ranges.v[i].off;
		f->ranges[i].len = t->ranges.v[i].end - t->ranges.v[i].off;
	}
	f->n_ranges = t->ranges.n;
	f->bytes = t->ranges.bytes;
	return 0;
}

static void jbatch_add_lost(const struct pathset_entry *e, void *arg)
{
	struct journal_batch *b = arg;
	struct journal_dirty *f = &b->files[b->n_files];

	memset(f, 0, sizeof(*f));
	f->path = strdup(e->path);
	if (!f->path)
		return;
	f->fd = -1;
	f->whole = true;
	f->recovered = true;
	b->n_files++;
}

/* A taken inode that could not be opened for lack of fds goes back to the
 * dirty list (its ranges merged into newer ones). mu held. */
static void jbatch_untake_locked(struct journal *j, struct jtaken *t)
{
	struct jinode *e = journal_inode_find(j, t->ino);

	if (!e)
		return;	/* forgotten meanwhile: gone */
	if (!e->fh && e->fd < 0 && t->fd >= 0) {
		e->fd = t->fd;
		t->fd = -1;
		j->n_fds++;
	}
	if (!e->fh && e->fd < 0 && t->fh) {
		e->fh = t->fh;
		t->fh = NULL;
	}
	for (size_t k = 0; !t->whole && !e->whole && k < t->ranges.n; k++)
		if (rangeset_add(&e->ranges, t->ranges.v[k].off,
				 t->ranges.v[k].end - t->ranges.v[k].off) < 0)
			e->whole = true;
	if (t->whole || e->ranges.n > JOURNAL_RANGES_MAX)
		e->whole = true;
	if (e->whole)
		rangeset_clear(&e->ranges);
	e->recovered |= t->recovered;
	journal_inode_dirty(j, e);
}

/*
 * A barrier take that could not take every dirty file (the batch file cap,
 * or no fds to open them) does not answer the barrier: an ack of its end
 * would tell a waiter "on the peer" while files written before the
 * barrier are still here. Seqs cannot be reserved (concurrent appends),
 * so instead acks are held below the lowest barrier seq handed out
 * (journal_ack records at most floor - 1) until a later take that did
 * take everything is acked; the next takes stay barrier takes meanwhile.
 * mu held.
 */
static void jbatch_barrier_incomplete_locked(struct journal *j, uint64_t floor, uint64_t end)
{
	if (!floor)
		floor = end;
	if (!j->barrier_seq)
		j->barrier_seq = end;
	if (!j->barrier_floor || floor < j->barrier_floor)
		j->barrier_floor = floor;
	if (!j->ack_hold || floor < j->ack_hold)
		j->ack_hold = floor;
	j->ack_release = 0;
}

/* Files one batch may take: journal_batch_files, and never more than a
 * sixteenth of the open-file limit. A batch keeps its fds until the peer
 * acks it and up to three are out at once (two unacked, one streaming),
 * so batches hold at most a quarter (netsync/primary/sender.c also stops taking
 * past that); the fs keeps its inode table within what is left
 * (fs/evict.c). */
static size_t jbatch_file_cap(void)
{
	size_t cap = journal_batch_files ? journal_batch_files : 1;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 16 < cap)
		cap = rl.rlim_cur / 16 ? (size_t)(rl.rlim_cur / 16) : 1;
	return cap;
}

/* Notes a batch handed out (journal_get_stats counts its bytes until it
 * is acked or requeued). 0 or -ENOMEM. mu held. */
static int jbatch_inflight_add(struct journal *j, uint64_t end, uint64_t bytes)
{
	if (journal_fail_inflight)
		return journal_fail_inflight;
	if (ARRAY_GROW(j->inflight, j->cap_inflight, j->n_inflight + 1, 8) < 0)
		return -ENOMEM;
	j->inflight[j->n_inflight++] = (struct jinflight){ end, bytes };
	return 0;
}

/* One take in progress (journal_take_batch), handed between its phases. */
struct jtake {
	struct jtaken *taken;
	size_t n_taken;
	uint64_t since;		/* its oldest change (jage.c; 0: none) */
	struct jseg_info *segs;	/* snapshot of the segment list */
	size_t nsegs;
	struct pathset lost;	/* recovered paths, taken by name */
	uint64_t first, end;
	uint64_t bfloor;	/* barrier_floor when the take began */
	bool barrier;		/* a barrier was owed */
};

/* Take, phase 1 (ns lock and mu held): appends the BATCH record that ends
 * the batch. -EAGAIN when nothing is pending. */
static int jbatch_begin_locked(struct journal *j, struct jtake *t)
{
	struct journal_op bop = { .type = JOP_BATCH, .path = "" };
	uint64_t now = clock_real_coarse_ns();
	int64_t seq;
	int rc;

	/* A barrier taken while the previous batch was being formed (its BATCH
	 * record already appended, sent_seq not yet moved) was promised
	 * head + 1: that batch is owed even if nothing else is pending. */
	if (j->head_seq == j->sent_seq && !j->dirty_head && j->lost_paths.n == 0 &&
	    j->barrier_seq <= j->sent_seq && !j->rescan_owed)
		return -EAGAIN;
	rc = journal_rescan_locked(j);
	if (rc < 0)
		return rc;
	/*
	 * Taken again after a requeue with nothing recorded since (a peer
	 * that failed the batch reconnects and gets it again): the BATCH
	 * record already there still closes it. Appending one per retry grew
	 * the journal by a record each reconnect while nothing changed. A
	 * barrier owed above head (journal_owe_batch) needs a new seq.
	 */
	if (j->batch_rec_seq && j->batch_rec_seq == j->head_seq &&
	    j->sent_seq < j->head_seq && j->barrier_seq <= j->head_seq) {
		seq = (int64_t)j->head_seq;
	} else {
		/* A BATCH record carries the time of the batch's oldest change
		 * and of the take, so a restart keeps the lag's age (jage.c);
		 * a BATCH has no other use for its time fields. */
		bop.mtime.tv_sec = (time_t)(j->pend_since_ns / 1000000000u);
		bop.mtime.tv_nsec = (long)(j->pend_since_ns % 1000000000u);
		bop.atime.tv_sec = (time_t)(now / 1000000000u);
		bop.atime.tv_nsec = (long)(now % 1000000000u);
		seq = journal_append_locked(j, &bop, true);
		if (seq < 0)
			return (int)seq;
		j->batch_rec_seq = (uint64_t)seq;
	}
	t->since = jage_take_locked(j, (uint64_t)seq, 0);
	t->end = (uint64_t)seq;
	t->first = j->sent_seq + 1;
	j->taking_end = t->end;
	t->barrier = j->barrier_seq != 0;
	t->bfloor = j->barrier_floor;
	return 0;
}

/* Take, phase 2 (mu held): moves the dirty inodes into t->taken, oldest
 * first (all of them while a barrier is owed), at most CAP: each costs an
 * fd in the batch. Snapshots the segment list. 0 or -ENOMEM. */
static int jbatch_take_dirty_locked(struct journal *j, uint64_t max_bytes, size_t cap,
				    struct jtake *t)
{
	bool bounded = max_bytes > 0 && !t->barrier;
	uint64_t budget = 0;

	t->taken = calloc(j->n_dirty < cap ? (j->n_dirty ? j->n_dirty : 1) : cap,
			  sizeof(*t->taken));
	t->segs = malloc((j->nsegs ? j->nsegs : 1) * sizeof(*t->segs));
	if (!t->taken || !t->segs)
		return -ENOMEM;
	if (j->nsegs)
		memcpy(t->segs, j->segs, j->nsegs * sizeof(*t->segs));
	t->nsegs = j->nsegs;
	for (struct jinode *e = j->dirty_tail, *prev; e && t->n_taken < cap; e = prev) {
		struct jtaken *k = &t->taken[t->n_taken];

		prev = e->dprev;
		if (bounded && t->n_taken > 0 && budget + e->ranges.bytes > max_bytes)
			continue;
		/* A handle stays with the inode (its next write costs nothing);
		 * the batch opens a copy. Without one the batch takes the
		 * journal's fd and the inode's next write dups the fs's again. */
		k->fd = -1;
		if (e->fh) {
			k->fh = jhandle_dup(e->fh);
			if (!k->fh)
				continue;	/* no memory: stays dirty */
		} else {
			k->fd = e->fd;
			e->fd = -1;
			if (k->fd >= 0)
				j->n_fds--;
		}
		k->ino = e->ino;
		k->whole = e->whole;
		k->recovered = e->recovered;
		k->ranges = e->ranges;
		rangeset_init(&e->ranges);
		budget += k->ranges.bytes;
		t->n_taken++;
		journal_inode_clean(j, e);
	}
	return 0;
}

/* Take, phase 3 (mu held): the journal moves past the batch. Recovered
 * paths go with it, a barrier it answers is released (or kept as
 * incomplete), and whatever it leaves behind is signalled again. */
static void jbatch_end_take_locked(struct journal *j, struct jtake *t)
{
	uint64_t v;

	t->lost = j->lost_paths;
	pathset_init(&j->lost_paths);
	j->sent_seq = t->end;
	if (j->dirty_head)	/* left behind: as old as the batch at most */
		jage_fold_locked(j, t->since);
	j->taking_end = 0;
	/* A barrier that arrived while this take waited for its records
	 * (barrier_seq > end) is not answered by this batch: keep it. */
	if (j->dirty_head == NULL && t->end >= j->barrier_seq) {
		j->barrier_seq = 0;
		j->barrier_floor = 0;
		if (t->barrier && j->ack_hold)
			j->ack_release = t->end;	/* its ack answers the held barrier */
	} else if (t->barrier) {
		jbatch_barrier_incomplete_locked(j, t->bfloor, t->end);
	}
	/* Everything signalled so far is in this batch, except what came after
	 * the BATCH record or was left behind by max_bytes: re-signal that. */
	if (read(j->evfd, &v, sizeof v) < 0 && errno != EAGAIN)
		log_warn("journal cannot clear its eventfd", "err=%s", strerror(errno));
	j->notified = false;
	if (j->head_seq > t->end || j->dirty_head || j->lost_paths.n || j->barrier_seq > t->end)
		journal_notify_locked(j);
}

/* Take, phase 4 (ns lock held, not mu): resolves the taken inodes into the
 * batch's files, then adds the recovered paths. An inode without an fd to
 * open it goes back to the dirty list (the batch then answers no
 * barrier), one that exists without a path is rescanned, a gone one is
 * dropped. 0 or -ENOMEM (every inode is back in the dirty list). */
static int jbatch_collect_files(struct journal *j, struct jtake *t, struct jbatch *jb)
{
	bool incomplete = false;
	int rc;

	jb->b.files = calloc(t->n_taken + t->lost.n + 1, sizeof(*jb->b.files));
	if (!jb->b.files) {
		pthread_mutex_lock(&j->mu);
		for (size_t i = 0; i < t->n_taken; i++)
			jbatch_untake_locked(j, &t->taken[i]);
		pthread_mutex_unlock(&j->mu);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n_taken; i++) {
		struct journal_dirty *f = &jb->b.files[jb->b.n_files];

		/* Once out of fds, the rest wait for the next batch. */
		rc = incomplete ? -EMFILE : jbatch_resolve(j, &t->taken[i], f);
		if (rc == 0) {
			jb->b.n_files++;
			jb->b.data_bytes += f->bytes;
			continue;
		}
		free(f->path);
		free(f->ranges);
		if (f->fd >= 0)
			close(f->fd);
		memset(f, 0, sizeof(*f));
		pthread_mutex_lock(&j->mu);
		if (rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM) {
			/* No fd to send it with now: a later batch will. */
			if (!incomplete)
				log_warn("journal cannot open dirty files for this batch; "
					 "they stay dirty for the next one", "err=%s",
					 strerror(-rc));
			incomplete = true;
			jbatch_untake_locked(j, &t->taken[i]);
			jage_fold_locked(j, t->since);
			journal_notify_locked(j);
		} else if (rc == -ESTALE) {
			/* It exists, but no path can be had: only a scan of the
			 * whole store is sure to find it. Rare: needs the dentry
			 * evicted after a move to another directory. */
			log_warn("journal cannot name a dirty file that was moved; "
				 "the store will be rescanned", "ino=%" PRIu64, t->taken[i].ino);
			if (journal_needs_scan_locked(j, "") < 0) {
				log_warn("journal cannot record a rescan yet; the next "
					 "batch records it", "ino=%" PRIu64, t->taken[i].ino);
				j->rescan_owed = true;
				journal_notify_locked(j);
			}
		} else if (rc != -ENOENT) {
			log_warn("journal cannot resolve a dirty file; dropping it",
				 "ino=%" PRIu64 " err=%s", t->taken[i].ino, strerror(-rc));
		}
		pthread_mutex_unlock(&j->mu);
	}
	if (incomplete && jb->barrier) {
		pthread_mutex_lock(&j->mu);
		jbatch_barrier_incomplete_locked(j, t->bfloor, t->end);
		pthread_mutex_unlock(&j->mu);
	}
	pathset_each(&t->lost, jbatch_add_lost, &jb->b);
	return 0;
}

/*
 * Takes a batch. Ordering: under the ns lock no namespace op can run, so
 * the BATCH record appended here is the exact point the batch describes:
 * every record before it is in the batch, and the paths of the dirty
 * files are resolved (readlink of the journal's fd) while nothing can
 * rename them. Data written after the take stays dirty for the next one.
 * The records are made durable before they are handed out, so the peer is
 * never ahead of the primary's own journal.
 */
int journal_take_batch(struct journal *j, uint64_t max_bytes, struct journal_batch **out)
{
	struct jtake t = { 0 };
	struct jbatch *jb;
	size_t cap = jbatch_file_cap();
	int rc;

	pathset_init(&t.lost);
	jb = calloc(1, sizeof(*jb));
	if (!jb)
		return -ENOMEM;
	journal_ns_lock(j);
	pthread_mutex_lock(&j->mu);
	rc = jbatch_begin_locked(j, &t);
	if (rc == 0)
		rc = jbatch_take_dirty_locked(j, max_bytes, cap, &t);
	if (rc < 0)
		goto out_unlock;
	jbatch_end_take_locked(j, &t);
	pthread_mutex_unlock(&j->mu);

	/* Resolve paths and read records without mu: writers keep going. */
	jb->barrier = t.barrier;
	jb->since_ns = t.since;
	jb->b.first_seq = t.first;
	jb->b.end_seq = t.end;
	rc = jbatch_collect_files(j, &t, jb);
	if (rc < 0)
		goto out_requeue;
	/*
	 * The paths are resolved: namespace ops may run again. Waiting for the
	 * group commit that makes the batch's records readable and durable
	 * happens without the ns lock, so creates and renames are not held
	 * up by every batch's commit.
	 */
	journal_ns_unlock(j);
	pthread_mutex_lock(&j->mu);
	rc = journal_wait_durable_locked(j, t.end);
	pthread_mutex_unlock(&j->mu);
	if (rc < 0)
		goto out_requeue_unlocked;
	rc = jbatch_read_recs(j, t.segs, t.nsegs, t.first, t.end, jb);
	if (rc < 0)
		goto out_requeue_unlocked;

	/* Untracked, the batch would count in no stats and be dropped by no
	 * ack: it goes back instead, and the caller sees the error. */
	pthread_mutex_lock(&j->mu);
	rc = jbatch_inflight_add(j, t.end, jb->b.data_bytes);
	pthread_mutex_unlock(&j->mu);
	if (rc < 0)
		goto out_requeue_unlocked;
	*out = &jb->b;
	jb = NULL;
	goto out_free;

out_requeue:
	journal_ns_unlock(j);
out_requeue_unlocked:
	journal_requeue(j, &jb->b);
	jb = NULL;
	goto out_free;
out_unlock:
	j->taking_end = 0;
	pthread_mutex_unlock(&j->mu);
	journal_ns_unlock(j);
out_free:
	for (size_t i = 0; i < t.n_taken; i++) {
		if (t.taken[i].fd >= 0)
			close(t.taken[i].fd);
		free(t.taken[i].fh);
		rangeset_free(&t.taken[i].ranges);
	}
	free(t.taken);
	free(t.segs);
	pathset_clear(&t.lost);
	if (jb)
		journal_batch_free(&jb->b);
	return rc;
}

static void jbatch_inflight_drop(struct journal *j, uint64_t upto, uint64_t only)
{
	size_t k = 0;

	for (size_t i = 0; i < j->n_inflight; i++) {
		struct jinflight *f = &j->inflight[i];

		if (f->end_seq <= upto || f->end_seq == only)
			continue;
		j->inflight[k++] = *f;
	}
	j->n_inflight = k;
}

/*
 * Puts a batch back: the next take starts again at its first record (the
 * peer dedups by seq), and its files' ranges are merged into whatever was
 * dirtied since. Files whose inode was forgotten meanwhile are gone and
 * dropped. Batches already acked are simply freed.
 */
void journal_requeue(struct journal *j, struct journal_batch *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&j->mu);
	if (b->end_seq > j->acked_seq) {
		if (b->first_seq && j->sent_seq >= b->first_seq)
			j->sent_seq = b->first_seq - 1 > j->acked_seq ? b->first_seq - 1 : j->acked_seq;
		for (size_t i = 0; i < b->n_files; i++) {
			struct journal_dirty *f = &b->files[i];
			struct jinode *e;

			if (!f->ino || f->fd < 0) {
				if (f->path && pathset_add(&j->lost_paths, f->path, 0) < 0)
					log_error("journal out of memory; path not requeued",
						  "path=%s", f->path);
				continue;
			}
			e = journal_inode_find(j, f->ino);
			if (!e)
				continue;	/* forgotten: the inode is gone */
			if (!e->fh && e->fd < 0) {
				e->fd = f->fd;	/* the batch is freed below */
				f->fd = -1;
				j->n_fds++;
			}
			for (size_t k = 0; !f->whole && !e->whole && k < f->n_ranges; k++)
				if (rangeset_add(&e->ranges, f->ranges[k].off, f->ranges[k].len) < 0)
					e->whole = true;
			if (f->whole || e->ranges.n > JOURNAL_RANGES_MAX)
				e->whole = true;
			if (e->whole)
				rangeset_clear(&e->ranges);
			e->recovered |= f->recovered;
			journal_inode_dirty(j, e);
		}
		/* A barrier batch put back owes the barrier again: the next take
		 * must not leave data behind, or an ack of its end would
		 * release a barrier waiter early. */
		if (((struct jbatch *)b)->barrier) {
			if (j->barrier_seq < b->end_seq)
				j->barrier_seq = b->end_seq;
			if (!j->barrier_floor || b->first_seq < j->barrier_floor)
				j->barrier_floor = b->first_seq;
			if (j->ack_release == b->end_seq)
				j->ack_release = 0;
		}
		jbatch_inflight_drop(j, 0, b->end_seq);
		jage_fold_locked(j, ((struct jbatch *)b)->since_ns);
		j->notified = false;
		journal_notify_locked(j);
	}
	pthread_mutex_unlock(&j->mu);
	journal_batch_free(b);
}

/*
 * An ack of ACKED ends the epoch when it leaves nothing pending: no unacked
 * record, no dirty data (every batch in flight ends at or before the head),
 * no pinned file (written by passthrough, ranges not marked yet), no
 * rescan owed by recovery (journal_rescan_locked).
 * mu held.
 */
static bool journal_epoch_done_locked(const struct journal *j, uint64_t acked)
{
	return acked >= j->head_seq && !j->dirty_head && !j->lost_paths.n &&
	       !j->n_pins && !j->rescan_owed;
}

/* Starts the next epoch: the marks (in memory) go, and the next change
 * marks again. Called before the ack file says the old epoch's records are
 * all acked, so that a change racing with the write marks anew. mu held. */
static void journal_epoch_reset_locked(struct journal *j)
{
	j->epoch++;
	j->first_mark = 0;
	pathset_clear(&j->marked_dirs);
	pathset_clear(&j->covered_dirs);
	pathset_clear(&j->needs_scan);
	j->overflow = false;
	for (size_t i = 0; i < j->itab_nb; i++)
		while (j->itab[i])
			journal_inode_drop(j, j->itab[i]);
}

/* The seq an ack of SEQ may record while a barrier take was incomplete
 * (see jbatch_barrier_incomplete_locked). mu held. */
static uint64_t jbatch_ack_clamp_locked(struct journal *j, uint64_t seq)
{
	if (!j->ack_hold)
		return seq;
	if (j->ack_release && seq >= j->ack_release) {
		j->ack_hold = j->ack_release = 0;
		return seq;
	}
	return seq >= j->ack_hold ? j->ack_hold - 1 : seq;
}

/*
 * The peer holds everything up to SEQ durably. In memory that is acked_seq
 * (sync waiters return). The ack file, from which recovery resumes and
 * below which marks count no more, gets SEQ only when the epoch ends, and
 * only after this node's store is durable too (jackfile.c);
 * before that it stays below the epoch's first mark, since a mark may cover
 * a file whose data is still only dirty in memory (a passthrough write
 * that becomes dirty at release, after its create was acked). Records
 * between the file's seq and SEQ are on the peer already: after a restart
 * the peer's position skips them (journal_rewind).
 *
 * Sync waiters first. acked_seq moves, and the waiters wake, before the
 * ack file is written: a sync-mode fsync waits for the peer's durability,
 * not for this node's record of it, which costs two more disk flushes
 * (the file, then its directory after the rename), nor for the syncfs of
 * the store before them. If this node crashes in between, its next start
 * resumes from the older ack file and re-sends records the peer already
 * applied; the peer's HELLO position skips them
 * (journal_rewind). An ack file that fails to write is handled the same
 * way. Measured, 1000 x 4 KiB write+fsync into a sync-mode mount, peer
 * on loopback: see docs/replication.md, "Sync mode latency".
 */
int journal_ack(struct journal *j, uint64_t seq)
{
	uint64_t file_seq;
	bool ending;
	int rc = 0;

	pthread_mutex_lock(&j->mu);
	if (seq > j->head_seq) {
		log_error("peer acknowledged a seq the journal never wrote; ignoring it",
			  "seq=%" PRIu64 " head=%" PRIu64, seq, j->head_seq);
		rc = -EINVAL;
		goto out_unlock;
	}
	seq = jbatch_ack_clamp_locked(j, seq);
	if (seq <= j->acked_seq)
		goto out_unlock;
	ending = journal_epoch_done_locked(j, seq);
	if (ending)
		journal_epoch_reset_locked(j);
	file_seq = seq;
	if (j->first_mark && file_seq >= j->first_mark)
		file_seq = j->first_mark - 1;
	if (file_seq < j->file_acked)
		file_seq = j->file_acked;
	/* Waiters return now: the peer's ack is the durability they wait
	 * for. The ack file is this node's bookkeeping (a syncfs of the store,
	 * then two flushes: the file and its directory); a crash before it is
	 * written only re-sends what the peer already has (see "Sync waiters
	 * first"). */
	j->acked_seq = seq;
	jage_ack_locked(j, seq);
	if (j->sent_seq < seq)
		j->sent_seq = seq;
	jbatch_inflight_drop(j, seq, 0);
	if (ending && j->barrier_seq <= seq) {
		j->barrier_seq = 0;
		j->barrier_floor = 0;
		j->ack_hold = 0;
		j->ack_release = 0;
	}
	pthread_cond_broadcast(&j->acked_cv);
	/* The ack file follows on the journal's own thread, after a syncfs
	 * of the store (jackfile.c). */
	if (file_seq > j->ackfile_want) {
		j->ackfile_want = file_seq;
		pthread_cond_broadcast(&j->ackfile_cv);
	}
	/* The active segment holds only acked records now: start a new one so
	 * that a later ack can delete it. */
	if (ending && j->nsegs && j->segs[j->nsegs - 1].last_seq >= j->segs[j->nsegs - 1].first_seq)
		j->rotate_next = true;
out_unlock:
	pthread_mutex_unlock(&j->mu);
	return rc;
}

void journal_owe_batch(struct journal *j)
{
	pthread_mutex_lock(&j->mu);
	if (j->barrier_seq <= j->head_seq)
		j->barrier_seq = j->head_seq + 1;
	j->notified = false;
	journal_notify_locked(j);
	pthread_mutex_unlock(&j->mu);
}

int journal_rewind(struct journal *j, uint64_t peer_seq)
{
	bool ack;

	pthread_mutex_lock(&j->mu);
	if (peer_seq > j->head_seq || peer_seq < j->acked_seq) {
		uint64_t acked = j->acked_seq, head = j->head_seq;

		pthread_mutex_unlock(&j->mu);
		log_warn("journal cannot resume from the peer's seq; a full resync is needed",
			 "peer_seq=%" PRIu64 " acked=%" PRIu64 " head=%" PRIu64,
			 peer_seq, acked, head);
		return -ERANGE;
	}
	j->sent_seq = peer_seq;
	ack = peer_seq > j->acked_seq;
	j->notified = false;
	journal_notify_locked(j);
	pthread_mutex_unlock(&j->mu);
	return ack ? journal_ack(j, peer_seq) : 0;
}
