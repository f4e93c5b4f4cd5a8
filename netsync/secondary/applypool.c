/*
 * applypool — parallel apply of a mirror session's file runs (applypool.h).
 *
 * Why runs commute. A run creates or rewrites one path P (and with a
 * RENAME moves it onto Q); its parent folder exists already (MKDIR is a
 * barrier), and no other run since the last barrier names P or Q (the
 * pool checks, and a run that would is handled as a barrier instead). So
 * the store ends the same whichever worker applies a run first. Each
 * worker's receiver caches folder and file fds by path; names changed by
 * anyone else (the session's own receiver at a barrier, another worker's
 * replacement) invalidate them: a worker forgets its names after the
 * session applied a frame itself (applypool_forget), and the session
 * forgets its own after a drain that applied runs.
 *
 * Locking: one mutex for the queues, byte counts, the error and the
 * flusher's flag; each worker waits on its own condvar and is woken for a
 * batch of frames, not per frame; the session waits on cv_idle for room
 * or for a drain; the flusher (tw-flush) on cv_flush.
 *
 * Hand-offs in batches, both ways. A worker takes up to AP_BATCH queued
 * frames per lock and applies them unlocked (the session appends only
 * past them: they count in the queue until done). A session that found
 * the pool full waits until it is half empty, and a worker wakes it only
 * then (or when a drain waits and its queue is empty): waking it per
 * applied frame, with a full pool, cost a futex wait and wake per frame
 * (docs/benchmarks.md, "bench/mirror.sh").
 */
#include "netsync/secondary/applypool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/pathset.h"
#include "netsync/secondary/receiver.h"

#define AP_WORKERS_MAX 4
#define AP_QUEUE 4096		/* frames queued per worker at most */
#define AP_BYTES (64u << 20)	/* frame bytes queued in the pool at most */
#define AP_WAKE_FRAMES 32	/* an idle worker is woken for this many */
#define AP_FLUSH_STEP (256u << 20)	/* writeback started per this much */
#define AP_BATCH 64		/* frames a worker takes per lock */

struct ap_ent {
	struct proto_frame f;
	struct link_slab *slab;
};

struct ap_worker {
	struct applypool *p;
	pthread_t thr;
	pthread_cond_t cv;
	struct receiver *r;
	struct ap_ent q[AP_QUEUE];	/* ring [head, head + n) */
	size_t head, n;
	size_t bytes;
	bool busy;		/* applying a frame now */
	bool waiting;		/* in its condvar wait */
	bool forget;		/* forget cached names before the next frame */
};

struct applypool {
	pthread_mutex_t mu;
	pthread_cond_t cv_idle;	/* room again, or a drain done (below) */
	struct ap_worker *w[AP_WORKERS_MAX];
	int n_w;
	size_t bytes;
	bool stop;
	/* what the session waits for on cv_idle (ap_room_ok, ap_idle) */
	bool wait_room, wait_drain;
	int room_w;		/* the worker whose queue it waits on */
	atomic_int err;		/* 0, or the first failure's -errno */
	int efd;		/* eventfd, readable once a run failed */
	uint32_t code;
	char text[PROTO_TEXT_MAX];
	atomic_uint_fast64_t ops, data_bytes;
	/* writeback in steps (ap_flusher) */
	pthread_t flusher;
	bool has_flusher, flush_due;
	pthread_cond_t cv_flush;
	/* the session's own */
	int cur;		/* worker of the open run, -1: none */
	char cur_path[PROTO_PATH_MAX + 1];
	struct pathset seen;	/* P and Q of runs since the last drain */
	bool ran;		/* runs offered since the last drain */
};

static size_t ap_size(const struct proto_frame *f)
{
	return PROTO_HDR_LEN + (size_t)f->h.len;
}

/* Records the first failure in the words serve uses for a primary. */
static void ap_failed(struct applypool *p, struct receiver *r, const char *what, int rc)
{
	const char *path = receiver_failed_path(r);
	int none = 0;

	pthread_mutex_lock(&p->mu);
	if (atomic_compare_exchange_strong(&p->err, &none, rc)) {
		(void)eventfd_write(p->efd, 1);
		if (rc == -EBADMSG) {
			p->code = PROTO_E_BADHASH;
			snprintf(p->text, sizeof(p->text), "%s '%s': block hash mismatch; nothing "
				 "written", what, path);
		} else if (rc == -EINVAL || rc == -EXDEV || rc == -ELOOP) {
			p->code = PROTO_E_PATH;
			snprintf(p->text, sizeof(p->text), "%s '%s': path not allowed (%s)", what,
				 path, strerror(-rc));
		} else {
			p->code = PROTO_E_APPLY;
			snprintf(p->text, sizeof(p->text), "%s '%s': %s", what, path,
				 strerror(-rc));
		}
	}
	pthread_mutex_unlock(&p->mu);
}

/* Applies one frame of a run (the types applypool_offer takes). */
static void ap_apply(struct ap_worker *w, const struct proto_frame *f)
{
	struct applypool *p = w->p;
	int rc = -EBADMSG;

	if (f->h.type == PROTO_OP) {
		struct proto_op o;

		if (proto_decode_op(f, &o) == 0) {
			rc = receiver_op(w->r, &o);
			if (rc < 0)
				ap_failed(p, w->r, proto_op_name(o.op.type), rc);
			else
				atomic_fetch_add(&p->ops, 1);
		}
	} else if (f->h.type == PROTO_DATA) {
		struct proto_data d;

		if (proto_decode_data(f, &d) == 0) {
			rc = receiver_data(w->r, &d);
			if (rc < 0) {
				ap_failed(p, w->r, "write", rc);
			} else {
				uint64_t was = atomic_fetch_add(&p->data_bytes, d.len);

				if ((was + d.len) / AP_FLUSH_STEP != was / AP_FLUSH_STEP) {
					pthread_mutex_lock(&p->mu);
					p->flush_due = true;
					pthread_cond_signal(&p->cv_flush);
					pthread_mutex_unlock(&p->mu);
				}
			}
		}
	} else {
		struct proto_attr a;

		if (proto_decode_attr(f, &a) == 0) {
			rc = receiver_attr(w->r, &a);
			if (rc < 0)
				ap_failed(p, w->r, "setattr", rc);
		}
	}
}

/*
 * Writeback in steps: every AP_FLUSH_STEP of data the workers wrote, a
 * syncfs of the store on a thread of its own (tw-flush), so that the
 * session's syncfs at BATCH_END finds little left. Small files are below
 * the receiver's early-writeback run (RECV_WB_CHUNK), and that last syncfs
 * wrote all of them while the client waited: 0.35-0.56 s of a 1.57 GB
 * mirror's 2.3-4.6 s, 0.01-0.06 s with the steps (docs/benchmarks.md).
 * Durability is unchanged: only BATCH_END's syncfs counts.
 */
static void *ap_flusher(void *arg)
{
	struct applypool *p = arg;

	pthread_setname_np(pthread_self(), "tw-flush");
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->flush_due && !p->stop)
			pthread_cond_wait(&p->cv_flush, &p->mu);
		if (p->stop)
			break;
		p->flush_due = false;
		pthread_mutex_unlock(&p->mu);
		(void)syncfs(receiver_store_fd(p->w[0]->r));	/* the session's decides */
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Whether a session that found the pool full may push again: it is half
 * empty, in bytes and in the queue it waits on. Under p->mu. */
static bool ap_room_ok(const struct applypool *p)
{
	return p->bytes <= AP_BYTES / 2 && p->w[p->room_w]->n <= AP_QUEUE / 2;
}

/* Whether every worker is idle with nothing queued. Under p->mu. */
static bool ap_idle(const struct applypool *p)
{
	for (int i = 0; i < p->n_w; i++)
		if (p->w[i]->n || p->w[i]->busy)
			return false;
	return true;
}

static void *ap_thread(void *arg)
{
	struct ap_worker *w = arg;
	struct applypool *p = w->p;

	pthread_setname_np(pthread_self(), "tw-apply");
	pthread_mutex_lock(&p->mu);
	for (;;) {
		size_t k, head, bytes = 0;

		while (!w->n && !p->stop) {
			w->waiting = true;
			pthread_cond_wait(&w->cv, &p->mu);
			w->waiting = false;
		}
		if (p->stop)
			break;
		/* [head, head + k) stay counted in w->n: ap_push writes past them */
		k = w->n < AP_BATCH ? w->n : AP_BATCH;
		head = w->head;
		w->busy = true;
		if (w->forget) {
			w->forget = false;
			receiver_forget(w->r);
		}
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < k; i++) {
			struct ap_ent *e = &w->q[(head + i) % AP_QUEUE];

			/* after a failure the run's frames are dropped: the session ends */
			if (!atomic_load(&p->err))
				ap_apply(w, &e->f);
			bytes += ap_size(&e->f);
			link_slab_put(e->slab);
		}
		pthread_mutex_lock(&p->mu);
		w->head = (head + k) % AP_QUEUE;
		w->n -= k;
		w->busy = false;
		w->bytes -= bytes;
		p->bytes -= bytes;
		if ((p->wait_room && ap_room_ok(p)) || (p->wait_drain && ap_idle(p)))
			pthread_cond_signal(&p->cv_idle);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Wakes worker W if it sleeps and has work. Under p->mu. */
static void ap_wake(struct ap_worker *w)
{
	if (w->waiting && w->n)
		pthread_cond_signal(&w->cv);
}

/* Ends the open run. Its worker is not woken for it alone: small files
 * would cost a wake-up each; ap_push wakes it for a batch, and the
 * session drains (waking every worker) before it waits for input. */
static void ap_close_run(struct applypool *p)
{
	p->cur = -1;
}

/* Queues F (slab S) on worker I, waiting for room. */
static void ap_push(struct applypool *p, int i, const struct proto_frame *f,
		    struct link_slab *s)
{
	struct ap_worker *w = p->w[i];

	pthread_mutex_lock(&p->mu);
	if ((p->bytes && p->bytes + ap_size(f) > AP_BYTES) || w->n == AP_QUEUE) {
		for (int k = 0; k < p->n_w; k++)
			ap_wake(p->w[k]);
		p->wait_room = true;
		p->room_w = i;
		while (!ap_room_ok(p))
			pthread_cond_wait(&p->cv_idle, &p->mu);
		p->wait_room = false;
	}
	w->q[(w->head + w->n) % AP_QUEUE] = (struct ap_ent){ *f, s };
	w->n++;
	w->bytes += ap_size(f);
	p->bytes += ap_size(f);
	if (w->n >= AP_WAKE_FRAMES || w->bytes >= PROTO_BLOCK_SIZE)
		ap_wake(w);
	pthread_mutex_unlock(&p->mu);
}

/* Starts a run of PATH on the least loaded worker; false if PATH was in
 * a run since the last drain. */
static bool ap_open_run(struct applypool *p, const char *path)
{
	size_t least = (size_t)-1;

	ap_close_run(p);
	if (pathset_find(&p->seen, path) || pathset_add(&p->seen, path, 0) < 0)
		return false;
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_w; i++) {
		if (p->w[i]->bytes + (p->w[i]->busy ? 1 : 0) < least) {
			least = p->w[i]->bytes + (p->w[i]->busy ? 1 : 0);
			p->cur = i;
		}
	}
	pthread_mutex_unlock(&p->mu);
	snprintf(p->cur_path, sizeof(p->cur_path), "%s", path);
	p->ran = true;
	return true;
}

int applypool_offer(struct applypool *p, const struct proto_frame *f, struct link_slab *s)
{
	const char *path = NULL;
	bool in_run;

	if (atomic_load(&p->err))
		return -EIO;
	if (f->h.type == PROTO_OP) {
		struct proto_op o;

		if (proto_decode_op(f, &o) < 0)
			goto not_ours;
		if (o.op.type == JOP_CREATE) {
			if (!ap_open_run(p, o.op.path))
				goto not_ours;
			ap_push(p, p->cur, f, s);
			return 1;
		}
		in_run = p->cur >= 0 && !strcmp(o.op.path, p->cur_path);
		if (in_run && (o.op.type == JOP_SETXATTR || o.op.type == JOP_REMOVEXATTR)) {
			ap_push(p, p->cur, f, s);
			return 1;
		}
		if (in_run && o.op.type == JOP_RENAME && o.op.path2 &&
		    !pathset_find(&p->seen, o.op.path2) && pathset_add(&p->seen, o.op.path2, 0) > 0) {
			ap_push(p, p->cur, f, s);
			ap_close_run(p);
			p->ran = true;
			return 1;
		}
		goto not_ours;
	}
	if (f->h.type == PROTO_DATA) {
		struct proto_data d;

		if (proto_decode_data(f, &d) == 0)
			path = d.path;
	} else if (f->h.type == PROTO_ATTR) {
		struct proto_attr a;

		if (proto_decode_attr(f, &a) == 0)
			path = a.path;
	}
	if (path && p->cur >= 0 && !strcmp(path, p->cur_path)) {
		ap_push(p, p->cur, f, s);
		return 1;
	}
not_ours:
	ap_close_run(p);
	return 0;
}

void applypool_kick(struct applypool *p)
{
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_w; i++)
		ap_wake(p->w[i]);
	pthread_mutex_unlock(&p->mu);
}

int applypool_fd(const struct applypool *p)
{
	return p->efd;
}

int applypool_drain(struct applypool *p)
{
	bool ran = p->ran;

	/* the open run stays open: its next frames go to the same worker,
	 * after the ones drained now (a large file streams through here
	 * whenever the session catches up with the socket) */
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_w; i++)
		ap_wake(p->w[i]);
	p->wait_drain = true;
	while (!ap_idle(p))
		pthread_cond_wait(&p->cv_idle, &p->mu);
	p->wait_drain = false;
	pthread_mutex_unlock(&p->mu);
	pathset_clear(&p->seen);
	pathset_init(&p->seen);
	if (p->cur >= 0 && pathset_add(&p->seen, p->cur_path, 0) < 0)
		p->cur = -1;
	p->ran = false;
	if (atomic_load(&p->err))
		return -EIO;
	return ran ? 1 : 0;
}

void applypool_forget(struct applypool *p)
{
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_w; i++)
		p->w[i]->forget = true;
	pthread_mutex_unlock(&p->mu);
}

uint32_t applypool_error(const struct applypool *p, const char **text)
{
	*text = p->text;
	return p->code;
}

void applypool_counts(const struct applypool *p, uint64_t *ops, uint64_t *data_bytes)
{
	*ops = atomic_load(&p->ops);
	*data_bytes = atomic_load(&p->data_bytes);
}

int applypool_start(const char *store, struct applypool **out)
{
	struct applypool *p = calloc(1, sizeof(*p));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want = cpus < 2 ? 2 : cpus > AP_WORKERS_MAX ? AP_WORKERS_MAX : (int)cpus, rc = 0;

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_idle, NULL);
	pthread_cond_init(&p->cv_flush, NULL);
	pathset_init(&p->seen);
	p->cur = -1;
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0)
		rc = -errno;
	for (int i = 0; i < want && rc == 0; i++) {
		struct ap_worker *w = calloc(1, sizeof(*w));

		if (!w) {
			rc = -ENOMEM;
			break;
		}
		w->p = p;
		pthread_cond_init(&w->cv, NULL);
		rc = receiver_open(store, NULL, &w->r);
		if (rc == 0)
			rc = -pthread_create(&w->thr, NULL, ap_thread, w);
		if (rc < 0) {
			receiver_close(w->r);
			pthread_cond_destroy(&w->cv);
			free(w);
			break;
		}
		p->w[p->n_w++] = w;
	}
	if (rc == 0)
		p->has_flusher = pthread_create(&p->flusher, NULL, ap_flusher, p) == 0;
	if (rc < 0) {
		applypool_stop(p);
		return rc;
	}
	*out = p;
	return 0;
}

void applypool_stop(struct applypool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	for (int i = 0; i < p->n_w; i++)
		pthread_cond_signal(&p->w[i]->cv);
	pthread_cond_signal(&p->cv_flush);
	pthread_mutex_unlock(&p->mu);
	if (p->has_flusher)
		pthread_join(p->flusher, NULL);
	for (int i = 0; i < p->n_w; i++) {
		struct ap_worker *w = p->w[i];

		pthread_join(w->thr, NULL);
		for (; w->n; w->n--, w->head = (w->head + 1) % AP_QUEUE)
			link_slab_put(w->q[w->head].slab);
		receiver_close(w->r);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
	pathset_clear(&p->seen);
	if (p->efd >= 0)
		close(p->efd);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_idle);
	pthread_cond_destroy(&p->cv_flush);
	free(p);
}
