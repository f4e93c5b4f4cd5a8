/*
 * serve_intake — how serve takes in its primary's stream (serve_int.h):
 * reading the socket (large readv, or TLS records decrypted straight into
 * the input), applying the frames a slice of time at a time, stopping
 * while a cap of netsync/wire/limits.h is exceeded, and holding the frame
 * a full or read-only store refused until it applies. Runs on serve's
 * loop thread.
 */
#include "netsync/secondary/serve_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "common/clock.h"
#include "common/log.h"
#include "netsync/secondary/syncer.h"
#include "netsync/wire/tls.h"

/*
 * A full store (ENOSPC, EDQUOT), or one remounted read-only (EROFS: an
 * admin, or ext4's errors=remount-ro). That is the whole store's
 * condition, not one path's, so dropping the connection would only have
 * the primary reconnect and send the same batch again, to fail at the
 * same place (docs/benchmarks.md, "The link"). Instead the frame that
 * failed stays in `in`, reading stops, and the tick tries it again every
 * second; the primary is told once per connection with ERROR and the
 * RETRY flag (the connection stays up, its stream waits in the socket
 * buffers), and the first frame that applies again ends it. Applying is
 * idempotent, so a frame half applied before it failed is simply applied
 * again. Logged when it starts, once a minute while it lasts, and when
 * it ends. Returns true if RC was taken so.
 */
bool serve_store_full(struct serve *s, const char *what, const char *path, int rc)
{
	uint64_t now = clock_mono_ns();
	char text[PROTO_TEXT_MAX];

	const char *what_is = rc == -EROFS ? "read-only" : "full";

	if ((rc != -ENOSPC && rc != -EDQUOT && rc != -EROFS) || s->state != PEER_STREAMING)
		return false;
	snprintf(text, sizeof(text), "%s '%s' on %s: %s", what, path, s->node_name,
		 strerror(-rc));
	if (!s->full_since_ns) {
		s->full_since_ns = s->full_logged_ns = now;
		s->full_retries = 0;
		s->read_pauses++;
		log_warn(rc == -EROFS ? "the store is read-only: holding the primary's "
			 "stream and retrying every second until it takes writes" :
			 "the store is full: holding the primary's stream and retrying every "
			 "second until there is room", "store=%s peer=%s err=\"%s\"",
			 s->o->store, s->peer, text);
	} else if (now - s->full_logged_ns >= 60ull * 1000000000ull) {
		s->full_logged_ns = now;
		log_warn("the store still refuses writes", "store=%s is=%s retries=%llu "
			 "seconds=%.0f err=\"%s\"", s->o->store, what_is,
			 (unsigned long long)s->full_retries,
			 (double)(now - s->full_since_ns) / 1e9, text);
	}
	if (!s->full_told) {
		s->full_told = true;
		proto_encode_error_retry(bufferevent_get_output(s->bev), PROTO_E_APPLY, text);
		s->last_tx_ns = now;
	}
	serve_set_error(s, "%s", text);
	s->full_retries++;
	s->stall_now = true;
	s->paused = LIMITS_STORE_FULL;
	s->paused_since_ns = now;
	serve_reading(s, false);
	return true;
}

/* A frame applied after the store was full: it takes writes again. */
static void serve_store_room(struct serve *s)
{
	log_notice("the store takes writes again; the primary's stream goes on",
		   "store=%s retries=%llu seconds=%.1f", s->o->store,
		   (unsigned long long)s->full_retries,
		   (double)(clock_mono_ns() - s->full_since_ns) / 1e9);
	s->full_since_ns = 0;
	s->last_error[0] = '\0';
	if (s->full_told)	/* the empty text ends the stall (sender.c) */
		proto_encode_error_retry(bufferevent_get_output(s->bev), PROTO_E_APPLY, "");
	s->full_told = false;
}

/*
 * Caps. What the primary can make this loop hold is bounded: the input by
 * one read (SERVE_READ_MAX) plus one frame, because frames are applied as
 * they arrive; the output, the files held open for fsync and the batches
 * queued behind the disk by limits_check, which stops reading from the
 * primary while any of them is over its cap (the kernel's socket buffers
 * then push back on the primary's sender) and reads again once it is
 * under its low mark: when the output drains (serve_write_cb) or the
 * syncer makes progress (serve_synced), or in the tick. Being over the
 * sync caps is this node's slowness and costs the primary nothing but
 * time; a primary that does not read what we send is dropped after
 * PROTO_DEAD_BEATS heartbeats (serve_tick_cb).
 */
void serve_reading(struct serve *s, bool on)
{
	if (!s->bev || s->reading == on)
		return;
	s->reading = on;
	if (!s->rev)
		return;
	if (!on) {
		event_del(s->rev);
		return;
	}
	event_add(s->rev, NULL);
	/* records may wait in OpenSSL's buffer, where epoll does not see them */
	if (s->o->tls)
		event_active(s->rev, EV_READ, 1);
}

static void serve_use(struct serve *s, struct limits_use *u)
{
	u->out_bytes = s->bev ? evbuffer_get_length(bufferevent_get_output(s->bev)) : 0;
	u->sync_fds = syncer_pending_fds(s->syncer);
	u->sync_jobs = syncer_pending_jobs(s->syncer);
}

/* Before a frame is applied: true (and reading stopped) if a cap is
 * exceeded. */
static bool serve_over_caps(struct serve *s)
{
	struct limits_use u;
	enum limits_over why;

	if (s->paused != LIMITS_OK)
		return true;
	serve_use(s, &u);
	why = limits_check(&u, false);
	if (why == LIMITS_OK)
		return false;
	s->paused = why;
	s->paused_since_ns = clock_mono_ns();
	s->read_pauses++;
	serve_reading(s, false);
	log_info("not reading from the primary until it is back under a cap", "peer=%s "
		 "cap=%s out_bytes=%zu sync_fds=%zu sync_jobs=%zu", s->peer,
		 limits_over_name(why), u.out_bytes, u.sync_fds, u.sync_jobs);
	return true;
}

/* Reading stopped over a cap resumes once it is under its low mark. */
void serve_maybe_resume(struct serve *s)
{
	struct limits_use u;

	if (!s->bev || s->paused == LIMITS_OK || s->paused == LIMITS_STORE_FULL)
		return;
	serve_use(s, &u);
	if (limits_check(&u, true) != LIMITS_OK)
		return;
	log_debug("reading from the primary again", "peer=%s cap=%s paused_ms=%llu", s->peer,
		  limits_over_name(s->paused),
		  (unsigned long long)((clock_mono_ns() - s->paused_since_ns) / 1000000));
	s->paused = LIMITS_OK;
	s->last_rx_ns = clock_mono_ns();	/* the pause was ours */
	event_active(s->cont, EV_TIMEOUT, 1);	/* what `in` holds first */
}

/* Applies the complete frames in s->in, for at most LIMITS_APPLY_SLICE_NS
 * (the rest on the next pass of the loop) and while no cap is exceeded;
 * reading goes on only once `in` holds no complete frame. */
void serve_apply(struct serve *s)
{
	struct evbuffer *in = s->in;
	uint64_t t0 = clock_mono_ns();
	struct proto_frame f;
	bool applied = false;
	int rc;

	if (!s->bev)
		return;
	if (s->state == PEER_CLOSING) {
		/* lingering close: discard, see serve_write_cb */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	while (s->bev && (s->state == PEER_HELLO || s->state == PEER_STREAMING ||
			  s->state == PEER_SPLIT)) {
		if (serve_over_caps(s))
			return;
		/* a HASH_REQ is answered off the loop (hashjob.h): the frames
		 * after it wait, in order, for serve_hashed */
		if (s->hashing)
			break;
		if (applied && clock_mono_ns() - t0 > LIMITS_APPLY_SLICE_NS) {
			serve_reading(s, false);
			event_active(s->cont, EV_TIMEOUT, 1);
			break;
		}
		rc = proto_frame_next(in, &f);
		if (rc == 0) {
			serve_reading(s, true);
			break;
		}
		if (rc < 0) {
			unsigned char b0 = 0;

			/* 0x16 0x03: a TLS ClientHello, from a primary that has keys */
			if (s->conn_rx == 0 && evbuffer_copyout(in, &b0, 1) == 1 && b0 == 0x16)
				serve_conn_fail(s, PROTO_E_BADFRAME, "the primary speaks TLS, but "
						"%s has no keys (--psk-file or tls.peer_id)",
						s->node_name);
			else
				serve_conn_fail(s, PROTO_E_BADFRAME, "bad frame (magic, type, "
						"length or checksum) after %llu good bytes",
						(unsigned long long)s->conn_rx);
			return;
		}
		serve_on_frame(s, &f);
		applied = true;
		if (s->stall_now) {	/* stays in `in`: retried from the tick */
			s->stall_now = false;
			break;
		}
		if (s->full_since_ns && s->bev)
			serve_store_room(s);
		s->bytes_received += PROTO_HDR_LEN + f.h.len;
		s->conn_rx += PROTO_HDR_LEN + f.h.len;
		if (s->bev)
			proto_frame_consume(in, &f);
	}
	/* the time spent applying was ours, not the primary's silence */
	if (applied && s->bev)
		s->last_rx_ns = clock_mono_ns();
}

void serve_cont_cb(evutil_socket_t fd, short what, void *arg)
{
	serve_apply(arg);
}

static void serve_read_cb(struct bufferevent *bev, void *arg)
{
	struct serve *s = arg;

	s->last_rx_ns = clock_mono_ns();
	serve_apply(s);
}


/* The socket is readable: read what is there (big reads, see
 * SERVE_READ_CHUNK) into the input buffer and apply the frames. */
void serve_sock_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve *s = arg;
	struct bufferevent *bev = s->bev;
	struct evbuffer *in = s->in;
	struct evbuffer_iovec v[2];
	size_t got = 0, left, room;
	ssize_t n;
	int nv, used;

	while (got < SERVE_READ_MAX) {
		nv = evbuffer_reserve_space(in, SERVE_READ_CHUNK, v, 2);
		if (nv < 1) {
			serve_conn_fail(s, PROTO_E_APPLY, "out of memory reading from the primary");
			return;
		}
		n = readv(fd, (struct iovec *)v, nv);
		if (n <= 0) {
			int e = n < 0 ? errno : 0;

			evbuffer_commit_space(in, v, 0);
			if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR))
				break;
			if (got)	/* apply what came before the EOF/error first */
				serve_read_cb(bev, s);
			if (s->bev != bev)
				return;
			errno = e;
			serve_event_cb(bev, (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR) |
				       BEV_EVENT_READING, s);
			return;
		}
		/* commit exactly n bytes over the reserved vectors */
		left = (size_t)n;
		room = 0;
		used = 0;
		for (int i = 0; i < nv; i++) {
			room += v[i].iov_len;
			if (!left)
				continue;
			if (v[i].iov_len > left)
				v[i].iov_len = left;
			left -= v[i].iov_len;
			used++;
		}
		if (evbuffer_commit_space(in, v, used) < 0) {
			serve_conn_fail(s, PROTO_E_APPLY, "cannot buffer what the primary sent");
			return;
		}
		got += (size_t)n;
		if ((size_t)n < room)
			break;	/* drained */
	}
	if (got)
		serve_read_cb(bev, s);
}

/*
 * TLS reads. The OpenSSL bufferevent reads one record (16 KiB) per wakeup
 * into a chain of its own, so a 1 MiB DATA frame took some 64 trips
 * through the loop and lay across as many chains, which evbuffer_pullup
 * then copied once more before the block was hashed (docs/benchmarks.md,
 * "TLS"). So serve reads the SSL object itself, as it reads the plaintext
 * socket: tls_read_into decrypts into space reserved in `in`,
 * SERVE_READ_CHUNK at a time, until OpenSSL wants the socket (read-ahead
 * fills OpenSSL's buffer in large reads; the loop drains it), at most
 * SERVE_READ_MAX per wakeup. Records still in OpenSSL's buffer are not
 * seen by the poller, so stopping at the maximum, or turning reading on
 * again (serve_reading), activates the event by hand. The bufferevent
 * only writes.
 */
void serve_tls_sock_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve *s = arg;
	struct bufferevent *bev = s->bev;
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	size_t got = 0;
	char why[256];
	int rc;

	rc = tls_read_into(ssl, s->in, SERVE_READ_CHUNK, SERVE_READ_MAX, &got);
	if (got || rc == 1)
		serve_read_cb(bev, s);
	if (s->bev != bev)
		return;
	if (rc == 1 && s->reading)
		event_active(s->rev, EV_READ, 1);
	if (rc >= 0)
		return;
	if (rc == -EPIPE) {
		serve_conn_lost(s, true, "closed");
		return;
	}
	if (rc == -EPROTO)
		tls_error_string(why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", strerror(-rc));
	serve_conn_lost(s, false, why);
}

/* A PSK file that changed is read again (tls_ctx_reload): new connections
 * use its keys, and a primary whose key left the file is dropped; it
 * reconnects with a key of its own file, which is a rotation's one
 * reconnect (docs/protocol.md, "Link security"). */
void serve_tls_reload(struct serve *s)
{
	char why[600];
	int rc = tls_ctx_reload(s->o->tls, why, sizeof(why));

	if (rc < 0)
		log_warn("cannot read the key file again", "why=\"%s\"", why);
	if (rc <= 0)
		return;
	log_notice("key file changed: new connections use its keys", "read=\"%s\"", why);
	if (s->bev && s->state != PEER_CLOSING && !tls_auth_current(s->o->tls, s->peer_auth)) {
		log_notice("the primary's key is no longer in the key file; dropping its "
			   "connection", "peer=%s auth=\"%s\"", s->peer, s->peer_auth);
		serve_set_error(s, "the key of primary %s was removed from the key file",
				s->peer);
		serve_conn_free(s);
	}
}
