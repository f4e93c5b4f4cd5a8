/*
 * hashjob — serve's hashing thread (hashjob.h). The loop queues jobs under
 * the mutex and the thread takes them; a finished job goes to the `done`
 * list and the eventfd wakes the loop, which runs the callbacks. The
 * thread touches only its job (an fd, a copy of the request) and the
 * thread-safe hash cache; never the receiver, the connection or libevent.
 */
#include "netsync/secondary/hashjob.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "netsync/secondary/peerhash.h"

struct hj_job {
	struct hj_job *next;
	int fd;
	struct stat st;
	struct proto_hash_req q;	/* path points at `path` */
	uint64_t tag, read;
	struct evbuffer *answer;
	char path[];
};

struct hashjob {
	struct hashcache *cache;
	hashjob_done_fn done_fn;
	void *arg;
	int efd;
	struct event *ev;
	pthread_t thr;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hj_job *todo, **todo_tail;	/* FIFO */
	struct hj_job *done, **done_tail;	/* FIFO */
	bool stop;
};

static void hj_job_free(struct hj_job *job)
{
	if (job->fd >= 0)
		close(job->fd);
	if (job->answer)
		evbuffer_free(job->answer);
	free(job);
}

static void *hj_thread(void *arg)
{
	struct hashjob *j = arg;

	pthread_setname_np(pthread_self(), "tw-hash");
	pthread_mutex_lock(&j->mu);
	for (;;) {
		struct hj_job *job;

		while (!j->todo && !j->stop)
			pthread_cond_wait(&j->cv, &j->mu);
		if (j->stop)
			break;
		job = j->todo;
		j->todo = job->next;
		if (!j->todo)
			j->todo_tail = &j->todo;
		pthread_mutex_unlock(&j->mu);
		job->next = NULL;
		job->answer = evbuffer_new();
		if (!job->answer || peerhash_finish(job->fd, &job->st, j->cache, &job->q,
						    job->answer, &job->read) < 0) {
			if (job->answer)
				evbuffer_free(job->answer);
			job->answer = NULL;
		}
		job->fd = -1;	/* closed by peerhash_finish (or left: see below) */
		pthread_mutex_lock(&j->mu);
		*j->done_tail = job;
		j->done_tail = &job->next;
		(void)eventfd_write(j->efd, 1);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Loop: runs the callbacks of finished jobs, in order. */
static void hj_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hashjob *j = arg;
	struct hj_job *list;
	eventfd_t v;

	(void)what;
	(void)eventfd_read(fd, &v);
	pthread_mutex_lock(&j->mu);
	list = j->done;
	j->done = NULL;
	j->done_tail = &j->done;
	pthread_mutex_unlock(&j->mu);
	while (list) {
		struct hj_job *next = list->next;
		struct evbuffer *answer = list->answer;

		list->answer = NULL;
		j->done_fn(answer, list->read, list->tag, j->arg);
		hj_job_free(list);
		list = next;
	}
}

int hashjob_new(struct event_base *base, struct hashcache *cache, hashjob_done_fn done,
		void *arg, struct hashjob **out)
{
	struct hashjob *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->cache = cache;
	j->done_fn = done;
	j->arg = arg;
	j->todo_tail = &j->todo;
	j->done_tail = &j->done;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	j->ev = j->efd >= 0 ? event_new(base, j->efd, EV_READ | EV_PERSIST, hj_wake_cb, j) : NULL;
	if (!j->ev || event_add(j->ev, NULL) < 0) {
		hashjob_free(j);
		return -ENOMEM;
	}
	*out = j;
	return 0;
}

int hashjob_start(struct hashjob *j, int fd, const struct stat *st,
		  const struct proto_hash_req *q, uint64_t tag)
{
	size_t len = strlen(q->path) + 1;
	struct hj_job *job = calloc(1, sizeof(*job) + len);
	int rc;

	if (!job) {
		close(fd);
		return -ENOMEM;
	}
	job->fd = fd;
	job->st = *st;
	job->q = *q;
	memcpy(job->path, q->path, len);
	job->q.path = job->path;
	job->tag = tag;
	pthread_mutex_lock(&j->mu);
	if (!j->started) {
		rc = -pthread_create(&j->thr, NULL, hj_thread, j);
		if (rc < 0) {
			pthread_mutex_unlock(&j->mu);
			hj_job_free(job);
			return rc;
		}
		j->started = true;
	}
	*j->todo_tail = job;
	j->todo_tail = &job->next;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return 0;
}

void hashjob_free(struct hashjob *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	j->stop = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (j->started)
		pthread_join(j->thr, NULL);
	for (struct hj_job *l = j->todo, *n; l; l = n) {
		n = l->next;
		hj_job_free(l);
	}
	for (struct hj_job *l = j->done, *n; l; l = n) {
		n = l->next;
		hj_job_free(l);
	}
	if (j->ev)
		event_free(j->ev);
	if (j->efd >= 0)
		close(j->efd);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}
