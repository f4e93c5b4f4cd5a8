/*
 * evict — the thread that keeps the inode table (fs/inode.c) within its
 * share of the open-file limit by asking the kernel to drop the least
 * recently looked-up names (fuse_lowlevel_notify_inval_entry). The kernel
 * then forgets the unused inodes and fs_forget closes their fds. Owns that
 * thread only; it never opens files. See evict.h for why it is not a
 * FUSE worker.
 */
#include "fs/evict.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/log.h"

/* Names invalidated per pass of the table lock. */
#define EVICT_BATCH 256
/* How often the thread looks at the table when nobody kicks it. */
#define EVICT_PERIOD_MS 100
/* How long a worker short of fds waits for the table to shrink. */
#define EVICT_RELIEVE_MS 250

struct evict {
	struct fuse_session *se;
	struct inode_table *t;
	size_t high, low;	/* immutable */
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread waits here; lock */
	pthread_cond_t done;	/* workers wait for a pass here; lock */
	/* lock: kicks from workers short of fds, numbered; the number of
	 * the last kick a finished pass had seen */
	unsigned long kicked, served;
	bool stop;		/* lock */
	bool pressed;		/* lock: the table passed the budget */
	bool logged;		/* the thread only */
};

size_t evict_budget(unsigned long long nofile)
{
	unsigned long long other = nofile / 8 > 128 ? nofile / 8 : 128;
	unsigned long long used = nofile / 4 + other;

	return nofile > used + 64 ? (size_t)(nofile - used) : 64;
}

static void evict_deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Asks the kernel to drop up to WANT names; returns -ENOTCONN once the
 * connection is gone, else 0. */
static int evict_pass(struct evict *e, struct inode_victim *v, size_t want)
{
	size_t asked = 0, unknown = 0;
	int err = 0;

	while (want > 0) {
		size_t k = inode_pick_victims(e->t, v,
					      want < EVICT_BATCH ? want : EVICT_BATCH);

		if (k == 0)
			return 0;
		for (size_t n = 0; n < k; n++) {
			int rc = fuse_lowlevel_notify_inval_entry(
				e->se, v[n].parent, v[n].name, strlen(v[n].name));

			/* -ENOENT: the kernel no longer has the name or
			 * its parent, which is as good. */
			asked++;
			if (rc == -ENOENT)
				unknown++;
			else if (rc < 0)
				err = rc;
			if (rc == -ENOTCONN || rc == -ENODEV || rc == -EBADF)
				return -ENOTCONN;
		}
		want -= k;
	}
	log_debug("evicted", "asked=%zu unknown=%zu err=%d inodes=%zu", asked,
		  unknown, err, inode_count(e->t));
	return 0;
}

/* The table passed the budget: wake the thread (never blocks long: the
 * thread holds its lock only between passes). */
static void evict_kick(void *arg)
{
	struct evict *e = arg;

	pthread_mutex_lock(&e->lock);
	e->pressed = true;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
}

static void *evict_main(void *arg)
{
	struct evict *e = arg;
	struct inode_victim *v = malloc(sizeof(*v) * EVICT_BATCH);
	struct timespec ts;
	bool gone = false;

	pthread_setname_np(pthread_self(), "tw-evict");
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		size_t n = inode_count(e->t), want = 0;
		unsigned long seen = e->kicked;
		bool urgent = seen != e->served;

		if (n > e->high)
			want = n - e->low;
		if (urgent && want < n / 8 + 64)
			want = n / 8 + 64;	/* fds went elsewhere too */
		if (want > 0 && v && !gone) {
			if (!e->logged) {
				log_notice("the kernel caches more inodes than the "
					 "open-file budget; asking it to drop "
					 "the least recently used names",
					 "inodes=%zu budget=%zu", n, e->high);
				e->logged = true;
			}
			pthread_mutex_unlock(&e->lock);
			gone = evict_pass(e, v, want) < 0;
			pthread_mutex_lock(&e->lock);
		}
		e->served = seen;
		pthread_cond_broadcast(&e->done);
		if (e->stop || e->kicked != e->served || e->pressed) {
			e->pressed = false;
			continue;
		}
		evict_deadline(&ts, EVICT_PERIOD_MS);
		pthread_cond_timedwait(&e->wake, &e->lock, &ts);
	}
	pthread_mutex_unlock(&e->lock);
	inode_set_pressure_fn(e->t, NULL, NULL, 0);
	free(v);
	return NULL;
}

int evict_start(struct fuse_session *se, struct inode_table *t,
		struct evict **out)
{
	struct evict *e;
	struct rlimit rl;
	pthread_condattr_t ca;
	int rc;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->se = se;
	e->t = t;
	e->high = evict_budget(rl.rlim_cur == RLIM_INFINITY ? 1ull << 20 :
			       (unsigned long long)rl.rlim_cur);
	e->low = e->high - e->high / 4;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_cond_init(&e->done, &ca);
	pthread_condattr_destroy(&ca);
	rc = -pthread_create(&e->tid, NULL, evict_main, e);
	if (rc == 0)
		inode_set_pressure_fn(t, evict_kick, e, e->high);
	if (rc < 0) {
		pthread_cond_destroy(&e->done);
		pthread_cond_destroy(&e->wake);
		pthread_mutex_destroy(&e->lock);
		free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void evict_stop(struct evict *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_broadcast(&e->wake);
	pthread_cond_broadcast(&e->done);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->tid, NULL);
	pthread_cond_destroy(&e->done);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

bool evict_over(struct evict *e)
{
	return e && inode_count(e->t) > e->high;
}

bool evict_relieve(struct evict *e)
{
	struct timespec ts;
	size_t before;
	unsigned long mine;

	if (!e)
		return false;
	before = inode_count(e->t);
	evict_deadline(&ts, EVICT_RELIEVE_MS);
	pthread_mutex_lock(&e->lock);
	mine = ++e->kicked;
	pthread_cond_signal(&e->wake);
	/* Wait for a pass that saw this kick to end, then for the kernel's
	 * forgets (served by other workers) to close fds. */
	while (!e->stop && (long)(e->served - mine) < 0 &&
	       pthread_cond_timedwait(&e->done, &e->lock, &ts) == 0)
		;
	pthread_mutex_unlock(&e->lock);
	while (inode_count(e->t) >= before) {
		struct timespec now, nap = { 0, 5 * 1000000L };

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > ts.tv_sec ||
		    (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec))
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}
