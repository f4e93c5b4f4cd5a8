/*
 * sender — streams the journal to the peer over one TCP connection.
 * Owns the connection (a bufferevent), its state machine and the batches
 * in flight; the data of a batch is sender_data.c's, walks of the store
 * sender_walk.c's. Runs only on the primary thread's event_base; it
 * touches the journal through journal/journal.h (thread-safe) and never
 * blocks: connects, reads and writes are all driven by the loop.
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "netsync/delta/hashcache.h"
#include "journal/journal.h"
#include "netsync/roles/state.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/limits.h"
#include "netsync/wire/proto.h"
#include "netsync/control/ctljson.h"
#include "netsync/roles/tail.h"
#include "netsync/wire/proto_gen.h"
#include "netsync/wire/tls.h"
#include "netsync/primary/sentmap.h"

#define BACKOFF_MAX_MS	5000
#define CONNECT_TIMEOUT_S 5
/* At most one journal_take_batch per interval: each take appends a BATCH
 * record and waits for a group commit, so a stream of small changes
 * should make batches, not one take per create. */
#define TAKE_INTERVAL_S	0.02
/*
 * At most this many batches unacknowledged unless someone waits for the
 * peer (a sync-mode fsync, `twinfs sync`). Why: every batch costs a fixed
 * set of synchronous disk writes on both nodes (the BATCH record's group
 * commit and the ack file here; a syncfs or fsyncs plus STATE/applied on
 * the peer), whatever its size, and a copy into the mount queues its own
 * reads behind those flushes on a disk both nodes share. Holding the next
 * take until an ack arrives makes the batch size follow the peer's sync
 * time instead (self-clocking, as TCP's Nagle/delayed-ack pairing): a slow
 * sync yields one large batch, not many small ones. Two, not one: while the peer syncs batch N it
 * already applies N+1, so its apply and its sync still overlap. Waiters
 * bypass the hold, so sync-mode latency is unchanged.
 * A peer that acks each batch within TAKE_INTERVAL_S (loopback) defeats
 * the hold alone, so a stream that is busy (a take less than
 * TAKE_BUSY_AFTER_S ago) is also taken at most every
 * TAKE_BUSY_INTERVAL_S. The first change after a quiet spell still goes
 * out after TAKE_INTERVAL_S, so async lag stays TAKE_INTERVAL_S for
 * sparse changes and at most TAKE_BUSY_INTERVAL_S more during a bulk
 * copy. The measurements behind both: docs/benchmarks.md.
 */
#define TAKE_AHEAD	2
#define TAKE_BUSY_AFTER_S	0.5
#define TAKE_BUSY_INTERVAL_S	0.25
/* A subtree walk yields to the event loop after this many entries per
 * pump (each costs a readdir step and an lstat), so a baseline of a big
 * tree of small files does not hold the loop (ACKs, heartbeats, status)
 * for seconds; it continues from the write callback. */
#define WALK_STEPS_PER_PUMP 1024

static const char *const peer_state_names[] = {
	[PEER_IDLE] = "idle",
	[PEER_BACKOFF] = "backoff",
	[PEER_CONNECTING] = "connecting",
	[PEER_HELLO] = "hello",
	[PEER_STREAMING] = "streaming",
	[PEER_REFUSED] = "refused",
	[PEER_SPLIT] = "split",
};

const char *peer_state_name(enum peer_state st)
{
	if ((size_t)st < sizeof(peer_state_names) / sizeof(peer_state_names[0]))
		return peer_state_names[st];
	return "?";
}

void sender_set_state(struct sender *s, enum peer_state st, const char *why)
{
	if (s->state == st)
		return;
	log_info("peer state change", "peer=%s from=%s to=%s why=\"%s\"",
		 s->peer ? s->peer : "-", peer_state_name(s->state),
		 peer_state_name(st), why);
	s->state = st;
	s->state_since = clock_mono_s();
}

void sender_set_error(struct sender *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->last_error, sizeof(s->last_error), fmt, ap);
	va_end(ap);
}

/* ---- connection ---- */

static void sender_connect(struct sender *s);
static void sender_read_cb(struct bufferevent *bev, void *arg);
static void sender_write_cb(struct bufferevent *bev, void *arg);
static void sender_event_cb(struct bufferevent *bev, short what, void *arg);

static void inflight_free(struct inflight *f)
{
	journal_batch_free(f->b);
	free(f);
}

/*
 * Disconnect and resume — the design.
 *
 * On any connection loss every batch that was sent but not acknowledged
 * (and the one half streamed) goes back to the journal with
 * journal_requeue(), newest first, so that the journal's queue holds them
 * oldest first again. The FUSE threads are not affected: they keep
 * appending; only the lag grows. The next connection begins with the
 * HELLO exchange, whose reply carries the peer's last *durable* applied
 * sequence number; journal_rewind() then makes the next batch start just
 * after it, which covers both a peer that lost applied-but-unsynced work
 * (SIGKILL of serve) and one that applied more than it acked. Applying is
 * idempotent on the peer, so sending something twice is harmless;
 * skipping something is impossible because we never ack on our side.
 */
static void sender_requeue_all(struct sender *s)
{
	struct inflight *stack = NULL, *f, *next;

	cursor_reset(&s->c);
	/* Reverse so the newest is requeued first. */
	for (f = s->head; f; f = next) {
		next = f->next;
		f->next = stack;
		stack = f;
	}
	for (f = stack; f; f = next) {
		next = f->next;
		journal_requeue(s->j, f->b);
		free(f);
	}
	s->head = s->tail = NULL;
	s->inflight_bytes = 0;
	s->inflight_batches = 0;
	s->inflight_files = 0;
}

static void sender_schedule_retry(struct sender *s)
{
	struct timeval tv;

	tv.tv_sec = s->backoff_ms / 1000;
	tv.tv_usec = (s->backoff_ms % 1000) * 1000;
	evtimer_add(s->retry_ev, &tv);
	s->backoff_ms *= 2;
	if (s->backoff_ms > BACKOFF_MAX_MS)
		s->backoff_ms = BACKOFF_MAX_MS;
}

/*
 * Replication failures reach the default log level (warning) once, then
 * at most every PEER_WARN_EVERY_S with a count of what happened between:
 * a link that drops, and a peer that has not answered for
 * PEER_UNREACH_WARN_S (a peer still booting is not worth a warning; one
 * that never answers is). The rest is logged at info.
 */
#define PEER_UNREACH_WARN_S	10.0
#define PEER_WARN_EVERY_S	600.0

static void sender_warn_down(struct sender *s, const char *why, bool was_up)
{
	double now = clock_mono_s();
	bool due = !s->warned_at || now - s->warned_at >= PEER_WARN_EVERY_S;

	if (!s->down_since)
		s->down_since = now;
	s->down_events++;
	if (was_up && due) {
		log_warn("replication peer disconnected; changes are kept and sent "
			 "when it is back", "peer=%s why=\"%s\" drops_since_last_warning=%llu",
			 s->peer, why, (unsigned long long)s->down_events);
	} else if (!was_up && due && now - s->down_since >= PEER_UNREACH_WARN_S) {
		log_warn("replication peer not reachable; changes are kept and the "
			 "mount keeps retrying", "peer=%s why=\"%s\" down_s=%.0f attempts=%llu",
			 s->peer, why, now - s->down_since, (unsigned long long)s->down_events);
	} else {
		log_info(was_up ? "replication peer disconnected" :
			 "replication peer not reachable; retrying",
			 "peer=%s why=\"%s\" retry_ms=%u", s->peer, why, s->backoff_ms);
		return;
	}
	s->warned_at = now;
	s->down_events = 0;
}

/* Drops the connection (if any), requeues, schedules a reconnect. */
void sender_disconnect(struct sender *s, const char *why)
{
	bool was_up = s->state == PEER_STREAMING && !s->split_stream;
	struct journal_stats js;

	s->split_stream = false;

	if (s->bev) {
		bufferevent_free(s->bev);
		s->bev = NULL;
	}
	sender_requeue_all(s);
	journal_get_stats(s->j, &js);
	if (js.head_seq > s->seen_until)
		s->seen_until = js.head_seq;
	/* a peer still full says so again on the next connection */
	s->stalled[0] = '\0';
	resolver_reset(&s->res);	/* versions half received: asked again */
	if (was_up)
		lineage_apart(&s->lin, js.head_seq);
	/* An unacked baseline starts again on the next HELLO (the peer's
	 * position is still below it). */
	s->resync = false;
	s->baseline_pending = false;
	if (was_up) {
		s->reconnects++;
		sender_warn_down(s, why, true);
	} else {
		sender_warn_down(s, why, false);
	}
	sender_set_state(s, PEER_BACKOFF, why);
	sender_schedule_retry(s);
}

static void sender_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	sender_connect(arg);
}

static void sender_cont_cb(evutil_socket_t fd, short what, void *arg)
{
	sender_pump(arg);
}

static void sender_take_cb(evutil_socket_t fd, short what, void *arg)
{
	sender_pump(arg);
}

/* The socket's bufferevent: s->bev, or under TLS the one beneath the
 * OpenSSL filter. */
static struct bufferevent *sender_sock(struct sender *s)
{
	struct bufferevent *u = s->tls ? bufferevent_get_underlying(s->bev) : NULL;

	return u ? u : s->bev;
}

static void sender_connect(struct sender *s)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int gai = 0, rc;

	rc = addr_resolve(s->peer, AI_ADDRCONFIG, &ss, &sslen, &gai);
	if (rc == -EINVAL) {
		sender_set_error(s, "bad peer address '%s' (want HOST:PORT)", s->peer);
		log_error("bad peer address; fix --peer", "peer=%s", s->peer);
		sender_set_state(s, PEER_REFUSED, "bad address");
		return;
	}
	if (rc < 0) {
		sender_set_error(s, "cannot resolve peer %s: %s", s->peer, gai_strerror(gai));
		sender_disconnect(s, gai_strerror(gai));
		return;
	}
	/*
	 * Without TLS keys twinfs talks only on loopback addresses: a file
	 * store must not be readable by anyone who can reach the port. A
	 * non-loopback peer needs --insecure in so many words.
	 */
	if (!addr_is_loopback((struct sockaddr *)&ss) && !s->insecure && !s->tls) {
		sender_set_error(s, "peer %s is not a loopback address and the link has "
				 "no keys; secure it (--psk-file, or tls.peer_id) or pass "
				 "--insecure to replicate in the clear", s->peer);
		log_error("refusing to replicate to a non-loopback peer without TLS; "
			  "use --insecure on a trusted network", "peer=%s", s->peer);
		sender_set_state(s, PEER_REFUSED, "non-loopback without --insecure");
		return;
	}
	if (!addr_is_loopback((struct sockaddr *)&ss) && !s->tls)
		log_warn("replicating in the clear to a non-loopback peer (--insecure)",
			 "peer=%s", s->peer);
	s->peer_auth[0] = '\0';
	if (s->tls) {
		/* BEV_EVENT_CONNECTED comes once the handshake has authenticated
		 * the peer; until then nothing of ours is sent. An OpenSSL
		 * filter over a socket bufferevent, not a socket BIO: OpenSSL
		 * writes each 16 KiB record to its BIO on its own, one send()
		 * per record over a socket (64 per 1 MiB block); gathered in the
		 * socket bufferevent's output they go out in writes of up to
		 * SEND_MAX_WRITE, for one copy of the ciphertext (docs/
		 * benchmarks.md, "The link"). */
		SSL *ssl = tls_ssl_new(s->tls);
		struct bufferevent *sock = bufferevent_socket_new(s->base, -1,
								  BEV_OPT_CLOSE_ON_FREE);

		if (sock) {
			bufferevent_set_max_single_write(sock, SEND_MAX_WRITE);
			bufferevent_setwatermark(sock, EV_WRITE, 0, TLS_SEND_AHEAD);
		}
		s->bev = ssl && sock ? bufferevent_openssl_filter_new(s->base, sock, ssl,
								      BUFFEREVENT_SSL_CONNECTING,
								      BEV_OPT_CLOSE_ON_FREE) : NULL;
		if (s->bev) {
			bufferevent_openssl_set_allow_dirty_shutdown(s->bev, 1);
		} else {
			if (sock)
				bufferevent_free(sock);
			SSL_free(ssl);
		}
	} else {
		s->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
	}
	if (!s->bev) {
		sender_disconnect(s, "out of memory");
		return;
	}
	bufferevent_setcb(s->bev, sender_read_cb, sender_write_cb, sender_event_cb, s);
	bufferevent_setwatermark(s->bev, EV_WRITE, OUT_LOW_WM, 0);
	/*
	 * libevent writes at most 16 KiB per write event by default: one
	 * writev and one trip through the loop per 16 KiB, and as many small
	 * reads on the peer. Let one event write what the socket takes.
	 */
	if (bufferevent_set_max_single_write(s->bev, SEND_MAX_WRITE) < 0)
		log_warn("cannot raise the socket write size; sending in 16 KiB steps",
			 "peer=%s", s->peer);
	sender_set_state(s, PEER_CONNECTING, "connect");
	rc = bufferevent_socket_connect(sender_sock(s), (struct sockaddr *)&ss, (int)sslen);
	if (rc < 0) {
		sender_set_error(s, "cannot connect to %s: %s", s->peer, strerror(errno));
		sender_disconnect(s, "connect failed");
		return;
	}
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

static void sender_connected(struct sender *s)
{
	struct proto_hello h = { 0 };
	struct journal_stats js;
	int one = 1;
	evutil_socket_t fd = bufferevent_getfd(sender_sock(s));

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	journal_get_stats(s->j, &js);
	/* a generation begun while apart goes out in this HELLO */
	lineage_check(&s->lin, js.head_seq);
	h.version = PROTO_VERSION;
	memcpy(h.node_id, s->id.id, sizeof(h.node_id));
	h.generation = history_cur(&s->lin.hist)->num;
	h.head_seq = js.head_seq;
	lineage_hello(&s->lin, &h);
	s->hello_gen = history_cur(&s->lin.hist)->id;
	h.role = PROTO_ROLE_PRIMARY;
	h.applied_seq = js.acked_seq;
	h.name = s->name;
	if (proto_encode_hello(bufferevent_get_output(s->bev), &h) < 0) {
		sender_disconnect(s, "cannot encode HELLO");
		return;
	}
	s->last_tx = s->last_rx = clock_mono_s();
	sender_set_state(s, PEER_HELLO, "connected");
}

static void sender_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct sender *s = arg;
	unsigned long tls_err;
	char why[160];

	if (what & BEV_EVENT_CONNECTED) {
		if (s->state == PEER_CONNECTING && s->tls) {
			tls_peer_describe(bufferevent_openssl_get_ssl(bev), s->peer_auth,
					  sizeof(s->peer_auth));
			log_info("peer authenticated", "peer=%s auth=\"%s\"", s->peer,
				 s->peer_auth);
		}
		if (s->state == PEER_CONNECTING)
			sender_connected(s);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		snprintf(why, sizeof(why), "peer closed the connection");
	} else if (s->tls && (tls_err = bufferevent_get_openssl_error(bev)) != 0) {
		char err[128];

		while (bufferevent_get_openssl_error(bev) != 0)
			;	/* the first names the cause */
		ERR_error_string_n(tls_err, err, sizeof(err));
		snprintf(why, sizeof(why), "TLS: %s", err);
		if (s->state == PEER_CONNECTING)
			sender_set_error(s, "TLS handshake with %s failed: %s (the same key "
					 "or pinned id on both nodes? a peer without keys "
					 "speaks plaintext)", s->peer, err);
	} else {
		int e = EVUTIL_SOCKET_ERROR();

		snprintf(why, sizeof(why), "%s", evutil_socket_error_to_string(e));
		if (s->state == PEER_CONNECTING)
			sender_set_error(s, "cannot connect to %s: %s", s->peer, why);
	}
	sender_disconnect(s, why);
}

/* ---- incoming frames ---- */

static int sender_on_hello(struct sender *s, const struct proto_hello *h)
{
	struct journal_stats hs;
	const char *why;
	uint64_t resume = 0;
	bool baseline;
	int rc;

	if (s->state != PEER_HELLO)
		return -EPROTO;
	if (h->version != PROTO_VERSION) {
		sender_set_error(s, "peer %s speaks protocol version %u, this node speaks %u: "
				 "run the same twinfs release on both nodes", s->peer,
				 (unsigned)h->version, (unsigned)PROTO_VERSION);
		log_error("the peer speaks another protocol version", "peer=%s peer_version=%u "
			  "version=%u", s->peer, (unsigned)h->version, (unsigned)PROTO_VERSION);
		return -EPROTO;
	}
	if (h->role != PROTO_ROLE_SECONDARY) {
		sender_set_error(s, "peer %s is not a secondary (twinfs serve)", s->peer);
		return -EPROTO;
	}
	s->peer_generation = h->generation;
	snprintf(s->peer_name, sizeof(s->peer_name), "%s", h->name ? h->name : "");
	/*
	 * A generation begun after our HELLO went out (we wrote while the
	 * peer had not answered it: a stopped or slow peer counts as apart)
	 * is one the peer does not know: it would bind to our older history
	 * and record the new generation's changes under the old one, which
	 * the next meeting reads as a split brain. Reconnect: the next HELLO
	 * carries it.
	 */
	if (history_cur(&s->lin.hist)->id != s->hello_gen) {
		log_info("a generation began since the HELLO was sent; reconnecting to "
			 "send it", "peer=%s", s->peer);
		return -EAGAIN;
	}
	/* Whose data the peer holds decides, not seqs alone (lineage.c); a
	 * lagged old primary resumes where this node's generation began. */
	journal_get_stats(s->j, &hs);
	if (lineage_on_hello(&s->lin, h, hs.head_seq, &resume) < 0) {
		sender_set_error(s, "peer %s: %s", s->peer, s->lin.why);
		return s->lin.verdict == HISTORY_SPLIT ? sender_split(s) : -EPROTO;
	}
	/* Batches go out again from the peer's durable point: of what it was
	 * sent, it holds what came in batches up to there, if it is the same
	 * peer (sentmap.c). */
	if (memcmp(s->held_node, h->node_id, sizeof(s->held_node)) != 0 ||
	    s->held_generation != h->generation) {
		sentmap_clear(s->held);
		memcpy(s->held_node, h->node_id, sizeof(s->held_node));
		s->held_generation = h->generation;
	}
	sentmap_keep(s->held, h->applied_seq);
	journal_get_stats(s->j, &hs);	/* the range this connection replays */
	s->resume_until = hs.head_seq;
	if (h->flags & PROTO_HELLO_F_DIRTY) {
		s->repair_until = hs.head_seq;
		log_notice("the peer was interrupted while applying; re-sending the "
			   "whole state of every path changed since its last durable "
			   "point", "peer=%s peer_seq=%llu", s->peer,
			   (unsigned long long)h->applied_seq);
	}
	baseline = resume == 0 || s->rebaseline;
	why = resume == 0 ? "the peer has never applied anything" :
	      s->rebaseline_why ? s->rebaseline_why : "a baseline was asked for";
	s->rebaseline = false;
	s->dirty_replay = (h->flags & PROTO_HELLO_F_DIRTY) && !baseline;
	sender_scan_forget(s);	/* the replay answers its NEEDS_SCAN records again */
	if (baseline && s->rebaseline_head)
		resume = hs.head_seq;	/* the walk sends what the journal cannot read */
	s->rebaseline_head = false;
	rc = journal_rewind(s->j, resume);
	if (rc == -ERANGE) {
		struct journal_stats js;

		journal_get_stats(s->j, &js);
		if (resume < js.acked_seq) {
			log_notice("the peer is behind what it acknowledged (a new or "
				   "restored peer?); the journal cannot cover the gap",
				   "peer=%s peer_seq=%llu acked=%llu", s->peer,
				   (unsigned long long)resume,
				   (unsigned long long)js.acked_seq);
			baseline = true;
			why = "the peer is behind the journal";
			rc = 0;
		}
	}
	if (rc < 0) {
		log_error("cannot resume replication from the peer's position",
			  "peer=%s peer_seq=%llu err=%s", s->peer,
			  (unsigned long long)h->applied_seq, strerror(-rc));
		if (rc == -ERANGE)
			sender_set_error(s, "the peer has applied seq %llu, beyond this "
					 "primary's journal: it has changes this node does not "
					 "have (split brain?); refusing to overwrite it",
					 (unsigned long long)h->applied_seq);
		else
			sender_set_error(s, "cannot resume from peer seq %llu: %s",
					 (unsigned long long)h->applied_seq, strerror(-rc));
		return rc;
	}
	log_notice("replication peer connected", "peer=%s peer_seq=%llu "
		   "peer_generation=%llu verdict=%s resume=%llu down_s=%.0f", s->peer,
		   (unsigned long long)h->applied_seq,
		   (unsigned long long)h->generation,
		   history_verdict_name(s->lin.verdict), (unsigned long long)resume,
		   s->down_since ? clock_mono_s() - s->down_since : 0.0);
	s->down_since = 0;
	/* a stuck path keeps the backoff it earned (sender_on_apply_error),
	 * and so does a series of failures of one kind (sender_note_failure) */
	if (!repairs_stuck(&s->repairs, NULL) && !s->fail_count)
		s->backoff_ms = BACKOFF_MIN_MS;
	for (size_t i = 0; i < s->repairs.n; i++)
		s->repairs.r[i].sent_end = 0;	/* not carried on this connection yet */
	if (baseline)
		sender_baseline_start(s, why);
	sender_set_state(s, PEER_STREAMING, "hello exchanged");
	return 0;
}

/* A path the peer failed on is repaired (repairs_acked). */
static void sender_repaired(const struct repair *r, void *arg)
{
	struct sender *s = arg;

	if (r->failures)
		log_notice("the peer applied the repair of a path it had failed on",
			   "peer=%s path=/%s failures=%u", s->peer, r->path, r->failures);
}

/*
 * ACKs are cumulative and journal_ack() writes the ack file durably, so
 * the read callback records only the highest seq of all the frames it
 * has in hand and acks once (sender_flush_ack): a burst of ACKs costs one
 * fsync on the loop thread, not one each.
 */
static void sender_flush_ack(struct sender *s)
{
	struct inflight *f;
	uint64_t seq = s->ack_pending;
	int rc;

	if (!seq)
		return;
	s->ack_pending = 0;
	if (s->fail_count && seq > s->fail_acked)
		s->fail_count = 0;	/* progress: a series of failures ends */
	log_debug("ack from peer", "seq=%llu", (unsigned long long)seq);
	/* in a split brain the peer holds another node's changes: nothing it
	 * applies is acked in the journal (sender_split.c) */
	rc = s->split_stream ? 0 : journal_ack(s->j, seq);
	if (rc < 0)
		log_warn("cannot record the peer's ack", "seq=%llu err=%s",
			 (unsigned long long)seq, strerror(-rc));
	if (s->resync && s->baseline_end && seq >= s->baseline_end) {
		s->resync = false;
		if (s->hcache)
			(void)hashcache_save(s->hcache);	/* also at the end */
		log_notice("baseline complete: the peer has this store's state", "peer=%s "
			   "seq=%llu files=%llu bytes=%llu seconds=%.1f", s->peer,
			   (unsigned long long)seq, (unsigned long long)s->resync_files,
			   (unsigned long long)s->resync_bytes,
			   clock_mono_s() - s->baseline_t0);
	}
	if (s->walk_window_end && seq >= s->walk_window_end)
		s->walk_window_end = 0;	/* the peer applied everything it overlapped */
	if (seq >= s->repair_until) {
		s->dirty_replay = false;	/* the replayed window is applied */
		s->dirty_rebaselined = false;
	}
	repairs_acked(&s->repairs, seq, sender_repaired, s);
	while ((f = s->head) && f->b->end_seq <= seq && f != s->c.cur) {
		s->head = f->next;
		if (!s->head)
			s->tail = NULL;
		s->inflight_bytes -= f->data_bytes;
		s->inflight_batches--;
		s->inflight_files -= f->b->n_files;
		inflight_free(f);
	}
	s->last_error[0] = '\0';
}

/* Returns 0, or -errno to drop the connection. */
static int sender_on_frame(struct sender *s, const struct proto_frame *fr)
{
	struct proto_hello h;
	struct proto_error e;
	uint64_t seq;
	bool loud;
	int rc;

	if (s->state == PEER_HELLO && fr->h.type != PROTO_HELLO &&
	    fr->h.type != PROTO_ERROR)
		return -EPROTO;
	if (s->state == PEER_SPLIT && fr->h.type != PROTO_DIVERGED &&
	    fr->h.type != PROTO_HEARTBEAT && fr->h.type != PROTO_ERROR &&
	    fr->h.type != PROTO_GOODBYE && fr->h.type != PROTO_RESOLVE &&
	    fr->h.type != PROTO_ENTRY && fr->h.type != PROTO_DATA && fr->h.type != PROTO_OP)
		return -EPROTO;
	switch (fr->h.type) {
	case PROTO_HELLO:
		rc = proto_decode_hello(fr, &h);
		return rc < 0 ? rc : sender_on_hello(s, &h);
	case PROTO_ACK:
		if (s->state != PEER_STREAMING)
			return -EPROTO;
		rc = proto_decode_seq(fr, &seq);
		if (rc < 0)
			return rc;
		if (seq > s->ack_pending)
			s->ack_pending = seq;
		return 0;
	case PROTO_HEARTBEAT:
		return 0;
	case PROTO_DIVERGED:
	case PROTO_RESOLVE:
		return sender_split_frame(s, fr);
	case PROTO_ENTRY: {
		struct proto_entry te;

		rc = proto_decode_entry(fr, &te);
		if (rc < 0)
			return rc;
		/* a version for `resolve` or `--restore`, else a tail entry */
		if (s->res.receiving)
			return resolver_on_entry(&s->res, &te);
		if (s->state != PEER_STREAMING || s->split_stream)
			return -EPROTO;
		return lineage_on_tail_entry(&s->lin, s->j, s->store_fd, &te);
	}
	case PROTO_DATA: {
		struct proto_data d;

		rc = proto_decode_data(fr, &d);
		return rc < 0 ? rc : resolver_on_data(&s->res, &d);
	}
	case PROTO_OP: {
		struct proto_op o;	/* a version's xattr (versions.c) */

		rc = proto_decode_op(fr, &o);
		return rc < 0 ? rc : resolver_on_xattr(&s->res, &o.op);
	}
	case PROTO_TAIL:
		if (s->state != PEER_STREAMING || s->split_stream)
			return -EPROTO;
		return lineage_on_tail(&s->lin, s->j, fr, bufferevent_get_output(s->bev));
	case PROTO_HASHES:
		if (s->state != PEER_STREAMING)
			return -EPROTO;
		return sender_delta_on_hashes(s, fr);
	case PROTO_ERROR:
		rc = proto_decode_error(fr, &e);
		if (rc < 0)
			return rc;
		if (fr->h.flags & PROTO_F_RETRY) {
			sender_on_peer_stalled(s, e.text);
			return 0;
		}
		sender_set_error(s, "peer %s: %s", s->peer, e.text);
		if (e.code == PROTO_E_APPLY && sender_rebaseline_dirty(s, e.text))
			return -ECONNABORTED;
		/* a path the peer failed on is repaired, with a backoff of its
		 * own once it is stuck (a baseline under load fails on one path
		 * after another, each a step further); anything else counts
		 * towards a series of failures of one kind */
		if (e.code == PROTO_E_APPLY && sender_on_apply_error(s, e.text) == 0)
			return -ECONNABORTED;
		/* a refusal this side decided too was logged once (lineage.c) */
		if ((e.code == PROTO_E_SPLITBRAIN || e.code == PROTO_E_AHEAD ||
		     e.code == PROTO_E_FOREIGN || e.code == PROTO_E_ROLE) && s->lin.logged)
			return -ECONNABORTED;
		loud = sender_note_failure(s, e.code, e.text);
		if (loud)
			log_error("the replication peer reported an error", "peer=%s code=%s "
				  "text=\"%s\" in_a_row=%u retry_ms=%u", s->peer,
				  proto_err_name(e.code), e.text, s->fail_count, s->backoff_ms);
		else
			log_info("the replication peer reported the same error again",
				 "peer=%s code=%s in_a_row=%u retry_ms=%u", s->peer,
				 proto_err_name(e.code), s->fail_count, s->backoff_ms);
		if (e.code == PROTO_E_APPLY)
			sender_rebaseline_walk(s);
		return -ECONNABORTED;
	case PROTO_GOODBYE:
		return -ECONNRESET;
	default:
		log_warn("unexpected frame from peer", "peer=%s type=%u", s->peer,
			 (unsigned)fr->h.type);
		return -EPROTO;
	}
}

static void sender_read_cb(struct bufferevent *bev, void *arg)
{
	struct sender *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct proto_frame fr;
	int rc;

	/* The peer sends its HELLO on accept; on loopback it can be read
	 * before libevent reports the connect as done. */
	if (s->state == PEER_CONNECTING) {
		sender_connected(s);
		if (s->state != PEER_HELLO)
			return;
	}
	for (;;) {
		/* a secondary's frames are small: a larger header (or a type it
		 * never sends) is refused before its payload is waited for */
		rc = limits_frame_next(in, PROTO_ROLE_SECONDARY, &fr);
		if (rc == 0)
			break;
		if (rc < 0) {
			log_error("bad frame from the peer; dropping the connection",
				  "peer=%s err=\"%s\"", s->peer, limits_frame_error(rc));
			sender_set_error(s, "peer %s sent %s", s->peer, limits_frame_error(rc));
			sender_disconnect(s, "bad frame");
			return;
		}
		s->last_rx = clock_mono_s();
		rc = sender_on_frame(s, &fr);
		if (rc == 0)
			proto_frame_consume(in, &fr);
		if (rc < 0) {
			sender_flush_ack(s);
			sender_disconnect(s, strerror(-rc));
			return;
		}
	}
	sender_flush_ack(s);
	sender_pump(s);
}

static void sender_write_cb(struct bufferevent *bev, void *arg)
{
	sender_pump(arg);
}

/* ---- streaming ---- */

static int sender_put_rec(struct sender *s, struct evbuffer *out,
			  const struct journal_rec *r)
{
	struct repair *rep;
	int rc;

	switch (r->op.type) {
	case JOP_BATCH:
		/* the batch's last record: what goes after all the others */
		rc = s->repairs.n ? sender_put_open_repairs(s, out, r->seq) : 0;
		/* Store state goes at the BATCH record ending this batch only:
		 * a replay's range holds older, unacked BATCH records, and the
		 * records after one still use names the store has lost. */
		if (rc == 0 && r->seq == s->c.cur->b->end_seq &&
		    (s->c.names_after.n || s->c.paths_after.n || s->c.inodes_after.n))
			rc = sender_put_names_after(s, out, r->seq);
		return rc;
	case JOP_MARK_DIR:
	case JOP_MARK_FILE:
	case JOP_EPOCH:
		return 0;
	default:
		break;
	}
	/* Whatever it does to these paths on the peer, the blocks we sent
	 * of them (or of files below them) may no longer be there. */
	sentmap_forget(s->held, r->op.path);
	if (r->op.type != JOP_SYMLINK)
		sentmap_forget(s->held, r->op.path2);
	/* A repair comes first, NEEDS_SCAN records included: a scan's own
	 * frames may be what the peer fails on, and sent again unchanged they
	 * would fail for ever. */
	if (s->repairs.n) {
		rep = repairs_covering(&s->repairs, r->op.path, r->seq);
		if (!rep && (r->op.type == JOP_RENAME || r->op.type == JOP_LINK))
			rep = repairs_covering(&s->repairs, r->op.path2, r->seq);
		/* A rename of a folder above a repaired path moves it: the
		 * records naming the path were replaced by its state under its
		 * old name (gone by now), so the folder is sent as it is now,
		 * under its new name, and pruned under the old. */
		if (!rep && r->op.type == JOP_RENAME) {
			rep = repairs_inside(&s->repairs, r->op.path, r->seq);
			if (!rep)
				rep = repairs_inside(&s->repairs, r->op.path2, r->seq);
		}
		if (rep)
			return sender_put_repair_rec(s, out, r, rep->until);
	}
	if (r->op.type == JOP_NEEDS_SCAN)
		return sender_put_scan(s, out, r);
	/* A rename moves the paths noted for the BATCH record (gone from
	 * their old names by then) even once every answered path expired. */
	if (s->n_moves || (r->op.type == JOP_RENAME && s->c.paths_after.n)) {
		rc = sender_scan_cover(s, r);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	if (sender_scan_replayed(s, r) < 0)	/* renames from the peer's past */
		return -ENOMEM;
	if (r->seq <= s->repair_until) {	/* contents too (cursor repairs) */
		rc = cursor_add_repair(&s->c, r->op.path);
		if (rc == 0 && r->op.type != JOP_SYMLINK)
			rc = cursor_add_repair(&s->c, r->op.path2);
		if (rc < 0)
			return rc;
	}
	return proto_encode_op(out, r->seq, &r->op);
}

/* Files that unacked batches may hold open at once: a quarter of the
 * open-file limit (the journal caps one batch at a sixteenth). */
static uint64_t sender_file_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1u << 16;
	return rl.rlim_cur / 4 ? rl.rlim_cur / 4 : 1;
}

/* Takes the next batch from the journal into the cursor. 1, 0 (nothing
 * to take or window full) or -errno. */
static int sender_take(struct sender *s)
{
	struct journal_batch *b;
	struct inflight *f;
	uint64_t room;
	double now, interval;
	int rc;
	bool urgent = s->baseline_pending || (s->waiters && atomic_load(s->waiters) > 0);

	if (s->inflight_bytes >= WINDOW_BYTES && !s->baseline_pending)
		return 0;
	/* an ack pumps again (sender_read_cb): nothing to arm */
	if (s->inflight_batches >= TAKE_AHEAD && !urgent)
		return 0;
	/* Every file of a batch holds an fd until the peer acks the batch:
	 * even a sync must not take batches past its share of the open-file
	 * limit, or syncing many small files, every batch of them in flight,
	 * runs the mount out of fds. */
	if (s->inflight_batches > 0 && s->inflight_files >= sender_file_budget())
		return 0;
	now = clock_mono_s();
	interval = now - s->last_take < TAKE_BUSY_AFTER_S ? TAKE_BUSY_INTERVAL_S :
		   TAKE_INTERVAL_S;
	if (now - s->last_take < interval && !urgent) {
		if (!evtimer_pending(s->take_ev, NULL)) {
			struct timeval tv = { 0, (long)((interval - (now - s->last_take)) * 1e6) + 1 };

			evtimer_add(s->take_ev, &tv);
		}
		return 0;
	}
	s->last_take = now;
	room = s->inflight_bytes < WINDOW_BYTES ? WINDOW_BYTES - s->inflight_bytes : 0;
	rc = journal_take_batch(s->j, room, &b);
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0) {
		log_error("cannot take changes from the journal", "err=%s", strerror(-rc));
		return rc;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		journal_requeue(s->j, b);
		return -ENOMEM;
	}
	f->b = b;
	if (s->tail)
		s->tail->next = f;
	else
		s->head = f;
	s->tail = f;
	s->inflight_batches++;
	s->inflight_files += b->n_files;
	cursor_reset(&s->c);
	s->c.cur = f;
	if (s->baseline_pending) {
		s->baseline_pending = false;
		rc = cursor_add_walk(&s->c, "");
		if (rc < 0)
			return rc;	/* the batch is in flight: requeued on drop */
		s->c.baseline = true;
		/* the walk of the whole store carries every repair */
		for (size_t i = 0; i < s->repairs.n; i++)
			s->repairs.r[i].sent_end = b->end_seq;
		s->c.rec = b->n_recs;
		s->resync = true;
		s->baseline_end = b->end_seq;
		s->baseline_t0 = now;
		s->resync_files = 0;
		s->resync_bytes = 0;
	}
	return 1;
}

/*
 * Puts frames on the wire until the output buffer is full, the window is
 * full or the journal has nothing more. Order within a batch: every record
 * (namespace ops, in journal order), then each dirty file's data blocks
 * followed by its ATTR, then BATCH_END. The peer acks BATCH_END's seq once
 * all of it is applied and durable.
 */
void sender_pump(struct sender *s)
{
	struct evbuffer *out;
	struct cursor *c = &s->c;
	struct journal_batch *b;
	int rc;

	if (s->state != PEER_STREAMING) {
		/* a change while apart begins a generation at once (lineage.c):
		 * an unmount or a crash right after must not lose that fact */
		struct journal_stats js;

		if (lineage_may_begin(&s->lin)) {
			journal_get_stats(s->j, &js);
			lineage_check(&s->lin, js.head_seq);
		}
		return;
	}
	if (!s->bev || s->pumping)
		return;
	s->pumping = true;
	out = bufferevent_get_output(s->bev);
	s->walk_budget = WALK_STEPS_PER_PUMP;
	s->held_budget = HELD_PER_PUMP;
	while (evbuffer_get_length(out) < OUT_HIGH_WM &&
	       s->pool->outstanding < POOL_MAX) {
		if (!c->cur) {
			rc = sender_take(s);
			/* records the journal cannot read back (a damaged or
			 * missing segment): only a baseline can still bring the
			 * peer to this store, not a retry of the same read */
			if (rc == -EIO || rc == -EBADMSG) {
				s->rebaseline = s->rebaseline_head = true;
				s->rebaseline_why = "the journal cannot read back the records the "
						    "peer lacks";
				goto out_drop;
			}
			if (rc <= 0)
				break;
		}
		b = c->cur->b;
		if (c->rec < b->n_recs) {
			rc = sender_put_rec(s, out, &b->recs[c->rec]);
			if (rc < 0)
				goto out_drop;
			if (rc == 3)
				break;	/* a repair's answers to wait for: the read callback pumps */
			c->rec++;
			continue;
		}
		rc = sender_put_data(s, out);
		if (rc < 0)
			goto out_drop;
		if (rc == 2) {
			event_active(s->cont_ev, EV_TIMEOUT, 1);
			break;
		}
		if (rc == 3)
			break;	/* block hashes to wait for: the read callback pumps */
		if (rc > 0)
			continue;
		rc = sender_put_walk(s, out);
		if (rc == -EAGAIN)
			break;
		if (rc < 0)
			goto out_drop;
		if (rc > 0)
			continue;
		if (c->baseline)
			log_notice("baseline sent; waiting for the peer's ack", "peer=%s "
				   "seq=%llu files=%llu bytes=%llu seconds=%.1f", s->peer,
				   (unsigned long long)b->end_seq,
				   (unsigned long long)s->resync_files,
				   (unsigned long long)s->resync_bytes,
				   clock_mono_s() - s->baseline_t0);
		sender_scan_batch_end(s);
		rc = proto_encode_batch_end(out, b->end_seq);
		if (rc < 0)
			goto out_drop;
		log_debug("batch sent", "first=%llu end=%llu recs=%zu files=%zu bytes=%llu",
			  (unsigned long long)b->first_seq, (unsigned long long)b->end_seq,
			  b->n_recs, b->n_files, (unsigned long long)c->cur->data_bytes);
		cursor_reset(c);
	}
	if (evbuffer_get_length(out) > 0)
		s->last_tx = clock_mono_s();
	s->pumping = false;
	return;
out_drop:
	s->pumping = false;
	sender_disconnect(s, strerror(-rc));
}

/*
 * Someone waits for the peer (`twinfs sync`): a connection waiting out its
 * backoff is tried at once. The backoff spares a peer that is down; a
 * waiter is the moment a peer that just came back (a demoted node whose
 * serve started) should be found, not up to BACKOFF_MAX_MS later. A path
 * the peer keeps failing on keeps the backoff it earned, and so does a
 * series of failures of one kind (sender_note_failure).
 */
void sender_kick(struct sender *s)
{
	if (s->state != PEER_BACKOFF || !s->peer || repairs_stuck(&s->repairs, NULL) ||
	    s->fail_count > 1)
		return;
	evtimer_del(s->retry_ev);
	sender_connect(s);
}

/* ---- periodic work ---- */

/* The PSK file changed (tls_ctx_reload): the next connection offers its
 * first key; a live link made with another key is made again, once. */
static void sender_tls_reload(struct sender *s)
{
	char why[600];
	int rc = tls_ctx_reload(s->tls, why, sizeof(why));

	if (rc < 0)
		log_warn("cannot read the key file again", "why=\"%s\"", why);
	if (rc <= 0)
		return;
	log_notice("key file changed: the next connection offers its first key",
		   "read=\"%s\"", why);
	if (s->bev && (s->state == PEER_HELLO || s->state == PEER_STREAMING) &&
	    !tls_auth_current(s->tls, s->peer_auth))
		sender_disconnect(s, "this node's key changed; reconnecting with the new one");
}

void sender_tick(struct sender *s)
{
	double now = clock_mono_s();
	double hb = s->heartbeat_s ? s->heartbeat_s : 1;
	double dead = hb * PROTO_DEAD_BEATS;

	sender_tls_reload(s);
	s->rate_slot[s->rate_i] = s->bytes_sent - s->rate_mark;
	s->rate_mark = s->bytes_sent;
	s->rate_i = (s->rate_i + 1) % RATE_SLOTS;

	if (s->state != PEER_STREAMING && lineage_may_begin(&s->lin)) {
		struct journal_stats js;

		journal_get_stats(s->j, &js);
		lineage_check(&s->lin, js.head_seq);
	}
	switch (s->state) {
	case PEER_CONNECTING:
		if (now - s->state_since > CONNECT_TIMEOUT_S) {
			sender_set_error(s, "cannot connect to %s: timed out", s->peer);
			sender_disconnect(s, "connect timed out");
		}
		break;
	case PEER_HELLO:
	case PEER_STREAMING:
	case PEER_SPLIT:
		if (now - s->last_rx > dead) {
			sender_set_error(s, "peer %s silent for %.0f s", s->peer, now - s->last_rx);
			sender_disconnect(s, "peer timed out");
			break;
		}
		if (now - s->last_tx >= hb) {
			proto_encode_heartbeat(bufferevent_get_output(s->bev),
					       clock_mono_ns() / 1000000);
			s->last_tx = now;
		}
		sender_pump(s);
		break;
	default:
		break;
	}
}

/* ---- lifecycle ---- */

int sender_new(struct event_base *base, struct journal *j,
	       const struct sender_opts *o, struct sender **out)
{
	struct journal_stats js;
	struct sender *s;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base = base;
	s->j = j;
	journal_get_stats(j, &js);
	s->seen_until = js.head_seq;	/* a former process's peer: unknown */
	s->insecure = o->insecure;
	s->tls = o->tls;
	s->heartbeat_s = o->heartbeat_s;
	s->delta_bs = proto_block_size_ok(o->delta_block_size) ? o->delta_block_size :
		      128u << 10;
	s->waiters = o->waiters;
	s->backoff_ms = BACKOFF_MIN_MS;
	s->store_fd = -1;
	s->c.fd = -1;
	s->state = PEER_IDLE;
	s->state_since = clock_mono_s();
	s->peer = o->peer ? strdup(o->peer) : NULL;
	s->state_dir = strdup(o->state_dir);
	s->store_dir = strdup(o->store_dir);
	if ((o->peer && !s->peer) || !s->state_dir || !s->store_dir) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = state_node_load(o->state_dir, &s->id);
	if (rc < 0) {
		log_error("cannot read or create this node's identity", "state=%s err=%s",
			  o->state_dir, strerror(-rc));
		goto out_free;
	}
	rc = resolver_init(&s->res, base, o->state_dir, o->store_dir, o->mountpoint,
			   sender_resolved, s);
	if (rc < 0)
		goto out_free;
	rc = lineage_open(&s->lin, o->state_dir, s->id.id, js.head_seq, js.acked_seq);
	if (rc < 0) {
		log_error("cannot read this node's generation history", "state=%s err=%s",
			  o->state_dir, strerror(-rc));
		goto out_free;
	}
	if (gethostname(s->name, sizeof(s->name)) < 0)
		s->name[0] = '\0';
	s->name[sizeof(s->name) - 1] = '\0';
	s->store_fd = open(o->store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->store_fd < 0) {
		rc = -errno;
		log_error("cannot open the store", "store=%s err=%s", o->store_dir,
			  strerror(-rc));
		goto out_free;
	}
	s->pool = calloc(1, sizeof(*s->pool));
	if (!s->pool) {
		rc = -ENOMEM;
		goto out_close;
	}
	s->retry_ev = evtimer_new(base, sender_retry_cb, s);
	s->take_ev = evtimer_new(base, sender_take_cb, s);
	s->cont_ev = evtimer_new(base, sender_cont_cb, s);
	s->held = sentmap_new(BLOCK_SIZE);
	if (hashcache_open(o->state_dir, s->store_fd, &s->hcache) < 0)
		s->hcache = NULL;	/* out of memory: resyncs read everything */
	if (!s->retry_ev || !s->take_ev || !s->cont_ev || !s->held) {
		rc = -ENOMEM;
		goto out_pool;
	}
	*out = s;
	if (s->peer)
		sender_connect(s);
	return 0;
out_pool:
	if (s->retry_ev)
		event_free(s->retry_ev);
	if (s->take_ev)
		event_free(s->take_ev);
	if (s->cont_ev)
		event_free(s->cont_ev);
	sentmap_free(s->held);
	hashcache_close(s->hcache);
	free(s->pool);
out_close:
	close(s->store_fd);
out_free:
	resolver_fini(&s->res);
	lineage_close(&s->lin);
	divergence_free(&s->div);
	free(s->peer);
	free(s->state_dir);
	free(s->store_dir);
	free(s);
	return rc;
}

void sender_free(struct sender *s)
{
	if (!s)
		return;
	if (s->bev) {
		if (s->state == PEER_STREAMING || s->state == PEER_HELLO) {
			struct evbuffer *out = bufferevent_get_output(s->bev);
			SSL *ssl = s->tls ? bufferevent_openssl_get_ssl(s->bev) : NULL;

			proto_encode_goodbye(out, "unmount");
			/* Best effort: the fd is non-blocking, so write what fits. */
			if (ssl) {
				size_t n = evbuffer_get_length(out);

				if (n <= INT_MAX)
					SSL_write(ssl, evbuffer_pullup(out, (ssize_t)n), (int)n);
				/* the records are in the socket bufferevent's output */
				evbuffer_write(bufferevent_get_output(sender_sock(s)),
					       bufferevent_getfd(sender_sock(s)));
			} else {
				evbuffer_write(out, bufferevent_getfd(s->bev));
			}
		}
		bufferevent_free(s->bev);
		s->bev = NULL;
	}
	sender_requeue_all(s);
	if (s->retry_ev)
		event_free(s->retry_ev);
	if (s->take_ev)
		event_free(s->take_ev);
	if (s->cont_ev)
		event_free(s->cont_ev);
	sentmap_free(s->held);
	repairs_free(&s->repairs);
	sender_scan_forget(s);
	pool_close(s->pool);
	if (s->hcache && hashcache_save_synced(s->hcache) < 0)
		log_warn("cannot write the hash cache; the next resync reads more",
			 "state=%s", s->state_dir);
	hashcache_close(s->hcache);
	if (s->store_fd >= 0)
		close(s->store_fd);
	resolver_fini(&s->res);
	lineage_close(&s->lin);
	divergence_free(&s->div);
	pathset_clear(&s->split_aliased);
	free(s->peer);
	free(s->state_dir);
	free(s->store_dir);
	free(s);
}

void sender_get_stats(struct sender *s, struct sender_stats *st)
{
	uint64_t sum = 0;

	memset(st, 0, sizeof(*st));
	st->state = s->state;
	st->connected = s->state == PEER_STREAMING;
	st->bytes_sent = s->bytes_sent;
	st->bytes_held = s->bytes_held;
	for (int i = 0; i < RATE_SLOTS; i++)
		sum += s->rate_slot[i];
	st->send_rate = sum / RATE_SLOTS;
	st->inflight_bytes = s->inflight_bytes;
	st->inflight_batches = s->inflight_batches;
	st->generation = history_cur(&s->lin.hist)->num;
	st->decided = s->lin.decided;
	st->refused = lineage_refused(&s->lin);
	st->peer_generation = s->peer_generation;
	st->reconnects = s->reconnects;
	st->apply_errors = s->apply_errors;
	st->resync = s->resync || s->baseline_pending;
	st->resync_files = s->resync_files;
	st->resync_bytes = s->resync_bytes;
	st->resync_files_read = s->resync_files_read;
	st->resync_bytes_read = s->resync_bytes_read;
	st->resync_bytes_matched = s->resync_bytes_matched;
	st->resync_files_left = s->resync_left_files + sender_delta_pending(&s->c);
	st->resync_bytes_left = s->resync_left_bytes;
	st->repairs_pending = s->repairs.n;
	{
		const struct repair *r;

		st->stuck_paths = repairs_stuck(&s->repairs, &r);
		if (r) {
			snprintf(st->stuck_path, sizeof(st->stuck_path), "%s", r->path);
			snprintf(st->stuck_reason, sizeof(st->stuck_reason), "%s", r->reason);
		}
	}
	snprintf(st->last_error, sizeof(st->last_error), "%s", s->last_error);
	snprintf(st->peer_stalled, sizeof(st->peer_stalled), "%s", s->stalled);
}

void sender_status_lineage(struct sender *s, struct ctljson *j)
{
	lineage_status(&s->lin, j);
	divergence_json(&s->div, ctljson_json(j));
	ctljson_str(j, "resolve_error", s->res_error);
}
