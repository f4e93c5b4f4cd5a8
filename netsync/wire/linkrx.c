/*
 * linkrx — the receiving thread of a link and its frame queue (linkrx.h).
 * The thread (tw-mirror-rx) owns the link's input side; the consumer owns
 * everything else of the link and the frames it was handed. They meet
 * only in the queue, under its mutex: a frame and a reference to the slab
 * that holds it (link_hold), never a copy of its bytes.
 */
#include "netsync/wire/linkrx.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Frames queued at most (small ones: the byte bound is for DATA). */
#define RX_ENTRIES 4096

struct rx_ent {
	struct proto_frame f;
	struct link_slab *slab;
};

struct linkrx {
	struct link *l;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a frame queued, room made, or the end */
	struct rx_ent *q;	/* a ring of cap entries: [head, head + n) */
	size_t cap, head, n;
	size_t bytes, max_bytes;	/* frame bytes queued, and the bound */
	bool stop;		/* the consumer is done: the thread leaves */
	bool ended;		/* the thread left; `end` says why */
	int end;
	struct link_slab *cur;	/* the slab of the frame handed out last */
};

static size_t rx_size(const struct proto_frame *f)
{
	return PROTO_HDR_LEN + (size_t)f->h.len;
}

/* Queues F (its slab held); waits while the queue is full. false: stop. */
static bool rx_push(struct linkrx *r, const struct proto_frame *f, struct link_slab *s)
{
	pthread_mutex_lock(&r->mu);
	/* one frame always fits: an empty queue takes any */
	while (!r->stop && r->n && (r->bytes + rx_size(f) > r->max_bytes || r->n == r->cap))
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->stop) {
		pthread_mutex_unlock(&r->mu);
		return false;
	}
	r->q[(r->head + r->n) % r->cap] = (struct rx_ent){ *f, s };
	r->n++;
	r->bytes += rx_size(f);
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return true;
}

static void *rx_thread(void *arg)
{
	struct linkrx *r = arg;
	struct proto_frame f;
	int rc;

	pthread_setname_np(pthread_self(), "tw-mirror-rx");
	for (;;) {
		struct link_slab *s;

		rc = link_recv(r->l, &f, true);
		if (rc != 1)
			break;
		s = link_hold(r->l);
		if (!s) {
			rc = -ENOMEM;
			break;
		}
		if (!rx_push(r, &f, s)) {
			link_slab_put(s);
			rc = -ECANCELED;
			break;
		}
	}
	pthread_mutex_lock(&r->mu);
	r->ended = true;
	r->end = rc;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int linkrx_start(struct link *l, size_t max_bytes, struct linkrx **out)
{
	struct linkrx *r = calloc(1, sizeof(*r));
	int rc;

	if (!r || !(r->q = malloc(RX_ENTRIES * sizeof(*r->q)))) {
		free(r);
		return -ENOMEM;
	}
	r->cap = RX_ENTRIES;
	r->l = l;
	r->max_bytes = max_bytes;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	l->split = true;
	rc = -pthread_create(&r->thr, NULL, rx_thread, r);
	if (rc < 0) {
		l->split = false;
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		free(r->q);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int linkrx_next(struct linkrx *r, struct proto_frame *f, bool wait)
{
	struct rx_ent e;

	link_slab_put(r->cur);
	r->cur = NULL;
	pthread_mutex_lock(&r->mu);
	while (wait && !r->n && !r->ended)
		pthread_cond_wait(&r->cv, &r->mu);
	if (!r->n) {
		int rc = r->ended ? r->end : 0;

		pthread_mutex_unlock(&r->mu);
		return rc;
	}
	e = r->q[r->head];
	r->head = (r->head + 1) % r->cap;
	r->n--;
	r->bytes -= rx_size(&e.f);
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	r->cur = e.slab;
	*f = e.f;
	return 1;
}

void linkrx_stop(struct linkrx *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	/* wakes a thread waiting in poll() for input */
	shutdown(r->l->fd, SHUT_RD);
	pthread_join(r->thr, NULL);
	for (; r->n; r->n--, r->head = (r->head + 1) % r->cap)
		link_slab_put(r->q[r->head].slab);
	link_slab_put(r->cur);
	r->l->split = false;
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->q);
	free(r);
}
