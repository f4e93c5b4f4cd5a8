/*
 * syncer — the one extra thread of `serve`: it only calls fsync()/syncfs()
 * on store files. The loop thread queues "durable up to seq N" jobs (with
 * the fds their batch touched); the thread takes every queued job, syncs,
 * publishes (seq, err) under the mutex and wakes the loop through an
 * eventfd. It never touches the receiver, the connection or libevent state
 * other than that eventfd.
 */
#include "netsync/secondary/syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

struct sync_job {
	uint64_t seq;
	struct sync_set set;
	struct sync_job *next;
};

struct syncer {
	int fs_fd;		/* dup of a store fd, for syncfs */
	int efd;		/* eventfd: syncer -> loop */
	struct event *ev;
	syncer_done_fn done;
	syncer_commit_fn commit;
	void *arg;
	pthread_t thr;

	pthread_mutex_t mu;	/* protects the fields below */
	pthread_cond_t cv;
	struct sync_job *head, **tail;	/* queued jobs, FIFO */
	size_t pending_fds;	/* fds queued or being synced */
	size_t pending_jobs;	/* jobs queued or being synced */
	uint64_t synced;	/* highest seq made durable (or failed) */
	int err;		/* result for synced */
	bool stopping;

	uint64_t reported;	/* loop thread only: highest seq given to done */
};

void sync_set_free(struct sync_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		close(set->fds[i]);
	free(set->fds);
	set->fds = NULL;
	set->n = 0;
	set->whole_fs = false;
}

/* Starts writeback of every fd in FDS without waiting, so that the
 * fsyncs that follow find their data on the way and the first one commits
 * the block allocations of all of them in one filesystem transaction. */
static void sync_fds_kick(const int *fds, size_t n)
{
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		(void)sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE);
}

/*
 * Parallel fsync. An fsync on ext4 ends with a cache flush of the disk;
 * one thread fsyncing N files pays N flushes in a row. The block layer
 * merges flushes that are pending at the same time into one (blk-flush),
 * so the same N fsyncs from SYNCER_FSYNC_THREADS threads cost far fewer,
 * and a disk's flushes are what a concurrent copy's reads queue behind
 * (flush counts and copy times: docs/benchmarks.md, "The peer's fsyncs").
 * Below SYNCER_FDS_PER_THREAD fds per thread,
 * fewer threads: a lone small batch (a sync-mode fsync: the file and its
 * directory) stays on this thread, with no thread started.
 */
struct fsync_work {
	const int *fds;
	size_t n;
	size_t next;		/* atomic: the next fd to take */
	int err;		/* atomic: the first -errno */
};

static void *fsync_worker(void *arg)
{
	struct fsync_work *w = arg;
	size_t i;

	pthread_setname_np(pthread_self(), "tw-fsync");
	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->n) {
		int zero = 0;

		if (fsync(w->fds[i]) < 0)
			__atomic_compare_exchange_n(&w->err, &zero, -errno, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* fsyncs every fd of FDS, on up to SYNCER_FSYNC_THREADS threads (this one
 * included). Returns 0 or the first -errno; every fd is still tried. */
static int sync_fds_fsync(const int *fds, size_t n)
{
	struct fsync_work w = { .fds = fds, .n = n };
	pthread_t thr[SYNCER_FSYNC_THREADS];
	size_t want = (n + SYNCER_FDS_PER_THREAD - 1) / SYNCER_FDS_PER_THREAD, started = 0;

	if (want > SYNCER_FSYNC_THREADS)
		want = SYNCER_FSYNC_THREADS;
	/* a thread that cannot start leaves its share to the others */
	while (started + 1 < want && pthread_create(&thr[started], NULL, fsync_worker, &w) == 0)
		started++;
	fsync_worker(&w);
	for (size_t i = 0; i < started; i++)
		pthread_join(thr[i], NULL);
	return w.err;
}

/* One writeback kick for all of FDS, then the parallel fsync. */
static int sync_fds_run(const int *fds, size_t n)
{
	sync_fds_kick(fds, n);
	return sync_fds_fsync(fds, n);
}

int sync_set_run(struct sync_set *set, int fs_fd)
{
	int rc = 0;

	if (set->whole_fs) {
		if (syncfs(fs_fd) < 0)
			rc = -errno;
	} else {
		rc = sync_fds_run(set->fds, set->n);
	}
	sync_set_free(set);
	return rc;
}

/* Runs the (not whole-filesystem) jobs of one round as one set: one kick
 * for all their fds, then one parallel fsync over all of them. Returns 0
 * or the first -errno; the jobs' sets are freed by the caller. */
static int syncer_fsync_jobs(struct sync_job *jobs, size_t total)
{
	struct sync_job *j;
	size_t k = 0;
	int *all, rc;

	if (total == 0)
		return 0;
	all = malloc(total * sizeof(*all));
	if (!all) {
		/* one job at a time, no worse than before */
		rc = 0;
		for (j = jobs; j; j = j->next) {
			int r = sync_fds_run(j->set.fds, j->set.n);

			if (r < 0 && rc == 0)
				rc = r;
		}
		return rc;
	}
	for (j = jobs; j; j = j->next) {
		memcpy(all + k, j->set.fds, j->set.n * sizeof(*all));
		k += j->set.n;
	}
	rc = sync_fds_run(all, total);
	free(all);
	return rc;
}

/*
 * Why fsync per file and not syncfs: syncfs flushes every dirty page of
 * the whole filesystem, including other programs' writes, so its latency
 * is not ours to bound, and where the two nodes share a filesystem it also
 * writes the primary's own dirty pages (a large file just copied in) on
 * the peer's clock. A sync-mode fsync on the primary waits for this.
 * Every file of a round gets sync_file_range(WRITE) first
 * (sync_fds_kick), so their writeback runs at once and the first fsync
 * commits most block allocations in one filesystem transaction; the
 * fsyncs then run in parallel (above). Size never chooses syncfs: a batch
 * is big exactly when the peer lags, and a syncfs then slows the lagging
 * peer further. A batch past SYNCER_FSYNC_MAX files hands its set to this
 * thread early (seq 0 jobs, see receiver_set_spill), which bounds the fds
 * a job holds; a round with several jobs fsyncs all of them in parallel.
 * syncfs is left for what fsync cannot cover (whole_fs: O_PATH fds,
 * special files, fds run out, a replay after a restart). Evidence: see
 * docs/benchmarks.md, "The peer's fsyncs".
 */
static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	pthread_setname_np(pthread_self(), "tw-syncer");
	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct sync_job *jobs, *j;
		uint64_t target = 0;
		size_t total = 0, njobs = 0;
		bool whole = false;
		int err = 0;

		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		jobs = s->head;
		s->head = NULL;
		s->tail = &s->head;
		pthread_mutex_unlock(&s->mu);
		/* no syncfs for size alone: each job holds at most
		 * SYNCER_FSYNC_MAX fds (receiver_set_spill), and a round of
		 * several runs them all in parallel (see "Why fsync per file") */
		for (j = jobs; j; j = j->next) {
			whole |= j->set.whole_fs;
			total += j->set.n;
			njobs++;
		}
		if (whole && syncfs(s->fs_fd) < 0)
			err = -errno;
		if (!whole)
			err = syncer_fsync_jobs(jobs, total);
		while (jobs) {
			j = jobs;
			jobs = j->next;
			sync_set_free(&j->set);
			if (j->seq > target)
				target = j->seq;
			free(j);
		}
		/* a round of seq-less jobs only (early fsyncs of a big batch)
		 * makes no batch durable: nothing to record */
		if (err == 0 && s->commit && target > 0)
			err = s->commit(target, s->arg);
		pthread_mutex_lock(&s->mu);
		s->pending_fds -= total;
		s->pending_jobs -= njobs;
		/* A failed round advances nothing, and its error is kept until
		 * the loop reports it: a later round's success must not hide
		 * it (the kernel reports an fsync error only once). */
		if (err == 0 && target > s->synced)
			s->synced = target;
		if (err && !s->err)
			s->err = err;
		if (eventfd_write(s->efd, 1) < 0)
			log_error("syncer cannot wake the loop", "err=%d", errno);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void syncer_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct syncer *s = arg;
	eventfd_t v;
	uint64_t seq;
	int err;

	if (eventfd_read(s->efd, &v) < 0)
		return;
	pthread_mutex_lock(&s->mu);
	seq = s->synced;
	err = s->err;
	s->err = 0;
	pthread_mutex_unlock(&s->mu);
	if (seq > s->reported || err) {
		s->reported = seq;
		s->done(seq, err, s->arg);
	}
}

int syncer_start(struct event_base *base, int fs_fd, syncer_done_fn done,
		 syncer_commit_fn commit, void *arg, struct syncer **out)
{
	struct syncer *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->done = done;
	s->commit = commit;
	s->arg = arg;
	s->tail = &s->head;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->fs_fd = fcntl(fs_fd, F_DUPFD_CLOEXEC, 0);
	if (s->fs_fd < 0) {
		rc = -errno;
		goto out_free;
	}
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0) {
		rc = -errno;
		goto out_fd;
	}
	s->ev = event_new(base, s->efd, EV_READ | EV_PERSIST, syncer_wake_cb, s);
	if (!s->ev || event_add(s->ev, NULL) < 0) {
		rc = -ENOMEM;
		goto out_efd;
	}
	rc = -pthread_create(&s->thr, NULL, syncer_main, s);
	if (rc < 0)
		goto out_ev;
	*out = s;
	return 0;

out_ev:
	if (s->ev)
		event_free(s->ev);
out_efd:
	close(s->efd);
out_fd:
	close(s->fs_fd);
out_free:
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return rc;
}

int syncer_request(struct syncer *s, uint64_t seq, struct sync_set *set)
{
	struct sync_job *j = calloc(1, sizeof(*j));

	if (!j) {
		sync_set_free(set);
		return -ENOMEM;
	}
	j->seq = seq;
	j->set = *set;
	set->fds = NULL;
	set->n = 0;
	set->whole_fs = false;
	pthread_mutex_lock(&s->mu);
	s->pending_fds += j->set.n;
	s->pending_jobs++;
	*s->tail = j;
	s->tail = &j->next;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

size_t syncer_pending_fds(struct syncer *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->pending_fds;
	pthread_mutex_unlock(&s->mu);
	return n;
}

size_t syncer_pending_jobs(struct syncer *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->pending_jobs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t syncer_stop(struct syncer *s, int *err)
{
	uint64_t seq;

	if (!s) {
		*err = 0;
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thr, NULL);	/* the thread drains the queue first */
	seq = s->synced;
	*err = s->err;
	event_free(s->ev);
	close(s->efd);
	close(s->fs_fd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return seq;
}
