/*
 * serve — the secondary's event loop: the TCP listener, the one primary
 * connection (an explicit state machine), the periodic heartbeat/timeout
 * tick, the control socket handlers and SIGTERM. Runs on one thread; the
 * receiver does the store work synchronously on this loop (a syncfs at a
 * batch end pauses the loop, which is fine with one peer). Must not touch
 * the store except through the receiver.
 */
#include "netsync/secondary/serve_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <openssl/err.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "conf/conf.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/limits.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/metrics.h"
#include "netsync/control/statusinfo.h"
#include "netsync/wire/proto.h"
#include "netsync/wire/tls.h"
#include "netsync/secondary/binding.h"
#include "netsync/secondary/gate.h"
#include "netsync/secondary/receiver.h"
#include "netsync/secondary/verifier.h"
#include "netsync/roles/conflicts.h"
#include "netsync/roles/divergence.h"
#include "netsync/secondary/splitres.h"
#include "netsync/roles/mountrec.h"
#include "netsync/secondary/hashjob.h"
#include "netsync/secondary/mirrorsess.h"
#include "netsync/secondary/peerhash.h"
#include "netsync/wire/path.h"
#include "netsync/delta/hashcache.h"
#include "netsync/roles/state.h"
#include "netsync/wire/proto_gen.h"
#include "netsync/secondary/syncer.h"

#define SERVE_CLOSE_GRACE_NS (2ull * 1000000000ull)
/* A connected primary silent for this many heartbeat intervals counts as
 * lost for `promote`: alive, it sends something every interval (a
 * HEARTBEAT when idle; the tick may stretch a gap to two). A node that
 * lost power or its network sends no FIN, and its connection would
 * otherwise hold promotion back until the dead-link rule drops it
 * (PROTO_DEAD_BEATS), after the HA manager has already chosen this node. */
#define SERVE_PROMOTE_SILENT_BEATS 3
/* ...or sooner, once its host stopped answering at the TCP level: what
 * this node sent it (a heartbeat every interval) is unacknowledged after
 * this many retransmission timeouts in a row (at least 0.2 + 0.4 s). A
 * live host's kernel acknowledges whatever its process is doing, so this
 * is a lost node or a cut link, the same thing the HA manager's missed
 * adverts say; a stopped or busy primary on a live host is left to the
 * silence rule. */
#define SERVE_PROMOTE_UNANSWERED_RTOS 2
/* A HASH_REQ's file bigger than this is hashed off the loop (hashjob.h):
 * ~10 ms of reading uncached. */
#define SERVE_HASH_INLINE (4u << 20)

static const char *const peer_state_names[] = {
	[PEER_NONE] = "none", [PEER_HELLO] = "hello",
	[PEER_STREAMING] = "streaming", [PEER_CLOSING] = "closing",
	[PEER_SPLIT] = "split",
};

static void serve_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, h, sizeof(h));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", h, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof(h));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", h, port);
	} else {
		snprintf(buf, len, "?");
	}
}

void serve_set_state(struct serve *s, enum peer_state st)
{
	if (s->state == st)
		return;
	log_info("peer state", "peer=%s from=%s to=%s", s->peer[0] ? s->peer : "-",
		 peer_state_names[s->state], peer_state_names[st]);
	s->state = st;
	s->state_since_ns = clock_mono_ns();
}

void serve_set_error(struct serve *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->last_error, sizeof(s->last_error), fmt, ap);
	va_end(ap);
}

/* Drops the connection now (whatever is unsent is lost). */
void serve_conn_free(struct serve *s)
{
	if (!s->bev)
		return;
	event_del(s->cont);
	s->reading = false;
	s->paused = LIMITS_OK;
	s->full_told = false;
	if (s->rev) {
		event_free(s->rev);
		s->rev = NULL;
	}
	if (s->in) {
		evbuffer_free(s->in);
		s->in = NULL;
	}
	bufferevent_free(s->bev);
	s->bev = NULL;
	s->hashing = false;	/* its answer, when it comes, is dropped */
	serve_split_reset(s);
	receiver_reset(s->recv);
	serve_set_state(s, PEER_NONE);
	log_notice("primary disconnected", "peer=%s", s->peer);
}

/* Queues ERROR{code,text} and closes once it is written (or after a
 * grace period, in the tick). The store is not touched again. */
void serve_conn_fail(struct serve *s, uint32_t code, const char *fmt, ...)
{
	char text[PROTO_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_error("dropping the primary's connection", "peer=%s code=%s err=\"%s\"",
		  s->peer, proto_err_name(code), text);
	serve_set_error(s, "%s", text);
	if (!s->bev)
		return;
	proto_encode_error(bufferevent_get_output(s->bev), code, text);
	s->last_tx_ns = clock_mono_ns();
	serve_set_state(s, PEER_CLOSING);
}

/* Refuses the primary after its HELLO (binding.c logged why, once):
 * ERROR{code,text}, then the lingering close of serve_conn_fail. */
static void serve_conn_refuse(struct serve *s, uint32_t code, const char *text)
{
	log_info("refusing the primary", "peer=%s code=%s err=\"%s\"", s->peer,
		 proto_err_name(code), text);
	serve_set_error(s, "%s", text);
	if (!s->bev)
		return;
	proto_encode_error(bufferevent_get_output(s->bev), code, text);
	s->last_tx_ns = clock_mono_ns();
	serve_set_state(s, PEER_CLOSING);
}

/* Our HELLO into OUT: the gate sends it as soon as a connection is up. */
static void serve_hello_cb(void *arg, struct evbuffer *out)
{
	struct serve *s = arg;
	struct receiver_stats st;
	struct proto_hello h = {
		.version = PROTO_VERSION, .role = PROTO_ROLE_SECONDARY,
		.generation = s->node.generation, .name = s->node_name,
	};

	receiver_get_stats(s->recv, &st);
	h.applied_seq = st.applied_seq;
	h.flags = receiver_beyond_applied(s->recv) ? PROTO_HELLO_F_DIRTY : 0;
	binding_hello(&s->bind, &h);
	memcpy(h.node_id, s->node.id, 16);
	proto_encode_hello(out, &h);
}

static void serve_on_hello(struct serve *s, const struct proto_frame *f)
{
	struct receiver_stats st;
	struct proto_hello h;
	uint64_t resume;
	int code, rc;

	if (proto_decode_hello(f, &h) < 0) {
		serve_conn_fail(s, PROTO_E_BADFRAME, "malformed HELLO");
		return;
	}
	if (h.version != PROTO_VERSION) {
		serve_conn_fail(s, PROTO_E_VERSION,
				"protocol version %u not supported (this node speaks %u)",
				h.version, PROTO_VERSION);
		return;
	}
	if (h.role != PROTO_ROLE_PRIMARY) {
		serve_conn_fail(s, PROTO_E_ROLE,
				"peer says it is not a primary (role %u); serve accepts only a primary",
				h.role);
		return;
	}
	snprintf(s->peer_name, sizeof(s->peer_name), "%s", h.name);
	s->peer_generation = h.generation;
	/* Whose data the store holds decides, not sequence numbers alone
	 * (docs/protocol.md, "Generations"): another node's primary, one
	 * behind this store, or one that diverged from it is refused. */
	receiver_get_stats(s->recv, &st);
	code = binding_on_hello(&s->bind, &h, st.applied_seq, &resume);
	if (code == PROTO_E_SPLITBRAIN) {
		serve_split_begin(s);
		return;
	}
	if (code) {
		serve_conn_refuse(s, (uint32_t)code, s->bind.why);
		return;
	}
	if (resume != st.applied_seq) {
		rc = receiver_set_position(s->recv, resume);
		if (rc < 0) {
			serve_conn_fail(s, PROTO_E_APPLY, "cannot record the resume point in "
					"STATE/applied on %s: %s", s->node_name, strerror(-rc));
			return;
		}
		s->commit_seq = resume;
	}
	if (binding_commit(&s->bind) < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "%s", s->bind.why);
		return;
	}
	if (binding_send_tail(&s->bind, bufferevent_get_output(s->bev)) < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot send the tail to the primary");
		return;
	}
	log_notice("primary connected", "peer=%s name=\"%s\" generation=%llu acked_seq=%llu",
		   s->peer, s->peer_name, (unsigned long long)h.generation,
		   (unsigned long long)h.applied_seq);
	serve_set_state(s, PEER_STREAMING);
}

/*
 * A path whose parent is missing on this node, or is a file or a symlink
 * here (ENOENT, ENOTDIR, ELOOP), fails again however often the primary
 * resends the path itself: the error names the highest folder in the way
 * (PROTO_NO_FOLDER), so that the primary's first repair sends that
 * folder's whole state instead of climbing one level per failure.
 */
static bool serve_blocked_at(struct serve *s, const char *path, int rc, char *at, size_t len)
{
	if (rc != -ENOENT && rc != -ENOTDIR && rc != -ELOOP)
		return false;
	return path_blocked_at(receiver_store_fd(s->recv), path, at, len) == 1;
}

/*
 * Maps a receiver error to an ERROR frame and drops the connection. A
 * path the primary may not send (malformed, escaping the store) is PATH.
 * A symlink on the way (ELOOP) is the store's state, not the path's
 * fault: nothing follows it (path_resolve), and the primary may have a
 * folder there that this store lost or never got. It is an APPLY error,
 * which the primary repairs by replacing what is there; as PATH it ended
 * the connection the same way on every reconnect, for ever. A full store
 * instead holds the stream (serve_store_full).
 */
void serve_apply_failed(struct serve *s, const char *what, int rc)
{
	const char *path = receiver_failed_path(s->recv);
	char at[PROTO_PATH_MAX + 1];

	if (serve_store_full(s, what, path, rc))
		return;
	if (rc == -EBADMSG)
		serve_conn_fail(s, PROTO_E_BADHASH, "%s '%s': block hash mismatch; nothing written",
				what, path);
	else if (rc == -EINVAL || rc == -EXDEV)
		serve_conn_fail(s, PROTO_E_PATH, "%s '%s': path not allowed (%s)", what, path,
				strerror(-rc));
	else if (serve_blocked_at(s, path, rc, at, sizeof(at)))
		serve_conn_fail(s, PROTO_E_APPLY, "%s '%s' on %s: %s " PROTO_NO_FOLDER "'%s']",
				what, path, s->node_name, strerror(-rc), at);
	else
		serve_conn_fail(s, PROTO_E_APPLY, "%s '%s' on %s: %s", what, path,
				s->node_name, strerror(-rc));
}

/* The primary's answers about generations in the ordinary stream: the
 * tail is queued (TAIL_ACK), a `--restore` is done (RESOLVE). 0 or
 * -EBADMSG (a malformed frame). */
static int serve_on_gen_frame(struct serve *s, const struct proto_frame *f)
{
	struct receiver_stats st;
	struct proto_resolve m;
	char err[PROTO_TEXT_MAX];
	uint64_t seq;

	if (f->h.type == PROTO_TAIL_ACK) {
		if (proto_decode_tail_ack(f, &seq) < 0)
			return -EBADMSG;
		receiver_get_stats(s->recv, &st);
		binding_on_tail_ack(&s->bind, seq, seq ? st.applied_seq : UINT64_MAX);
		return 0;
	}
	if (proto_decode_resolve(f, &m) < 0)
		return -EBADMSG;
	err[0] = '\0';
	splitres_restored(s->o->state, s->restoring, &m, err, sizeof(err));
	if (err[0])
		serve_set_error(s, "%s", err);
	return 0;
}

/*
 * A resync's question (netsync/primary/sender_delta.c): answered in
 * stream order, after what came before it is applied. A file to read past
 * SERVE_HASH_INLINE is hashed on the hash thread (hashjob.h); the frames
 * after the question wait in s->in meanwhile (the primary's window bounds
 * them) while the loop serves everything else. 0, -EBADMSG (a malformed
 * frame), or -errno after the connection was failed.
 */
int serve_hash_req(struct serve *s, const struct proto_frame *f)
{
	struct proto_hash_req q;
	uint64_t read = 0;
	struct stat st;
	int fd, rc;

	if (proto_decode_hash_req(f, &q) < 0 || path_check(q.path, false) < 0)
		return -EBADMSG;
	rc = peerhash_begin(receiver_store_fd(s->recv), s->cache, &q, SERVE_HASH_INLINE,
			    bufferevent_get_output(s->bev), &read, &fd, &st);
	if (rc == 0) {
		rc = hashjob_start(s->hashjob, fd, &st, &q, s->connections);
		s->hashing = rc == 0;
	}
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot answer for the blocks of '%s'", q.path);
		return rc;
	}
	s->hashed_bytes += read;
	s->last_tx_ns = clock_mono_ns();
	return 0;
}

void serve_on_frame(struct serve *s, const struct proto_frame *f)
{
	int rc = 0;

	if (s->state == PEER_SPLIT) {
		serve_on_split_frame(s, f);
		return;
	}

	if (s->state == PEER_HELLO) {
		if (f->h.type != PROTO_HELLO) {
			serve_conn_fail(s, PROTO_E_BADFRAME, "expected HELLO, got %s",
					proto_type_name(f->h.type));
			return;
		}
		serve_on_hello(s, f);
		return;
	}
	switch (f->h.type) {
	case PROTO_OP: {
		struct proto_op m;

		if (proto_decode_op(f, &m) < 0)
			goto bad;
		rc = receiver_op(s->recv, &m);
		if (rc < 0)
			serve_apply_failed(s, proto_op_name(m.op.type), rc);
		break;
	}
	case PROTO_DATA: {
		struct proto_data m;

		if (proto_decode_data(f, &m) < 0)
			goto bad;
		rc = receiver_data(s->recv, &m);
		if (rc < 0)
			serve_apply_failed(s, "write", rc);
		break;
	}
	case PROTO_ATTR: {
		struct proto_attr m;

		if (proto_decode_attr(f, &m) < 0)
			goto bad;
		rc = receiver_attr(s->recv, &m);
		if (rc < 0)
			serve_apply_failed(s, "setattr", rc);
		break;
	}
	case PROTO_PRUNE: {
		struct proto_prune m;

		if (proto_decode_prune(f, &m) < 0)
			goto bad;
		rc = receiver_prune(s->recv, &m);
		if (rc < 0)
			serve_apply_failed(s, "prune", rc);
		break;
	}
	case PROTO_HASH_REQ:
		if (serve_hash_req(s, f) == -EBADMSG)
			goto bad;
		break;
	case PROTO_BATCH_END: {
		struct receiver_stats st;
		uint64_t seq;

		if (proto_decode_seq(f, &seq) < 0)
			goto bad;
		{
			struct sync_set set;

			if (receiver_batch_seal(s->recv, seq, &set) == 1) {
				/* ACK in serve_synced */
				rc = syncer_request(s->syncer, seq, &set);
				if (rc < 0)
					serve_apply_failed(s, "sync", rc);
				break;
			}
		}
		receiver_get_stats(s->recv, &st);
		proto_encode_ack(bufferevent_get_output(s->bev), st.applied_seq);
		s->last_tx_ns = clock_mono_ns();
		statusinfo_ack(&s->si, st.applied_seq);
		binding_applied(&s->bind, st.applied_seq);
		break;
	}
	case PROTO_RESOLVE:
	case PROTO_TAIL_ACK:
		if (serve_on_gen_frame(s, f) < 0)
			goto bad;
		break;
	case PROTO_HEARTBEAT: {
		uint64_t t;

		if (proto_decode_heartbeat(f, &t) < 0)
			goto bad;
		break;
	}
	case PROTO_GOODBYE: {
		const char *reason = "";

		if (proto_decode_goodbye(f, &reason) < 0)
			goto bad;
		log_notice("primary said goodbye", "peer=%s reason=\"%s\"", s->peer, reason);
		serve_conn_free(s);
		break;
	}
	case PROTO_ERROR: {
		struct proto_error e;

		if (proto_decode_error(f, &e) < 0)
			goto bad;
		log_error("primary reported an error", "peer=%s code=%s err=\"%s\"", s->peer,
			  proto_err_name(e.code), e.text);
		serve_set_error(s, "primary: %s", e.text);
		serve_conn_free(s);
		break;
	}
	default:
		serve_conn_fail(s, PROTO_E_BADFRAME, "unexpected %s frame from a primary",
				proto_type_name(f->h.type));
		break;
	}
	return;
bad:
	serve_conn_fail(s, PROTO_E_BADFRAME, "malformed %s frame", proto_type_name(f->h.type));
}

/* Syncer thread: the batch up to seq is durable; record it before the
 * loop may ACK (STATE/applied stays dirty while the stream is active). */
static int serve_commit_state(uint64_t seq, void *arg)
{
	struct serve *s = arg;

	/* a replayed older batch never moves the recorded seq back */
	if (seq < s->commit_seq)
		seq = s->commit_seq;
	s->commit_seq = seq;
	return state_applied_put(receiver_applied_file(s->recv), seq, true);
}

/* The receiver's touch set filled up in the middle of a batch: fsync it on
 * the sync thread now. Its job has no seq (0): the batch's own job, queued
 * after it and so run after it, makes the batch durable. When the sync
 * thread is that far behind already, the set is fsynced here instead:
 * the loop stops reading until it is done, so a huge batch on a slow disk
 * cannot pile up dup'ed fds until the store's own opens fail. */
static int serve_spill(struct sync_set *set, void *arg)
{
	struct serve *s = arg;

	if (syncer_pending_fds(s->syncer) >= limits_sync_fds_max())
		return sync_set_run(set, receiver_store_fd(s->recv));
	return syncer_request(s->syncer, 0, set);
}

/* The syncer made everything up to seq durable and recorded it: ACK (on
 * whatever connection is up: acks are cumulative and true either way). */
static void serve_synced(uint64_t seq, int err, void *arg)
{
	struct serve *s = arg;
	int rc = err;

	if (rc == 0) {
		receiver_batch_committed(s->recv, seq);
		binding_applied(&s->bind, seq);
	}
	if (rc < 0) {
		log_error("cannot make the store durable", "store=%s err=\"%s\"", s->o->store,
			  strerror(-rc));
		if (s->bev && s->state == PEER_STREAMING)
			serve_conn_fail(s, PROTO_E_APPLY, "sync of the store on %s failed: %s",
					s->node_name, strerror(-rc));
		else
			serve_set_error(s, "sync of the store failed: %s", strerror(-rc));
		return;
	}
	if (s->bev && s->state == PEER_STREAMING) {
		proto_encode_ack(bufferevent_get_output(s->bev), seq);
		s->last_tx_ns = clock_mono_ns();
		statusinfo_ack(&s->si, seq);
	}
	serve_maybe_resume(s);	/* the syncer's queue shrank */
}

/* The hash thread answered a HASH_REQ of connection TAG: the answer goes
 * out and the frames that waited behind it are applied. */
static void serve_hashed(struct evbuffer *answer, uint64_t read, uint64_t tag, void *arg)
{
	struct serve *s = arg;

	s->hashed_bytes += read;
	if (!s->bev || !s->hashing || tag != s->connections) {
		if (answer)
			evbuffer_free(answer);
		return;
	}
	s->hashing = false;
	if (!answer || evbuffer_add_buffer(bufferevent_get_output(s->bev), answer) < 0) {
		if (answer)
			evbuffer_free(answer);
		serve_conn_fail(s, PROTO_E_APPLY, "cannot answer for the blocks of a file");
		return;
	}
	evbuffer_free(answer);
	s->last_tx_ns = clock_mono_ns();
	serve_apply(s);
}

/*
 * Lingering close. Closing a socket that still has unread input makes the
 * kernel send a RST, and a RST can overtake the ERROR frame we just wrote:
 * the primary would see "connection reset" instead of "No space left on
 * device". So once the ERROR is written we only shut down our sending
 * side and keep reading (and discarding) until the primary closes too, or
 * the grace period in the tick runs out.
 */
static void serve_write_cb(struct bufferevent *bev, void *arg)
{
	struct serve *s = arg;

	if (s->state == PEER_CLOSING &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		shutdown(bufferevent_getfd(bev), SHUT_WR);
	else
		serve_maybe_resume(s);	/* the output drained below its mark */
}

/* Why a TLS connection failed, in OpenSSL's words (or the socket's). */
static void serve_tls_error(struct bufferevent *bev, char *buf, size_t len)
{
	unsigned long e, first = 0;

	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (!first)
			first = e;
	if (first)
		ERR_error_string_n(first, buf, len);
	else
		snprintf(buf, len, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* The connection ended: EOF (the primary closed it) or an error WHY. */
void serve_conn_lost(struct serve *s, bool eof, const char *why)
{
	if (eof) {
		if (s->state != PEER_CLOSING) {
			log_warn("primary closed the connection", "peer=%s", s->peer);
			if (s->state == PEER_STREAMING)
				serve_set_error(s, "primary %s closed the connection", s->peer);
		}
		serve_conn_free(s);
		return;
	}
	if (s->state != PEER_CLOSING) {	/* keep the reason we were closing */
		log_warn("connection to the primary failed", "peer=%s err=\"%s\"", s->peer, why);
		serve_set_error(s, "connection to %s failed: %s", s->peer, why);
	}
	serve_conn_free(s);
}

void serve_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct serve *s = arg;

	if (what & BEV_EVENT_EOF) {
		serve_conn_lost(s, true, "closed");
	} else if (what & BEV_EVENT_ERROR) {
		char why[256];

		if (s->o->tls)
			serve_tls_error(bev, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s",
				 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		serve_conn_lost(s, false, why);
	}
}

/* Refuses a connection with one ERROR frame written straight to the
 * socket (it is fresh, so the frame fits its send buffer). */
static void serve_refuse(evutil_socket_t fd, uint32_t code, const char *text)
{
	struct evbuffer *b = evbuffer_new();

	char junk[4096];

	if (b) {
		proto_encode_error(b, code, text);
		evbuffer_write(b, fd);
		evbuffer_free(b);
	}
	/* what the peer already sent (its HELLO) is read so that closing does
	 * not turn into a RST that could overtake the ERROR */
	shutdown(fd, SHUT_WR);
	while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	evutil_closesocket(fd);
}

/*
 * A `twinfs mirror` client: served on a thread of its own (mirrorsess.h),
 * one at a time. A store that is the replication target of a mount (a
 * primary is connected, or it has applied a primary's stream) is refused
 * unless the client says --force: a mirror would change it behind the
 * mount's back, and the mount would not know.
 */
static int serve_admit_mirror(struct serve *s, struct gate_conn *c,
			      const struct proto_frame *hello, const struct proto_hello *h)
{
	struct mirrorsess_opts mo = { .store = s->o->store, .cache = s->cache };
	struct receiver_stats st;
	char refuse[PROTO_TEXT_MAX];

	/* a session still running (or ending: its thread wakes from its
	 * lingering read once the client closed) holds the slot; the gate
	 * offers the client again each second up to its deadline */
	if (s->mirror && !mirrorsess_done(s->mirror))
		return -EAGAIN;
	mirrorsess_free(s->mirror);
	s->mirror = NULL;
	receiver_get_stats(s->recv, &st);
	if (!(h->flags & PROTO_HELLO_F_FORCE) && (s->state != PEER_NONE || st.applied_seq)) {
		if (s->state != PEER_NONE)
			snprintf(refuse, sizeof(refuse), "%s is the live replication target of "
				 "the mount at %s; a mirror would change it behind the mount's "
				 "back (use --force to write anyway)", s->node_name, s->peer);
		else
			snprintf(refuse, sizeof(refuse), "%s is the replication target of a "
				 "mount (applied seq %llu); a mirror would change it behind the "
				 "mount's back (use --force to write anyway)", s->node_name,
				 (unsigned long long)st.applied_seq);
		mo.refuse = refuse;
		log_warn("refusing a mirror into a replication target", "peer=%s", c->peer);
	}
	proto_frame_consume(c->in, hello);
	if (mirrorsess_start(s->base, c, &mo, &s->mirror) < 0)
		log_error("cannot start a mirror session", "peer=%s", c->peer);
	else if (!mo.refuse)
		log_notice("a mirror client connected", "peer=%s", c->peer);
	return 0;
}

/*
 * The gate admitted a connection with its HELLO (gate.h): it takes the one
 * primary slot if that is free. From here on reads go the fast way
 * (plaintext: our own readv, see SERVE_READ_CHUNK; TLS: the OpenSSL
 * bufferevent) into C->in, where the HELLO already waits.
 */
static int serve_admit_cb(void *arg, struct gate_conn *c, const struct proto_frame *hello)
{
	struct serve *s = arg;
	struct proto_hello h;

	if (s->stopping)
		return -EBUSY;
	if (proto_decode_hello(hello, &h) == 0 && h.role == PROTO_ROLE_VERIFIER &&
	    h.version == PROTO_VERSION) {
		/* reads the store only: beside the primary, one at a time */
		if (s->verifier && !verifier_done(s->verifier))
			return -EAGAIN;	/* as a mirror session (serve_admit_mirror) */
		verifier_free(s->verifier);
		s->verifier = NULL;
		proto_frame_consume(c->in, hello);
		if (verifier_start(s->base, s->o->store, c, &s->verifier) < 0)
			log_error("cannot start a verifier", "peer=%s", c->peer);
		return 0;
	}
	if (proto_decode_hello(hello, &h) == 0 && h.role == PROTO_ROLE_MIRROR &&
	    h.version == PROTO_VERSION)
		return serve_admit_mirror(s, c, hello, &h);
	if (s->state != PEER_NONE)
		return -EBUSY;
	s->bev = c->bev;
	s->in = c->in;
	{
		/* reads go our own way (serve_sock_read_cb, serve_tls_sock_read_cb);
		 * the bufferevent writes */
		if (c->tls) {
			bufferevent_disable(s->bev, EV_READ);
			tls_bulk_start(bufferevent_openssl_get_ssl(s->bev));
		}
		s->rev = event_new(s->base, c->fd, EV_READ | EV_PERSIST, c->tls ?
				   serve_tls_sock_read_cb : serve_sock_read_cb, s);
		if (!s->rev || event_add(s->rev, NULL) < 0) {
			log_error("out of memory admitting the primary", "peer=%s", c->peer);
			if (s->rev)
				event_free(s->rev);
			s->rev = NULL;
			bufferevent_free(s->bev);
			evbuffer_free(s->in);
			s->bev = NULL;
			s->in = NULL;
			return 0;	/* ours, and gone */
		}
		if (c->tls)	/* whatever OpenSSL holds already */
			event_active(s->rev, EV_READ, 1);
		bufferevent_setcb(s->bev, NULL, serve_write_cb, serve_event_cb, s);
		bufferevent_enable(s->bev, EV_WRITE);
		s->reading = true;
	}
	/* serve_write_cb runs once the output is below the mark where
	 * reading resumes (limits.h) */
	bufferevent_setwatermark(s->bev, EV_WRITE, LIMITS_OUT_LOW, 0);
	/* ACKs and heartbeats are tiny and latency matters (sync mode) */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	snprintf(s->peer, sizeof(s->peer), "%.*s", (int)sizeof(s->peer) - 1, c->peer);
	snprintf(s->peer_auth, sizeof(s->peer_auth), "%s", c->auth);
	s->peer_name[0] = '\0';
	s->conn_rx = 0;
	s->paused = LIMITS_OK;
	s->connections++;
	s->last_rx_ns = s->last_tx_ns = clock_mono_ns();
	if (c->tls)
		log_notice("primary authenticated", "peer=%s auth=\"%s\"", s->peer, s->peer_auth);
	serve_set_state(s, PEER_HELLO);
	/* the HELLO, then whatever came with it */
	s->bytes_received += PROTO_HDR_LEN + hello->h.len;
	s->conn_rx += PROTO_HDR_LEN + hello->h.len;
	serve_on_frame(s, hello);
	if (s->bev) {
		proto_frame_consume(s->in, hello);
		serve_apply(s);
	}
	return 0;
}

static const struct gate_ops serve_gate_ops = {
	.hello = serve_hello_cb,
	.admit = serve_admit_cb,
};

static void serve_accept_cb(struct evconnlistener *lis, evutil_socket_t fd,
			    struct sockaddr *sa, int salen, void *arg)
{
	struct serve *s = arg;
	char who[INET6_ADDRSTRLEN + 8];

	serve_addr_str(sa, who, sizeof(who));
	if (s->stopping) {
		serve_refuse(fd, PROTO_E_SHUTDOWN, "shutting down");
		return;
	}
	if (!s->o->tls && !s->o->insecure && !addr_is_loopback(sa)) {
		log_warn("refused a non-loopback peer (no TLS keys; see --insecure)", "peer=%s", who);
		serve_refuse(fd, PROTO_E_ROLE, "non-loopback peers need TLS keys or --insecure");
		return;
	}
	/* the slot is taken only once the connection is authenticated and its
	 * HELLO is valid (serve_admit_cb) */
	gate_accept(s->gate, fd, who);
}

/* Once a second: heartbeats when idle, dead-link detection, and the
 * grace period of a closing connection. */
static void serve_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve *s = arg;
	uint64_t now = clock_mono_ns();
	uint64_t beat = (uint64_t)s->o->heartbeat_s * 1000000000ull;
	int rc;

	gate_tick(s->gate, now);
	serve_tls_reload(s);
	if (s->verifier)
		verifier_tick(s->verifier, now, PROTO_DEAD_BEATS * beat);
	if (s->verifier && verifier_done(s->verifier)) {
		verifier_free(s->verifier);
		s->verifier = NULL;
	}
	if (s->mirror && mirrorsess_done(s->mirror)) {
		mirrorsess_free(s->mirror);
		s->mirror = NULL;
	}
	/* quiet for a second: write STATE/applied clean (see receiver_idle) */
	if (now - s->last_rx_ns >= 1000000000ull && (rc = receiver_idle(s->recv)) < 0)
		log_error("cannot update STATE/applied", "state=%s err=\"%s\"", s->o->state,
			  strerror(-rc));
	if (!s->bev)
		return;
	if (s->state == PEER_CLOSING) {
		if (now - s->state_since_ns > SERVE_CLOSE_GRACE_NS)
			serve_conn_free(s);
		return;
	}
	if (s->paused == LIMITS_OVER_OUTPUT &&
	    now - s->paused_since_ns > PROTO_DEAD_BEATS * beat) {
		log_warn("the primary does not read what this node sends; dropping the "
			 "connection", "peer=%s unread_bytes=%zu", s->peer,
			 evbuffer_get_length(bufferevent_get_output(s->bev)));
		serve_set_error(s, "primary %s does not read its acks", s->peer);
		limits_abort_on_close(bufferevent_getfd(s->bev));
		serve_conn_free(s);
		return;
	}
	if (s->paused == LIMITS_STORE_FULL && now - s->paused_since_ns >= 1000000000ull) {
		s->paused = LIMITS_OK;	/* the failed frame first */
		serve_apply(s);
		if (!s->bev)
			return;
	}
	if (s->paused != LIMITS_OK) {
		serve_maybe_resume(s);
		/* not reading is ours: it is no silence of the primary's */
		if (s->paused != LIMITS_OK)
			s->last_rx_ns = now;
	}
	/* last_rx_ns may be after now: a resume above, or the loop's own work */
	if (now > s->last_rx_ns && now - s->last_rx_ns > PROTO_DEAD_BEATS * beat) {
		log_warn("primary silent for too long; dropping the connection",
			 "peer=%s silent_s=%.1f", s->peer, (double)(now - s->last_rx_ns) / 1e9);
		serve_set_error(s, "primary %s timed out", s->peer);
		serve_conn_free(s);
		return;
	}
	/* half a tick of slack so that a 1 s heartbeat goes out on every tick */
	if ((s->state == PEER_STREAMING || s->state == PEER_SPLIT) &&
	    now - s->last_tx_ns + beat / 2 >= beat) {
		proto_encode_heartbeat(bufferevent_get_output(s->bev), now / 1000000);
		s->last_tx_ns = now;
	}
}

static void serve_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct serve *s = arg;

	log_notice("stopping", "signal=%d", (int)sig);
	s->stopping = true;
	if (s->bev) {
		struct evbuffer *out = bufferevent_get_output(s->bev);

		proto_encode_goodbye(out, "secondary shutting down");
		if (s->o->tls) {
			/* OpenSSL writes it: let the loop run briefly to do so */
			struct timeval flush = { 0, 200000 };

			event_base_loopexit(s->base, &flush);
			return;
		}
		evbuffer_write(out, bufferevent_getfd(s->bev));
		serve_conn_free(s);
	}
	event_base_loopexit(s->base, NULL);
}

/* The status reply: `twinfs status` and /metrics read the same numbers. */
static void serve_status_json(void *arg, struct evbuffer *out)
{
	struct serve *s = arg;
	struct receiver_stats st;
	struct ctljson j;

	receiver_get_stats(s->recv, &st);
	ctljson_begin(&j, out);
	ctljson_bool(&j, "ok", true);
	ctljson_str(&j, "role", "secondary");
	ctljson_bool(&j, "connected", s->state == PEER_HELLO || s->state == PEER_STREAMING);
	ctljson_str(&j, "peer", s->bev ? s->peer : NULL);
	ctljson_str(&j, "peer_name", s->bev ? s->peer_name : NULL);
	ctljson_str(&j, "peer_state", peer_state_names[s->state]);
	ctljson_u64(&j, "applied_seq", st.applied_seq);
	ctljson_bool(&j, "dirty", st.dirty);
	ctljson_u64(&j, "generation", history_cur(&s->bind.hist) ?
		    history_cur(&s->bind.hist)->num : s->node.generation);
	binding_status(&s->bind, &j);
	divergence_json(&s->div, ctljson_json(&j));
	ctljson_str(&j, "resolve_error", s->res_error);
	ctljson_u64(&j, "bytes_received", s->bytes_received);
	ctljson_u64(&j, "ops_applied", st.ops);
	ctljson_u64(&j, "data_bytes", st.data_bytes);
	ctljson_u64(&j, "batches", st.batches);
	ctljson_u64(&j, "delta_hashed_bytes", s->hashed_bytes);
	ctljson_u64(&j, "connections", s->connections);
	ctljson_u64(&j, "connections_waiting", gate_waiting(s->gate));
	ctljson_u64(&j, "connections_refused", gate_refused(s->gate));
	ctljson_u64(&j, "read_pauses", s->read_pauses);
	ctljson_str(&j, "read_paused", s->bev && s->paused != LIMITS_OK ?
		    limits_over_name(s->paused) : NULL);
	ctljson_str(&j, "last_error", s->last_error[0] ? s->last_error : NULL);
	ctljson_str(&j, "restoring", s->restoring[0] ? s->restoring : NULL);
	ctljson_str(&j, "listen", s->o->listen);
	ctljson_str(&j, "store", s->o->store);
	ctljson_str(&j, "node_id", s->node.id_hex);
	ctljson_str(&j, "node_name", s->node_name);
	ctljson_bool(&j, "insecure", s->o->insecure);
	ctljson_str(&j, "tls", s->o->tls ? tls_ctx_mode(s->o->tls) : NULL);
	ctljson_str(&j, "peer_auth", s->bev && s->peer_auth[0] ? s->peer_auth : NULL);
	statusinfo_json(&j, &s->si, NULL, s->o->state, s->o->store);
	ctljson_end(&j);
}

static int serve_ctl_status(struct control_req *req, int argc, char **argv, void *arg)
{
	serve_status_json(arg, control_req_out(req));
	control_req_send(req);
	return 0;
}

/* True when the primary's host leaves what we sent it unacknowledged
 * (SERVE_PROMOTE_UNANSWERED_RTOS); *RTX gets the count of timeouts. */
static bool serve_peer_unanswered(struct serve *s, unsigned *rtx)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int fd = bufferevent_getfd(s->bev);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	*rtx = ti.tcpi_retransmits;
	return ti.tcpi_unacked > 0 && ti.tcpi_retransmits >= SERVE_PROMOTE_UNANSWERED_RTOS;
}

/*
 * `promote [force]` (twinfs promote): this secondary begins its own
 * generation from its durable position and takes no primary any more.
 * Refused while a primary is connected and heard from, which means the
 * primary is alive (an HA manager must not promote then), unless forced;
 * a connected primary silent for SERVE_PROMOTE_SILENT_BEATS heartbeats, or
 * silent for one while its node leaves our heartbeats unacknowledged
 * (serve_peer_unanswered), is lost. Either way the connection is dropped
 * first.
 */
static int serve_ctl_promote(struct control_req *req, int argc, char **argv, void *arg)
{
	struct serve *s = arg;
	bool force = argc > 1 && strcmp(argv[1], "force") == 0;
	bool already = s->bind.promoted;
	struct receiver_stats st;
	struct ctljson j;
	char err[1200] = "";
	int rc;

	if (!already && s->bev && (s->state == PEER_HELLO || s->state == PEER_STREAMING)) {
		uint64_t now = clock_mono_ns();
		uint64_t beat = (uint64_t)s->o->heartbeat_s * 1000000000ull;
		/* while we do not read, last_rx_ns follows the clock (serve_tick_cb) */
		uint64_t quiet = now > s->last_rx_ns ? now - s->last_rx_ns : 0;
		unsigned rtx = 0;
		bool silent = quiet >= SERVE_PROMOTE_SILENT_BEATS * beat;
		bool unanswered = !silent && quiet >= beat && serve_peer_unanswered(s, &rtx);
		bool lost = silent || unanswered;

		if (!force && !lost) {
			snprintf(err, sizeof(err), "a primary is connected (%s, %s) and was "
				 "heard from %.1f s ago: it is alive; refusing to promote "
				 "(--force drops it)", s->peer,
				 s->peer_name[0] ? s->peer_name : "no name", (double)quiet / 1e9);
			goto reply;
		}
		if (unanswered && !force)
			log_warn("promote: the connected primary's node does not answer; dropping "
				 "it as lost", "peer=%s silent_s=%.1f tcp_retransmits=%u", s->peer,
				 (double)quiet / 1e9, rtx);
		else if (lost && !force)
			log_warn("promote: the connected primary is silent; dropping it as lost",
				 "peer=%s silent_s=%.1f heartbeat_s=%u", s->peer,
				 (double)quiet / 1e9, (unsigned)s->o->heartbeat_s);
		else
			log_warn("promote --force: dropping the connected primary", "peer=%s",
				 s->peer);
		serve_conn_fail(s, PROTO_E_ROLE, "%s was promoted to primary (%s)",
				s->node_name, unanswered && !force ? "this primary's node did "
				"not answer" : lost && !force ? "this primary was silent" : "--force");
	}
	receiver_get_stats(s->recv, &st);
	rc = binding_promote(&s->bind, st.applied_seq, st.dirty);
	if (rc < 0)
		snprintf(err, sizeof(err), "cannot record the new generation: %s",
			 strerror(-rc));
reply:
	ctljson_begin(&j, control_req_out(req));
	ctljson_bool(&j, "ok", err[0] == '\0');
	if (err[0])
		ctljson_str(&j, "error", err);
	else
		ctljson_str(&j, "result", already ? "already" : "promoted");
	ctljson_u64(&j, "generation", history_cur(&s->bind.hist) ?
		    history_cur(&s->bind.hist)->num : 0);
	ctljson_end(&j);
	control_req_send(req);
	return 0;
}

/* `resolve local|peer|both [dry]` and `restore FOLDER` (twinfs resolve
 * on this node): splitres.c, with the connection if it is the right one. */
static int serve_ctl_resolve(struct control_req *req, int argc, char **argv, void *arg)
{
	struct serve *s = arg;
	bool ready = s->bev && s->state == PEER_SPLIT && s->div.complete;

	if (ready && !(argc > 2 && strcmp(argv[2], "dry") == 0))
		s->res_error[0] = '\0';	/* a new try: its own outcome */
	splitres_ctl_resolve(&s->div, ready ? bufferevent_get_output(s->bev) : NULL,
			     s->node_name, argc > 1 ? argv[1] : "",
			     argc > 2 && strcmp(argv[2], "dry") == 0, control_req_out(req));
	if (ready)
		s->last_tx_ns = clock_mono_ns();
	control_req_send(req);
	return 0;
}

static int serve_ctl_restore(struct control_req *req, int argc, char **argv, void *arg)
{
	struct serve *s = arg;
	bool ready = s->bev && s->state == PEER_STREAMING;

	splitres_ctl_restore(s->o->state, argc > 1 ? argv[1] : "",
			     ready ? bufferevent_get_output(s->bev) : NULL, s->restoring,
			     sizeof(s->restoring), control_req_out(req));
	if (ready)
		s->last_tx_ns = clock_mono_ns();
	control_req_send(req);
	return 0;
}

static const struct control_cmd serve_ctl_cmds[] = {
	{ "status", serve_ctl_status },
	{ "promote", serve_ctl_promote },
	{ "resolve", serve_ctl_resolve },
	{ "restore", serve_ctl_restore },
	{ NULL, NULL },
};

static void serve_detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static int serve_listen(struct serve *s)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loop;
	int rc;

	rc = addr_resolve(s->o->listen, AI_PASSIVE, &ss, &len, NULL);
	loop = rc == 0 && addr_is_loopback((struct sockaddr *)&ss);
	if (rc < 0) {
		log_error("cannot resolve the listen address", "listen=%s", s->o->listen);
		return rc;
	}
	if (!loop && !s->o->insecure && !s->o->tls) {
		log_error("refusing a non-loopback listen address without TLS keys",
			  "listen=%s", s->o->listen);
		return -EPERM;
	}
	if (!loop && !s->o->tls)
		log_warn("INSECURE: accepting unauthenticated, unencrypted primaries from the "
			 "network (--insecure)", "listen=%s", s->o->listen);
	s->lis = evconnlistener_new_bind(s->base, serve_accept_cb, s,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
					 LEV_OPT_CLOSE_ON_EXEC, 16,
					 (struct sockaddr *)&ss, (int)len);
	if (!s->lis) {
		rc = -errno ? -errno : -EADDRINUSE;
		log_error("cannot listen", "listen=%s err=\"%s\" hint=\"is another serve using "
			  "this port?\"", s->o->listen, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Process-wide settings and the node's name, before anything is opened. */
static void serve_process_setup(struct serve *s)
{
	/* a batch may hold up to SYNCER_FSYNC_MAX fds for its fsyncs */
	struct rlimit rl;

	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_debug("cannot raise the open file limit", "err=%s", strerror(errno));
	}
	if (s->o->node_name)
		snprintf(s->node_name, sizeof(s->node_name), "%s", s->o->node_name);
	else if (gethostname(s->node_name, sizeof(s->node_name) - 1) < 0)
		snprintf(s->node_name, sizeof(s->node_name), "secondary");
}

/* The store and STATE/applied (the receiver), whose data the store holds
 * (binding.c), and STATE/mount, where `twinfs promote` of a stopped serve
 * finds the store. 0 or -errno (logged; nothing left open). */
static int serve_open_store(struct serve *s)
{
	int rc = receiver_open(s->o->store, s->o->state, &s->recv);

	if (rc < 0) {
		log_error("cannot open the store or STATE/applied", "store=%s state=%s err=\"%s\"",
			  s->o->store, s->o->state, strerror(-rc));
		return rc;
	}
	rc = binding_open(&s->bind, s->o->state, s->o->store, s->node.id);
	if (rc < 0) {
		receiver_close(s->recv);
		return rc;
	}
	s->bind.store_fd = receiver_store_fd(s->recv);
	if (mountrec_write(s->o->state, s->o->store, "") < 0)
		log_warn("cannot write STATE/mount", "state=%s", s->o->state);
	return 0;
}

static void serve_close_store(struct serve *s)
{
	divergence_free(&s->div);
	hold_clear(&s->hold);
	binding_close(&s->bind);
	receiver_close(s->recv);
}

/* The convergence engine's part of serve: a mirror session ends, and
 * STATE/hashcache is written for the next run. */
static void serve_delta_stop(struct serve *s)
{
	hashjob_free(s->hashjob);
	s->hashjob = NULL;
	mirrorsess_free(s->mirror);
	s->mirror = NULL;
	if (s->cache)
		hashcache_save_synced(s->cache);
	hashcache_close(s->cache);
	s->cache = NULL;
}

/* The loop's own events: the tick, the continuation of serve_apply and
 * the signals. 0 or -ENOMEM (serve_events_stop frees what was made). */
static int serve_events_start(struct serve *s)
{
	struct timeval one_s = { 1, 0 };

	s->tick = event_new(s->base, -1, EV_PERSIST, serve_tick_cb, s);
	s->cont = event_new(s->base, -1, 0, serve_cont_cb, s);
	s->sigterm = evsignal_new(s->base, SIGTERM, serve_signal_cb, s);
	s->sigint = evsignal_new(s->base, SIGINT, serve_signal_cb, s);
	if (!s->tick || !s->cont || !s->sigterm || !s->sigint)
		return -ENOMEM;
	event_add(s->tick, &one_s);
	event_add(s->sigterm, NULL);
	event_add(s->sigint, NULL);
	return 0;
}

static void serve_events_stop(struct serve *s)
{
	struct event *evs[] = { s->tick, s->cont, s->sigterm, s->sigint };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			event_free(evs[i]);
	s->tick = s->cont = s->sigterm = s->sigint = NULL;
}

int serve_run(const struct serve_opts *o, int ready_fd, bool detach)
{
	struct serve s = { .o = o };
	int rc;

	serve_process_setup(&s);
	rc = state_dir_prepare(o->state);
	if (rc < 0) {
		log_error("cannot use the state directory", "state=%s err=\"%s\"", o->state,
			  strerror(-rc));
		return rc;
	}
	rc = state_node_load(o->state, &s.node);
	if (rc < 0) {
		log_error("cannot read node.id/generation in the state directory",
			  "state=%s err=\"%s\"", o->state, strerror(-rc));
		return rc;
	}
	rc = serve_open_store(&s);
	if (rc < 0)
		return rc;
	s.base = event_base_new();
	if (!s.base) {
		rc = -ENOMEM;
		goto out_recv;
	}
	{
		struct receiver_stats st;

		receiver_get_stats(s.recv, &st);
		s.commit_seq = st.applied_seq;
	}
	rc = syncer_start(s.base, receiver_store_fd(s.recv), serve_synced, serve_commit_state,
			  &s, &s.syncer);
	if (rc < 0) {
		log_error("cannot start the sync thread", "err=\"%s\"", strerror(-rc));
		goto out_base;
	}
	receiver_set_spill(s.recv, serve_spill, &s);
	{
		/* another daemon on this state directory is the likelier mistake
		 * than a taken port: say that first */
		char *reply = NULL;

		if (control_call(o->state, "ping", 1000, &reply) == 0) {
			free(reply);
			log_error("another daemon uses this state directory",
				  "state=%s hint=\"stop it first, or use another --state\"",
				  o->state);
			rc = -EADDRINUSE;
			goto out_syncer;
		}
	}
	rc = hashcache_open(o->state, receiver_store_fd(s.recv), &s.cache);
	if (rc == 0)
		rc = hashjob_new(s.base, s.cache, serve_hashed, &s, &s.hashjob);
	if (rc < 0)
		goto out_syncer;
	rc = gate_new(s.base, o->tls, &serve_gate_ops, &s, &s.gate);
	if (rc < 0)
		goto out_syncer;
	rc = serve_listen(&s);
	if (rc < 0)
		goto out_syncer;
	if (o->metrics_listen) {
		char why[300];

		rc = metrics_start(s.base, o->metrics_listen, o->insecure, serve_status_json, &s,
				   &s.metrics, why, sizeof(why));
		if (rc < 0) {
			log_error("cannot serve metrics", "why=\"%s\"", why);
			goto out_lis;
		}
	}
	rc = control_server_start(s.base, o->state, serve_ctl_cmds, &s, &s.ctl);
	if (rc < 0) {
		log_error("cannot serve the control socket", "state=%s err=\"%s\"%s", o->state,
			  strerror(-rc), rc == -EADDRINUSE ?
			  " hint=\"another daemon uses this state directory\"" : "");
		goto out_lis;
	}
	rc = serve_events_start(&s);
	if (rc < 0)
		goto out_events;
	{
		struct receiver_stats st;

		receiver_get_stats(s.recv, &st);
		log_notice("serving", "listen=%s store=%s state=%s node=%s applied_seq=%llu%s",
			   o->listen, o->store, o->state, s.node.id_hex,
			   (unsigned long long)st.applied_seq, st.dirty ? " dirty=true" : "");
	}
	if (ready_fd >= 0) {
		if (detach) {
			log_setup("twinfs-serve", log_get_level(), LOG_SINK_SYSLOG);
			serve_detach_stdio();
		}
		if (write(ready_fd, "1", 1) != 1)
			log_warn("cannot tell the parent we are ready", "err=\"%s\"",
				 strerror(errno));
		close(ready_fd);
	}
	event_base_dispatch(s.base);
	rc = 0;

out_events:
	if (s.bev)
		serve_conn_free(&s);
	serve_events_stop(&s);
	control_server_stop(s.ctl);
out_lis:
	metrics_stop(s.metrics);
	evconnlistener_free(s.lis);
out_syncer:
	verifier_free(s.verifier);
	serve_delta_stop(&s);
	gate_free(s.gate);
	s.gate = NULL;
	{
		/* syncs still queued at shutdown are finished (and recorded by
		 * serve_commit_state); then STATE/applied is written clean if
		 * nothing after it was applied */
		int err;
		uint64_t seq = syncer_stop(s.syncer, &err);

		if (!err && seq > 0)
			receiver_batch_committed(s.recv, seq);
		receiver_idle(s.recv);
	}
out_base:
	event_base_free(s.base);
out_recv:
	serve_close_store(&s);
	if (rc == 0)
		log_notice("stopped", "store=%s", o->store);
	return rc;
}
