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

struct evict {
	struct fuse_session *se;
	struct inode_table *t;
	size_t high, low;	/* immutable */
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread waits here; lock */
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
		size_t n = inode_count(e->t);

		if (n > e->high && v && !gone) {
			if (!e->logged) {
				log_notice("the kernel caches more inodes than the "
					 "open-file budget; asking it to drop "
					 "the least recently used names",
					 "inodes=%zu budget=%zu", n, e->high);
				e->logged = true;
			}
			pthread_mutex_unlock(&e->lock);
			gone = evict_pass(e, v, n - e->low) < 0;
			pthread_mutex_lock(&e->lock);
		}
		if (e->stop || e->pressed) {
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
	pthread_condattr_destroy(&ca);
	rc = -pthread_create(&e->tid, NULL, evict_main, e);
	if (rc == 0) {
		inode_set_pressure_fn(t, evict_kick, e, e->high);
		inode_set_fd_cap(t, e->high);
		log_notice("inode fd budget", "fd_budget=%zu nofile=%llu", e->high,
			 (unsigned long long)rl.rlim_cur);
	}
	if (rc < 0) {
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
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->tid, NULL);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

bool evict_over(struct evict *e)
{
	return e && inode_count(e->t) > e->high;
}
