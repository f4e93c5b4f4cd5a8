/*
 * verifier — the secondary's side of `twinfs verify` (verifier.h). The walk
 * thread builds the inventory and then wakes the loop through an eventfd;
 * from there serve's loop thread alone touches the connection: it encodes
 * entries into the output while that is below a high mark, continuing
 * from the write callback, then ENTRIES_END, and closes once it is sent.
 */
#include "netsync/secondary/verifier.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/clock.h"
#include "common/log.h"
#include "netsync/delta/inventory.h"
#include "netsync/wire/limits.h"

#define VERIFIER_OUT_HIGH (4u << 20)	/* encode more when below this */

struct verifier {
	struct bufferevent *bev;
	struct evbuffer *in;
	char peer[64];
	char *store;
	pthread_t thr;
	bool thr_started;
	int efd;		/* the walk thread's "done" */
	struct event *done_ev;
	struct inventory inv;	/* the thread's until done, then the loop's */
	int walk_rc;
	size_t next;		/* entries encoded so far */
	bool root_sent;		/* the root's own entry went first */
	uint64_t progress_ns;	/* the output last drained (or the walk ended) */
	bool ended;		/* ENTRIES_END queued */
	bool finished;		/* written, or the connection is gone */
};

static void *verifier_walk(void *arg)
{
	struct verifier *v = arg;
	uint64_t one = 1;

	pthread_setname_np(pthread_self(), "tw-verify");
	v->walk_rc = inventory_build(v->store, NULL, &v->inv);
	if (write(v->efd, &one, sizeof(one)) < 0)
		log_warn("cannot wake the loop after the verify walk", "err=%s", strerror(errno));
	return NULL;
}

static void verifier_close(struct verifier *v)
{
	if (v->bev) {
		bufferevent_free(v->bev);
		v->bev = NULL;
	}
	v->finished = true;
}

/* Encodes entries until the output is full enough, then the end. */
static void verifier_fill(struct verifier *v)
{
	struct evbuffer *out;

	if (!v->bev || v->ended)
		return;
	out = bufferevent_get_output(v->bev);
	if (!v->root_sent) {
		v->root_sent = true;
		if (inventory_encode_root(&v->inv, out) < 0) {
			log_error("cannot encode the store root's entry", "store=%s", v->store);
			verifier_close(v);
			return;
		}
	}
	while (v->next < v->inv.n && evbuffer_get_length(out) < VERIFIER_OUT_HIGH) {
		if (proto_encode_entry(out, &v->inv.e[v->next]) < 0) {
			log_error("cannot encode an inventory entry", "path=%s",
				  v->inv.e[v->next].path);
			verifier_close(v);
			return;
		}
		v->next++;
	}
	if (v->next == v->inv.n) {
		proto_encode_entries_end(out, v->inv.n, v->walk_rc < 0 ? (uint32_t)-v->walk_rc : 0);
		v->ended = true;
		log_notice("sent the store's inventory to a verifier", "peer=%s entries=%zu "
			   "bytes_read=%llu%s", v->peer, v->inv.n,
			   (unsigned long long)v->inv.bytes_read, v->walk_rc < 0 ? " incomplete=true" : "");
	}
}

static void verifier_write_cb(struct bufferevent *bev, void *arg)
{
	struct verifier *v = arg;

	v->progress_ns = clock_mono_ns();
	if (v->ended) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			verifier_close(v);
		return;
	}
	if (v->thr_started && v->efd < 0)	/* the walk is done */
		verifier_fill(v);
}

static void verifier_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct verifier *v = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (!v->ended)
			log_warn("a verifier left before the inventory was sent", "peer=%s", v->peer);
		verifier_close(v);
	}
}

static void verifier_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct verifier *v = arg;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	pthread_join(v->thr, NULL);
	event_free(v->done_ev);
	v->done_ev = NULL;
	close(v->efd);
	v->efd = -1;
	if (v->walk_rc < 0)
		log_error("cannot walk the store for a verifier", "store=%s err=\"%s\"", v->store,
			  strerror(-v->walk_rc));
	v->progress_ns = clock_mono_ns();
	verifier_fill(v);
}

int verifier_start(struct event_base *base, const char *store, struct gate_conn *c,
		   struct verifier **out)
{
	struct verifier *v = calloc(1, sizeof(*v));
	int rc = -ENOMEM;

	if (!v)
		goto fail;
	v->bev = c->bev;
	v->in = c->in;
	c->bev = NULL;
	c->in = NULL;
	snprintf(v->peer, sizeof(v->peer), "%s", c->peer);
	v->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	v->store = strdup(store);
	v->done_ev = v->efd < 0 ? NULL : event_new(base, v->efd, EV_READ, verifier_done_cb, v);
	if (!v->store || !v->done_ev || event_add(v->done_ev, NULL) < 0)
		goto fail_v;
	bufferevent_setcb(v->bev, NULL, verifier_write_cb, verifier_event_cb, v);
	bufferevent_enable(v->bev, EV_WRITE);
	bufferevent_setwatermark(v->bev, EV_WRITE, VERIFIER_OUT_HIGH / 2, 0);
	rc = -pthread_create(&v->thr, NULL, verifier_walk, v);
	if (rc < 0)
		goto fail_v;
	v->thr_started = true;
	log_notice("a verifier connected; walking the store", "peer=%s", v->peer);
	*out = v;
	return 0;
fail_v:
	if (v->done_ev)
		event_free(v->done_ev);
	if (v->efd >= 0)
		close(v->efd);
	if (v->bev)
		bufferevent_free(v->bev);
	if (v->in)
		evbuffer_free(v->in);
	free(v->store);
	free(v);
	return rc;
fail:
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->in)
		evbuffer_free(c->in);
	c->bev = NULL;
	c->in = NULL;
	return rc;
}

void verifier_tick(struct verifier *v, uint64_t now_ns, uint64_t stall_ns)
{
	if (!v->bev || v->efd >= 0 || now_ns - v->progress_ns <= stall_ns)
		return;
	log_warn("a verifier does not read its inventory; dropping it", "peer=%s sent=%zu "
		 "entries=%zu unread_bytes=%zu", v->peer, v->next, v->inv.n,
		 evbuffer_get_length(bufferevent_get_output(v->bev)));
	limits_abort_on_close(bufferevent_getfd(v->bev));
	verifier_close(v);
}

bool verifier_done(const struct verifier *v)
{
	return v->finished && v->efd < 0;
}

void verifier_free(struct verifier *v)
{
	if (!v)
		return;
	if (v->efd >= 0) {	/* the walk still runs: wait for it */
		pthread_join(v->thr, NULL);
		event_free(v->done_ev);
		close(v->efd);
	}
	if (v->bev)
		bufferevent_free(v->bev);
	if (v->in)
		evbuffer_free(v->in);
	inventory_free(&v->inv);
	free(v->store);
	free(v);
}
