/*
 * syncer — the one extra thread of `serve`: it only calls syncfs() on the
 * store. The loop thread asks for "durable up to seq N"; the syncer thread
 * takes the highest requested seq, syncs, publishes (seq, err) under the
 * mutex and wakes the loop through an eventfd. It never touches the
 * receiver, the connection or libevent state other than that eventfd.
 */
#include "netsync/syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

struct syncer {
	int fd;			/* dup of a store fd */
	int efd;		/* eventfd: syncer -> loop */
	struct event *ev;
	syncer_done_fn done;
	void *arg;
	pthread_t thr;

	pthread_mutex_t mu;	/* protects the fields below */
	pthread_cond_t cv;
	uint64_t requested;	/* highest seq asked for */
	uint64_t synced;	/* highest seq made durable (or failed) */
	int err;		/* result for synced */
	uint64_t reported;	/* highest synced seq given to done (loop only) */
	bool stopping;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		uint64_t target;
		int err;

		while (s->requested <= s->synced && !s->stopping)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->requested <= s->synced && s->stopping)
			break;
		target = s->requested;
		pthread_mutex_unlock(&s->mu);
		err = syncfs(s->fd) < 0 ? -errno : 0;
		pthread_mutex_lock(&s->mu);
		s->synced = target;
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
	pthread_mutex_unlock(&s->mu);
	if (seq > s->reported) {
		s->reported = seq;
		s->done(seq, err, s->arg);
	}
}

int syncer_start(struct event_base *base, int fd, syncer_done_fn done, void *arg,
		 struct syncer **out)
{
	struct syncer *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->done = done;
	s->arg = arg;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (s->fd < 0) {
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
	close(s->fd);
out_free:
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return rc;
}

void syncer_request(struct syncer *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	if (seq > s->requested) {
		s->requested = seq;
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
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
	pthread_join(s->thr, NULL);
	seq = s->synced;
	*err = s->err;
	event_free(s->ev);
	close(s->efd);
	close(s->fd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return seq;
}
