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
/* Frames moved across at once, each way: one lock and at most one wake-up
 * per batch, not per frame (a small file is five frames). */
#define RX_BATCH 128

struct rx_ent {
	struct proto_frame f;
	struct link_slab *slab;
};

struct linkrx {
	struct link *l;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv_data;	/* frames queued, or the end */
	pthread_cond_t cv_room;	/* room made, or stop */
	struct rx_ent *q;	/* a ring of cap entries: [head, head + n) */
	size_t cap, head, n;
	size_t bytes, max_bytes;	/* frame bytes queued, and the bound */
	bool stop;		/* the consumer is done: the thread leaves */
	bool ended;		/* the thread left; `end` says why */
	int end;
	/* the consumer's own: frames taken from the queue, not handed out */
	struct rx_ent got[RX_BATCH];
	size_t got_i, got_n;
	struct link_slab *cur;	/* the slab of the frame handed out last */
};

static size_t rx_size(const struct proto_frame *f)
{
	return PROTO_HDR_LEN + (size_t)f->h.len;
}

/* Queues the N frames of B (their slabs held), waiting while the queue is
 * full (an empty queue takes any batch). false: stop (B is released). */
static bool rx_push(struct linkrx *r, struct rx_ent *b, size_t n, size_t bytes)
{
	pthread_mutex_lock(&r->mu);
	while (!r->stop && r->n && (r->bytes + bytes > r->max_bytes || r->n + n > r->cap))
		pthread_cond_wait(&r->cv_room, &r->mu);
	if (r->stop) {
		pthread_mutex_unlock(&r->mu);
		for (size_t i = 0; i < n; i++)
			link_slab_put(b[i].slab);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		r->q[(r->head + r->n + i) % r->cap] = b[i];
	r->n += n;
	r->bytes += bytes;
	pthread_cond_signal(&r->cv_data);
	pthread_mutex_unlock(&r->mu);
	return true;
}

static void *rx_thread(void *arg)
{
	struct linkrx *r = arg;
	struct rx_ent b[RX_BATCH];
	size_t n = 0, bytes = 0;
	struct proto_frame f;
	int rc;

	pthread_setname_np(pthread_self(), "tw-mirror-rx");
	for (;;) {
		/* wait only with nothing in hand; else take what is there */
		rc = link_recv(r->l, &f, n == 0);
		if (rc == 1) {
			b[n].slab = link_hold(r->l);
			if (!b[n].slab) {
				rc = -ENOMEM;
				break;
			}
			b[n++].f = f;
			bytes += rx_size(&f);
			if (n < RX_BATCH && bytes < r->max_bytes / 4)
				continue;
		} else if (rc < 0) {
			break;
		}
		if (n && !rx_push(r, b, n, bytes)) {
			n = 0;
			rc = -ECANCELED;
			break;
		}
		n = bytes = 0;
	}
	if (n && !rx_push(r, b, n, bytes))
		rc = -ECANCELED;
	pthread_mutex_lock(&r->mu);
	r->ended = true;
	r->end = rc;
	pthread_cond_signal(&r->cv_data);
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
	pthread_cond_init(&r->cv_data, NULL);
	pthread_cond_init(&r->cv_room, NULL);
	l->split = true;
	rc = -pthread_create(&r->thr, NULL, rx_thread, r);
	if (rc < 0) {
		l->split = false;
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv_data);
		pthread_cond_destroy(&r->cv_room);
		free(r->q);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int linkrx_next(struct linkrx *r, struct proto_frame *f, bool wait)
{
	link_slab_put(r->cur);
	r->cur = NULL;
	if (r->got_i == r->got_n) {
		size_t bytes = 0;

		pthread_mutex_lock(&r->mu);
		while (wait && !r->n && !r->ended)
			pthread_cond_wait(&r->cv_data, &r->mu);
		if (!r->n) {
			int rc = r->ended ? r->end : 0;

			pthread_mutex_unlock(&r->mu);
			return rc;
		}
		for (r->got_i = r->got_n = 0; r->n && r->got_n < RX_BATCH; r->n--) {
			r->got[r->got_n] = r->q[r->head];
			bytes += rx_size(&r->got[r->got_n++].f);
			r->head = (r->head + 1) % r->cap;
		}
		r->bytes -= bytes;
		pthread_cond_signal(&r->cv_room);
		pthread_mutex_unlock(&r->mu);
	}
	r->cur = r->got[r->got_i].slab;
	*f = r->got[r->got_i++].f;
	return 1;
}

struct link_slab *linkrx_hold(struct linkrx *r)
{
	return link_slab_get(r->cur);
}

void linkrx_stop(struct linkrx *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv_room);
	pthread_mutex_unlock(&r->mu);
	/* wakes a thread waiting in poll() for input */
	shutdown(r->l->fd, SHUT_RD);
	pthread_join(r->thr, NULL);
	for (; r->n; r->n--, r->head = (r->head + 1) % r->cap)
		link_slab_put(r->q[r->head].slab);
	for (; r->got_i < r->got_n; r->got_i++)
		link_slab_put(r->got[r->got_i].slab);
	link_slab_put(r->cur);
	r->l->split = false;
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv_data);
	pthread_cond_destroy(&r->cv_room);
	free(r->q);
	free(r);
}
