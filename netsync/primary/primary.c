/*
 * primary — the replication thread of a running mount. Owns one thread and
 * its event_base, which run the sender (journal -> peer), the control
 * socket STATE/control.sock (status, sync) and the periodic work. FUSE
 * threads enter only through primary_peer_begin/end(), which talk to the
 * journal and reads atomics, never the loop's events or the sender.
 */
#include "netsync/primary/primary.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/histo.h"
#include "common/log.h"
#include "conf/conf.h"
#include "netsync/control/control.h"
#include "journal/journal.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/metrics.h"
#include "netsync/control/statusinfo.h"
#include "netsync/roles/mountrec.h"
#include "netsync/primary/sender.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/tls.h"

#define SYNC_POLL_MS	5

/* A `twinfs sync` waiting for the peer's ack (loop thread only). */
struct sync_waiter {
	uint64_t seq;		/* done once acked_seq >= seq */
	double deadline;	/* clock_mono_s(); 0: none */
	struct control_req *req;	/* reply handle */
	struct sync_waiter *next;
};

struct primary {
	struct journal *j;
	char *peer;
	char *state_dir;
	char *store_dir;
	char *mountpoint;
	int mode;		/* enum conf_mode as configured */
	uint32_t sync_timeout_s;
	bool insecure;
	struct tls_ctx *tls;	/* the link's keys; NULL: plaintext */
	struct tls_opts tls_opts;	/* where they came from (for `twinfs verify`) */
	struct metrics *metrics;	/* /metrics, when metrics.listen is set */

	pthread_t thread;
	struct event_base *base;
	struct event *notify_ev;
	struct event *tick_ev;
	struct event *stop_ev;
	struct event *poll_ev;	/* runs while sync waiters or a stop flush wait */
	int stop_fd;		/* eventfd: primary_stop wakes the loop */
	struct sender *snd;
	struct control_server *ctl;
	struct sync_waiter *waiters;
	struct statusinfo si;	/* loop thread: version, uptime, last ack */

	/* Stop: set by primary_stop before waking the loop. */
	int flush_ms;
	bool stopping;		/* loop thread only */
	uint64_t stop_seq;
	double stop_deadline;

	/* Read by FUSE threads. */
	atomic_bool degraded;	/* sync mode fell back to async */
	/* Loop thread: the barrier the peer must ack before sync mode comes
	 * back (0: none yet), and when the guarantee was lost and regained
	 * (CLOCK_REALTIME seconds, 0: never). */
	uint64_t catchup_seq;
	atomic_llong degraded_at, regained_at;
	atomic_int n_waiting;	/* FUSE threads + sync requests waiting for acks */
	/* Sync mode: how long each fsync/flush/close waited for the peer
	 * (FUSE threads add, /metrics reads). */
	struct histo sync_wait;
};

/* When this FUSE thread's primary_peer_begin took its barrier. */
static __thread uint64_t primary_wait_t0;

static bool primary_has_peer(const struct primary *p)
{
	return p->peer && p->peer[0];
}

static const char *primary_mode_name(const struct primary *p)
{
	return p->mode == CONF_MODE_SYNC ? "sync" : "async";
}

/* ---- status ---- */

/*
 * Lag: what the peer does not have yet. lag_ops counts journal records
 * after the peer's ack; lag_bytes is file data not yet acked (the
 * journal's estimate of dirty bytes, which includes data in flight).
 */
static void primary_status_json(struct primary *p, struct evbuffer *out)
{
	struct journal_stats js;
	struct sender_stats ss;
	struct ctljson jo, *w = &jo;

	journal_get_stats(p->j, &js);
	sender_get_stats(p->snd, &ss);
	ctljson_begin(w, out);
	ctljson_bool(w, "ok", true);
	ctljson_str(w, "role", "primary");
	ctljson_bool(w, "connected", ss.connected);
	ctljson_str(w, "peer", primary_has_peer(p) ? p->peer : NULL);
	ctljson_str(w, "peer_state", peer_state_name(ss.state));
	ctljson_str(w, "mode", primary_mode_name(p));
	ctljson_bool(w, "degraded", atomic_load(&p->degraded));
	if (atomic_load(&p->degraded_at))
		ctljson_i64(w, "degraded_at", atomic_load(&p->degraded_at));
	if (atomic_load(&p->regained_at))
		ctljson_i64(w, "sync_regained_at", atomic_load(&p->regained_at));
	ctljson_u64(w, "lag_ops", js.pending_ops);
	ctljson_u64(w, "lag_bytes", js.pending_bytes);
	ctljson_u64(w, "dirty_files", js.dirty_files);
	ctljson_u64(w, "unmarked_files", js.unmarked_files);
	ctljson_u64(w, "acked_seq", js.acked_seq);
	ctljson_u64(w, "head_seq", js.head_seq);
	ctljson_u64(w, "sent_seq", js.sent_seq);
	ctljson_u64(w, "send_rate", ss.send_rate);
	ctljson_u64(w, "bytes_sent", ss.bytes_sent);
	ctljson_u64(w, "bytes_held", ss.bytes_held);
	ctljson_u64(w, "inflight_bytes", ss.inflight_bytes);
	ctljson_u64(w, "reconnects", ss.reconnects);
	ctljson_u64(w, "apply_errors", ss.apply_errors);
	ctljson_u64(w, "needs_scan", js.needs_scan);
	ctljson_u64(w, "journal_bytes", js.disk_bytes);
	ctljson_u64(w, "journal_segments", js.segments);
	ctljson_u64(w, "acked_durable_seq", js.acked_durable_seq);
	ctljson_u64(w, "store_syncs", js.store_syncs);
	ctljson_bool(w, "resync", ss.resync);
	ctljson_u64(w, "resync_files", ss.resync_files);
	ctljson_u64(w, "resync_bytes", ss.resync_bytes);
	ctljson_u64(w, "resync_files_read", ss.resync_files_read);
	ctljson_u64(w, "resync_bytes_read", ss.resync_bytes_read);
	ctljson_u64(w, "resync_bytes_matched", ss.resync_bytes_matched);
	ctljson_u64(w, "resync_files_left", ss.resync_files_left);
	ctljson_u64(w, "resync_bytes_left", ss.resync_bytes_left);
	ctljson_u64(w, "repairs_pending", ss.repairs_pending);
	ctljson_u64(w, "stuck_paths", ss.stuck_paths);
	ctljson_str(w, "stuck_path", ss.stuck_paths ? ss.stuck_path : NULL);
	ctljson_str(w, "stuck_reason", ss.stuck_paths ? ss.stuck_reason : NULL);
	ctljson_str(w, "peer_stalled", ss.peer_stalled[0] ? ss.peer_stalled : NULL);
	sender_status_lineage(p->snd, w);	/* generation, verdict, split_brain */
	ctljson_str(w, "mountpoint", p->mountpoint);
	ctljson_str(w, "last_error", ss.last_error[0] ? ss.last_error : NULL);
	ctljson_bool(w, "insecure", p->insecure);
	ctljson_str(w, "tls", p->tls ? tls_ctx_mode(p->tls) : NULL);
	/* where the keys are (never the keys): `twinfs verify --state` opens
	 * its own connection to the peer with them */
	ctljson_str(w, "tls_psk_file", p->tls ? p->tls_opts.psk_file : NULL);
	ctljson_str(w, "tls_cert", p->tls ? p->tls_opts.cert : NULL);
	ctljson_str(w, "tls_key", p->tls ? p->tls_opts.key : NULL);
	ctljson_str(w, "tls_peer_ids", p->tls ? p->tls_opts.peer_ids : NULL);
	statusinfo_json(w, &p->si, p->j, p->state_dir, p->store_dir);
	ctljson_end(w);
}

/* ---- sync waiters ---- */

static void primary_arm_poll(struct primary *p)
{
	struct timeval tv = { 0, SYNC_POLL_MS * 1000 };

	if (!evtimer_pending(p->poll_ev, NULL))
		evtimer_add(p->poll_ev, &tv);
}

static void primary_reply_sync(struct primary *p, struct control_req *req,
			       const char *result, const char *why,
			       uint64_t seq)
{
	struct journal_stats js;
	struct ctljson w;

	journal_get_stats(p->j, &js);
	ctljson_begin(&w, control_req_out(req));
	ctljson_bool(&w, "ok", strcmp(result, "ok") == 0);
	ctljson_str(&w, "result", result);
	if (why)
		ctljson_str(&w, "error", why);
	ctljson_u64(&w, "seq", seq);
	ctljson_u64(&w, "acked_seq", js.acked_seq);
	ctljson_end(&w);
	control_req_send(req);
}

/* Answers waiters whose seq is acked or whose deadline passed. */
static void primary_check_waiters(struct primary *p)
{
	struct sync_waiter **pp = &p->waiters, *wt;
	struct journal_stats js;
	struct sender_stats ss;
	double now = clock_mono_s();
	char why[768];

	journal_get_stats(p->j, &js);
	sender_get_stats(p->snd, &ss);
	while ((wt = *pp)) {
		/* Synced: the peer acked the barrier, no path waits for a
		 * repair (a path it failed to apply is not on it yet, whatever
		 * the acks say), and the peer accepted this node's history in
		 * this mount's life: acks in the journal say nothing about a
		 * peer that now holds another node's data. */
		if (ss.refused) {
			snprintf(why, sizeof(why), "the peer %s refuses this node: %s", p->peer,
				 ss.last_error);
			primary_reply_sync(p, wt->req, "refused", why, wt->seq);
		} else if (js.acked_seq >= wt->seq && ss.repairs_pending == 0 && ss.decided) {
			primary_reply_sync(p, wt->req, "ok", NULL, wt->seq);
			statusinfo_sync_ok(&p->si);
		} else if (wt->deadline > 0 && now >= wt->deadline) {
			if (ss.peer_stalled[0])
				snprintf(why, sizeof(why), "timed out: the peer %s cannot apply "
					 "changes for now (it retries): %s", p->peer,
					 ss.peer_stalled);
			else if (ss.stuck_paths)
				snprintf(why, sizeof(why), "timed out: the peer %s cannot apply "
					 "/%s (%" PRIu64 " stuck path(s)): %s", p->peer,
					 ss.stuck_path, ss.stuck_paths, ss.stuck_reason);
			else
				snprintf(why, sizeof(why), "timed out: the peer %s has "
					 "acknowledged seq %" PRIu64 " of %" PRIu64 "%s (%s%s%s)",
					 p->peer, js.acked_seq, wt->seq,
					 ss.repairs_pending ? ", a repair is pending" : "",
					 ss.connected ? "connected" : "not connected",
					 ss.last_error[0] ? ": " : "", ss.last_error);
			primary_reply_sync(p, wt->req, "timeout", why, wt->seq);
		} else {
			pp = &wt->next;
			continue;
		}
		*pp = wt->next;
		atomic_fetch_sub(&p->n_waiting, 1);
		free(wt);
	}
}

/*
 * `sync [timeout_ms]`: a barrier in the journal and a waiter that the
 * poll timer answers once the peer acks it. The loop never blocks on
 * journal_wait_acked; FUSE threads in sync mode do (primary_peer_end),
 * but they are not the loop.
 */
static int primary_on_sync(struct control_req *req, int argc, char **argv,
			   void *ctx)
{
	struct primary *p = ctx;
	const char *arg = argc > 1 ? argv[1] : NULL;
	struct sync_waiter *wt;
	long long ms = arg && *arg ? atoll(arg) : 0;

	if (!primary_has_peer(p)) {
		primary_reply_sync(p, req, "error", "this mount has no peer "
				   "(mounted without --peer): nothing to sync to", 0);
		return 0;
	}
	wt = calloc(1, sizeof(*wt));
	if (!wt)
		return -ENOMEM;
	atomic_fetch_add(&p->n_waiting, 1);
	sender_kick(p->snd);
	/* files open for passthrough writes: their current content */
	journal_scan(p->j, true);
	wt->seq = journal_barrier(p->j);
	wt->deadline = ms > 0 ? clock_mono_s() + ms / 1000.0 : 0;
	wt->req = req;
	wt->next = p->waiters;
	p->waiters = wt;
	primary_check_waiters(p);
	if (p->waiters)
		primary_arm_poll(p);
	return 0;
}

static void primary_metrics_status(void *arg, struct evbuffer *out)
{
	primary_status_json(arg, out);
}

static void primary_metrics_source(void *arg, struct evbuffer *out)
{
	struct primary *p = arg;
	struct histo_snap h;

	histo_read(&p->sync_wait, &h);
	metrics_put_help(out, "twinfs_sync_fsync_duration_seconds", "histogram",
			 "sync mode: how long an fsync, flush or close of a written file "
			 "waited for the peer's acknowledgement");
	metrics_put_histo(out, "twinfs_sync_fsync_duration_seconds", NULL, &h);
}

static int primary_on_status(struct control_req *req, int argc, char **argv,
			     void *ctx)
{
	primary_status_json(ctx, control_req_out(req));
	control_req_send(req);
	return 0;
}

/* `resolve local|peer|both [dry]` (twinfs resolve): sender_resolve_cmd. */
static int primary_on_resolve(struct control_req *req, int argc, char **argv, void *ctx)
{
	struct primary *p = ctx;
	bool dry = argc > 2 && strcmp(argv[2], "dry") == 0;

	sender_resolve_cmd(p->snd, argc > 1 ? argv[1] : "", dry, control_req_out(req));
	control_req_send(req);
	return 0;
}

static const struct control_cmd primary_cmds[] = {
	{ "status", primary_on_status },
	{ "resolve", primary_on_resolve },
	{ "sync", primary_on_sync },
	{ NULL, NULL },
};

/* ---- loop callbacks ---- */

static void primary_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct primary *p = arg;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("cannot read the journal's notify eventfd", "err=%s",
			 strerror(errno));
	sender_pump(p->snd);
}

/*
 * Sync mode and its fallback. primary_peer_end() degrades to async when
 * the peer does not ack within sync.timeout, so that an unreachable peer
 * stalls each fsync at most once per outage instead of forever. Coming
 * back must not need a moment with nothing to send (a writer that never
 * pauses would keep the mount async for good): once the peer is connected
 * the tick takes a barrier, and when the peer has acked it, sync mode is
 * back. Acks are cumulative, so every fsync after that again waits for
 * its own barrier, which covers the rest of the backlog too.
 */
static void primary_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct primary *p = arg;
	struct sender_stats ss;

	sender_tick(p->snd);
	statusinfo_tick_journal(&p->si, p->j);
	/* bounds the lag of files written through passthrough while open */
	journal_scan(p->j, false);
	if (atomic_load(&p->degraded)) {
		struct journal_stats js;

		sender_get_stats(p->snd, &ss);
		if (!ss.connected) {
			p->catchup_seq = 0;
			return;
		}
		if (!p->catchup_seq)
			p->catchup_seq = journal_barrier(p->j);
		journal_get_stats(p->j, &js);
		if (js.acked_seq >= p->catchup_seq) {
			p->catchup_seq = 0;
			atomic_store(&p->regained_at, (long long)time(NULL));
			atomic_store(&p->degraded, false);
			log_notice("peer caught up; back to sync mode", "peer=%s", p->peer);
		}
	}
}

static void primary_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct primary *p = arg;
	struct journal_stats js;
	struct sender_stats ss;

	primary_check_waiters(p);
	if (p->stopping) {
		journal_get_stats(p->j, &js);
		sender_get_stats(p->snd, &ss);
		if (js.acked_seq >= p->stop_seq || clock_mono_s() >= p->stop_deadline ||
		    !primary_has_peer(p) || !ss.connected || ss.refused) {
			if (js.acked_seq < p->stop_seq)
				log_warn("unmounting with changes the peer does not have yet; "
					 "they are sent at the next mount", "acked_seq=%" PRIu64
					 " needed=%" PRIu64, js.acked_seq, p->stop_seq);
			event_base_loopbreak(p->base);
			return;
		}
	}
	if (p->waiters || p->stopping)
		primary_arm_poll(p);
}

static void primary_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct primary *p = arg;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	p->stopping = true;
	p->stop_seq = journal_barrier(p->j);
	p->stop_deadline = clock_mono_s() + p->flush_ms / 1000.0;
	primary_poll_cb(-1, 0, p);
}

static void *primary_thread(void *arg)
{
	struct primary *p = arg;

	pthread_setname_np(pthread_self(), "tw-send");
	event_base_dispatch(p->base);
	return NULL;
}

/* ---- public ---- */

static void primary_free(struct primary *p)
{
	struct sync_waiter *wt;

	while ((wt = p->waiters)) {
		p->waiters = wt->next;
		primary_reply_sync(p, wt->req, "error", "the mount is stopping", wt->seq);
		free(wt);
	}
	control_server_stop(p->ctl);
	metrics_stop(p->metrics);
	metrics_remove_source(primary_metrics_source, p);
	sender_free(p->snd);
	tls_ctx_free(p->tls);
	if (p->notify_ev)
		event_free(p->notify_ev);
	if (p->tick_ev)
		event_free(p->tick_ev);
	if (p->stop_ev)
		event_free(p->stop_ev);
	if (p->poll_ev)
		event_free(p->poll_ev);
	/* Freeing the connection queued libevent's deferred callbacks (the
	 * TLS filter's and its socket's), which hold references to both until
	 * they run: run them, with nothing of ours left on the base, or the
	 * connection and its SSL are never freed. */
	if (p->base)
		event_base_loop(p->base, EVLOOP_NONBLOCK);
	if (p->base)
		event_base_free(p->base);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	free(p->peer);
	free(p->state_dir);
	free(p->store_dir);
	free(p->mountpoint);
	free(p);
}

int primary_start(struct journal *j, const struct conf *c,
		  const char *mountpoint, struct primary **out)
{
	struct sender_opts so = { 0 };
	struct timeval one_s = { 1, 0 };
	struct primary *p;
	int rc;

	struct tls_ctx *tls = NULL;
	struct tls_opts to = { 0 };

	if (c->peer && c->peer[0]) {
		char why[512];

		rc = tls_opts_init(&to, c->state, c->psk_file, c->tls_cert, c->tls_key,
				   c->tls_peer_id, c->tls_peer_cert, why, sizeof(why));
		if (rc == 0 && tls_opts_enabled(&to))
			rc = tls_ctx_new(&to, false, &tls, why, sizeof(why));
		if (rc == 0)
			rc = addr_check_peer(c->peer, c->insecure || tls, why, sizeof(why));
		if (rc < 0) {
			log_error("refusing to replicate", "peer=%s why=\"%s\"", c->peer, why);
			fprintf(stderr, "twinfs mount: %s\n", why);
			tls_ctx_free(tls);
			return rc;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		tls_ctx_free(tls);
		return -ENOMEM;
	}
	p->tls = tls;
	p->tls_opts = to;
	/* the copy's pointers must name its own buffers */
	if (to.cert)
		p->tls_opts.cert = p->tls_opts.cert_buf;
	if (to.key)
		p->tls_opts.key = p->tls_opts.key_buf;
	if (to.peer_ids)
		p->tls_opts.peer_ids = p->tls_opts.ids_buf;
	p->stop_fd = -1;
	p->j = j;
	p->mode = c->mode;
	p->sync_timeout_s = c->sync_timeout_s;
	p->insecure = c->insecure;
	p->peer = c->peer ? strdup(c->peer) : NULL;
	p->state_dir = strdup(c->state);
	p->store_dir = strdup(c->store);
	p->mountpoint = strdup(mountpoint ? mountpoint : "");
	atomic_init(&p->degraded, false);
	atomic_init(&p->degraded_at, 0);
	atomic_init(&p->regained_at, 0);
	atomic_init(&p->n_waiting, 0);
	if ((c->peer && !p->peer) || !p->state_dir || !p->store_dir || !p->mountpoint) {
		rc = -ENOMEM;
		goto out_free;
	}
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_fd < 0) {
		rc = -errno;
		goto out_free;
	}
	p->base = event_base_new();
	if (!p->base) {
		rc = -ENOMEM;
		goto out_free;
	}
	p->notify_ev = event_new(p->base, journal_notify_fd(j), EV_READ | EV_PERSIST,
				 primary_notify_cb, p);
	p->tick_ev = event_new(p->base, -1, EV_PERSIST, primary_tick_cb, p);
	p->stop_ev = event_new(p->base, p->stop_fd, EV_READ | EV_PERSIST,
			       primary_stop_cb, p);
	p->poll_ev = evtimer_new(p->base, primary_poll_cb, p);
	if (!p->notify_ev || !p->tick_ev || !p->stop_ev || !p->poll_ev) {
		rc = -ENOMEM;
		goto out_free;
	}
	event_add(p->notify_ev, NULL);
	event_add(p->tick_ev, &one_s);
	event_add(p->stop_ev, NULL);

	so.peer = primary_has_peer(p) ? p->peer : NULL;
	so.state_dir = p->state_dir;
	so.store_dir = p->store_dir;
	so.insecure = c->insecure;
	so.tls = p->tls;
	so.heartbeat_s = c->heartbeat_s;
	so.delta_block_size = (uint32_t)c->block_size;
	so.waiters = &p->n_waiting;
	so.mountpoint = p->mountpoint;
	rc = sender_new(p->base, j, &so, &p->snd);
	if (rc < 0)
		goto out_free;
	if (c->metrics_listen) {
		char why[300];

		if (metrics_add_source(primary_metrics_source, p) < 0)
			log_warn("no room for the sync-mode histogram in /metrics", "sources=4");
		rc = metrics_start(p->base, c->metrics_listen, c->insecure, primary_metrics_status,
				   p, &p->metrics, why, sizeof(why));
		if (rc < 0) {
			log_error("cannot serve metrics", "why=\"%s\"", why);
			fprintf(stderr, "twinfs mount: %s\n", why);
			goto out_free;
		}
	}
	rc = control_server_start(p->base, p->state_dir, primary_cmds, p, &p->ctl);
	if (rc < 0) {
		log_error("cannot serve the control socket; is another twinfs using "
			  "this state dir?", "state=%s err=%s", p->state_dir,
			  strerror(-rc));
		goto out_free;
	}
	rc = mountrec_write(p->state_dir, p->store_dir, p->mountpoint);
	if (rc < 0)
		log_warn("cannot record the store path in the state directory; "
			 "'twinfs status --pending' will need --store", "state=%s err=%s",
			 p->state_dir, strerror(-rc));
	rc = pthread_create(&p->thread, NULL, primary_thread, p);
	if (rc != 0) {
		rc = -rc;
		goto out_free;
	}
	log_info("replication started", "peer=%s mode=%s",
		 primary_has_peer(p) ? p->peer : "-", primary_mode_name(p));
	*out = p;
	return 0;
out_free:
	primary_free(p);
	return rc;
}

void primary_stop(struct primary *p, int flush_ms)
{
	uint64_t one = 1;

	if (!p)
		return;
	p->flush_ms = flush_ms < 0 ? 0 : flush_ms;
	if (write(p->stop_fd, &one, sizeof(one)) < 0)
		log_warn("cannot wake the replication thread", "err=%s", strerror(errno));
	pthread_join(p->thread, NULL);
	primary_free(p);
}

/*
 * Called by FUSE threads (fsync/flush of a written file). journal_barrier
 * and journal_wait_acked are thread-safe and wake the loop through the
 * journal's eventfd; nothing here touches the loop.
 */
bool primary_peer_begin(struct primary *p, uint64_t *seq)
{
	if (!p || p->mode != CONF_MODE_SYNC || !primary_has_peer(p) ||
	    atomic_load(&p->degraded))
		return false;
	/* counted before the barrier wakes the sender, so that it takes the
	 * batch at once instead of holding it (TAKE_AHEAD) */
	atomic_fetch_add(&p->n_waiting, 1);
	primary_wait_t0 = clock_mono_ns();
	*seq = journal_barrier(p->j);
	return true;
}

int primary_peer_end(struct primary *p, uint64_t seq)
{
	int rc, timeout_ms;

	timeout_ms = p->sync_timeout_s ? (int)p->sync_timeout_s * 1000 : -1;
	rc = journal_wait_acked(p->j, seq, timeout_ms);
	atomic_fetch_sub(&p->n_waiting, 1);
	if (primary_wait_t0)
		histo_observe(&p->sync_wait, clock_mono_ns() - primary_wait_t0);
	primary_wait_t0 = 0;
	if (rc == -ETIMEDOUT) {
		if (!atomic_exchange(&p->degraded, true)) {
			atomic_store(&p->degraded_at, (long long)time(NULL));
			log_warn("SYNC MODE DEGRADED TO ASYNC: the peer did not acknowledge "
				 "in time; writes now return before the peer has them, "
				 "until it catches up", "peer=%s timeout_s=%u",
				 p->peer, p->sync_timeout_s);
		}
		return -ETIMEDOUT;
	}
	return rc;
}
