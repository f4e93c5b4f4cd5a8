/*
 * gate — connections between accept and admission (gate.h): caps per
 * address and in total, a deadline for the TLS handshake and the HELLO
 * together, refusals logged once per address per minute. Runs on serve's
 * loop thread. Nothing here touches the store or the receiver: a refused
 * connection has had no effect.
 */
#include "netsync/secondary/gate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "common/clock.h"
#include "common/log.h"
#include "netsync/wire/tls.h"

#define GATE_LOG_HOSTS	32
#define GATE_LOG_EVERY_NS (60ull * 1000000000ull)

struct gate_wait {
	struct gate *g;
	struct bufferevent *bev;
	struct evbuffer *in;
	char peer[64];
	char host[64];		/* peer without the port: what the caps count */
	uint64_t since_ns;
	bool up;		/* TLS authenticated (or plaintext): HELLO sent */
	bool closing;		/* an ERROR is queued; freed once written */
	bool held;		/* its HELLO waits for a slot that frees soon */
};

struct gate_logged {
	char host[64];
	uint64_t last_ns;
	uint64_t suppressed;
};

struct gate {
	struct event_base *base;
	struct tls_ctx *tls;
	const struct gate_ops *ops;
	void *arg;
	struct gate_wait *w[GATE_MAX_TOTAL];
	struct gate_logged logged[GATE_LOG_HOSTS];
	uint64_t refused;
};

/* Logs a refusal of HOST at warning level, at most once a minute per host
 * (with the count of those left unsaid), so that a flood cannot fill the
 * log. */
static void gate_log(struct gate *g, const char *host, const char *peer,
		     const char *msg, const char *why)
{
	uint64_t now = clock_mono_ns();
	struct gate_logged *e = NULL, *oldest = &g->logged[0];

	g->refused++;
	for (int i = 0; i < GATE_LOG_HOSTS; i++) {
		if (strcmp(g->logged[i].host, host) == 0) {
			e = &g->logged[i];
			break;
		}
		if (g->logged[i].last_ns < oldest->last_ns)
			oldest = &g->logged[i];
	}
	if (e && now - e->last_ns < GATE_LOG_EVERY_NS) {
		e->suppressed++;
		return;
	}
	if (!e) {
		e = oldest;
		snprintf(e->host, sizeof(e->host), "%s", host);
		e->suppressed = 0;
	}
	log_warn(msg, "peer=%s err=\"%s\" not_logged_since=%llu", peer, why,
		 (unsigned long long)e->suppressed);
	e->last_ns = now;
	e->suppressed = 0;
}

static void gate_drop(struct gate_wait *w)
{
	struct gate *g = w->g;

	for (int i = 0; i < GATE_MAX_TOTAL; i++)
		if (g->w[i] == w)
			g->w[i] = NULL;
	if (w->bev)
		bufferevent_free(w->bev);	/* closes the socket (and frees SSL) */
	if (w->in)
		evbuffer_free(w->in);
	free(w);
}

/* Queues ERROR{CODE} on W (in its own framing: through TLS once it is up)
 * and frees W once it is written, or at its deadline. */
static void gate_refuse(struct gate_wait *w, uint32_t code, const char *text)
{
	if (!w->up) {
		gate_drop(w);	/* TLS not up: a plaintext frame would be noise */
		return;
	}
	proto_encode_error(bufferevent_get_output(w->bev), code, text);
	bufferevent_disable(w->bev, EV_READ);
	w->closing = true;
}

static void gate_write_cb(struct bufferevent *bev, void *arg)
{
	struct gate_wait *w = arg;

	if (w->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		gate_drop(w);
}

static void gate_send_hello(struct gate_wait *w)
{
	w->g->ops->hello(w->g->arg, bufferevent_get_output(w->bev));
	w->up = true;
}

static void gate_event_cb(struct bufferevent *bev, short what, void *arg);
static void gate_offer(struct gate_wait *w, const struct proto_frame *f, bool last);

/* The first frame must be a complete HELLO; then serve decides. */
static void gate_read_cb(struct bufferevent *bev, void *arg)
{
	struct gate_wait *w = arg;
	struct gate *g = w->g;
	struct proto_frame f;
	unsigned char b0 = 0;
	int rc;

	if (w->closing)
		return;
	if (evbuffer_add_buffer(w->in, bufferevent_get_input(bev)) < 0) {
		gate_drop(w);
		return;
	}
	rc = proto_frame_next(w->in, &f);
	if (rc == 0) {
		if (evbuffer_get_length(w->in) > GATE_HELLO_MAX) {
			gate_log(g, w->host, w->peer, "refused a connection: no HELLO in "
				 "the first bytes", "too long");
			gate_refuse(w, PROTO_E_BADFRAME, "expected HELLO");
		}
		return;
	}
	if (rc < 0 || f.h.type != PROTO_HELLO) {
		bool tls = evbuffer_copyout(w->in, &b0, 1) == 1 && b0 == 0x16;

		/* 0x16 0x03 is a TLS ClientHello: a primary that has keys */
		gate_log(g, w->host, w->peer, "refused a connection: its first frame is "
			 "not a HELLO", tls ? "it speaks TLS and this node has no keys" :
			 rc < 0 ? "bad frame" : proto_type_name(f.h.type));
		gate_refuse(w, PROTO_E_BADFRAME, tls ? "the primary speaks TLS, but this "
			    "node has no keys (--psk-file or tls.peer_id)" : "expected HELLO");
		return;
	}
	gate_offer(w, &f, false);
}

/*
 * Offers W's HELLO F to serve. Taken: W goes. Busy: refused, unless serve
 * says the slot frees soon (-EAGAIN: a mirror session that is ending) and
 * W is not past its deadline (LAST): then W is held, reading nothing, and
 * offered again by gate_tick.
 */
static void gate_offer(struct gate_wait *w, const struct proto_frame *f, bool last)
{
	struct gate *g = w->g;
	struct gate_conn c = { 0 };
	int rc;

	c.bev = w->bev;
	c.in = w->in;
	c.fd = bufferevent_getfd(w->bev);
	c.tls = g->tls != NULL;
	snprintf(c.peer, sizeof(c.peer), "%s", w->peer);
	if (c.tls)
		tls_peer_describe(bufferevent_openssl_get_ssl(w->bev), c.auth, sizeof(c.auth));
	bufferevent_disable(w->bev, EV_READ);
	bufferevent_setcb(w->bev, NULL, NULL, NULL, NULL);
	rc = g->ops->admit(g->arg, &c, f);
	if (rc == 0) {
		w->bev = NULL;	/* serve's now */
		w->in = NULL;
		gate_drop(w);
		return;
	}
	bufferevent_setcb(w->bev, gate_read_cb, gate_write_cb, gate_event_cb, w);
	if (rc == -EAGAIN && !last) {
		w->held = true;
		return;
	}
	w->held = false;
	gate_log(g, w->host, w->peer, "refused a connection: the slot is taken",
		 "busy: another primary or mirror client is connected");
	gate_refuse(w, PROTO_E_BUSY, "busy: another primary or mirror client is connected");
}

static void gate_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct gate_wait *w = arg;
	struct gate *g = w->g;
	unsigned long e, first = 0;
	char why[256];

	if (what & BEV_EVENT_CONNECTED) {
		char auth[128];

		tls_peer_describe(bufferevent_openssl_get_ssl(bev), auth, sizeof(auth));
		log_info("TLS handshake done", "peer=%s auth=\"%s\"", w->peer, auth);
		gate_send_hello(w);
		return;
	}
	if (w->closing) {
		gate_drop(w);
		return;
	}
	while (g->tls && (e = bufferevent_get_openssl_error(bev)) != 0)
		if (!first)
			first = e;
	if (first)
		ERR_error_string_n(first, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", (what & BEV_EVENT_EOF) ? "closed" :
			 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	if (g->tls && !w->up)
		gate_log(g, w->host, w->peer, "refused a connection: TLS handshake failed "
			 "(wrong key, unknown id, or a primary without keys?)", why);
	else
		gate_log(g, w->host, w->peer, "refused a connection: it ended before its "
			 "HELLO", why);
	gate_drop(w);
}

static void gate_host_of(const char *peer, char *host, size_t len)
{
	const char *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);

	snprintf(host, len, "%.*s", (int)n, peer);
}

void gate_accept(struct gate *g, evutil_socket_t fd, const char *who)
{
	struct gate_wait *w;
	char host[64];
	int slot = -1, same = 0;
	SSL *ssl = NULL;

	gate_host_of(who, host, sizeof(host));
	for (int i = 0; i < GATE_MAX_TOTAL; i++) {
		if (!g->w[i])
			slot = slot < 0 ? i : slot;
		else if (strcmp(g->w[i]->host, host) == 0)
			same++;
	}
	if (same >= GATE_MAX_PER_ADDR) {
		gate_log(g, host, who, "refused a connection: too many unauthenticated "
			 "connections from its address", "per-address cap");
		evutil_closesocket(fd);
		return;
	}
	if (slot < 0) {
		/* Full: the oldest waiter goes, not the newcomer. A real primary
		 * passes the gate in one round trip or two, so a flood has to
		 * outpace that to keep it out; refusing newcomers instead would
		 * let a flood that arrived first hold every place. */
		struct gate_wait *old = NULL;

		for (int i = 0; i < GATE_MAX_TOTAL; i++)
			if (!old || g->w[i]->since_ns < old->since_ns) {
				old = g->w[i];
				slot = i;
			}
		gate_log(g, old->host, old->peer, "refused a connection: the oldest of too "
			 "many unauthenticated connections", "all places taken");
		gate_drop(old);
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		evutil_closesocket(fd);
		return;
	}
	w->g = g;
	snprintf(w->peer, sizeof(w->peer), "%s", who);
	snprintf(w->host, sizeof(w->host), "%s", host);
	w->since_ns = clock_mono_ns();
	w->in = evbuffer_new();
	if (g->tls) {
		ssl = tls_ssl_new(g->tls);
		w->bev = ssl ? bufferevent_openssl_socket_new(g->base, fd, ssl,
							      BUFFEREVENT_SSL_ACCEPTING,
							      BEV_OPT_CLOSE_ON_FREE) : NULL;
		if (w->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(w->bev, 1);
	} else {
		w->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
	}
	if (!w->bev || !w->in) {
		if (!w->bev) {
			SSL_free(ssl);
			evutil_closesocket(fd);
		}
		gate_drop(w);
		log_error("out of memory accepting a connection", "peer=%s", who);
		return;
	}
	g->w[slot] = w;
	bufferevent_setcb(w->bev, gate_read_cb, gate_write_cb, gate_event_cb, w);
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
	if (!g->tls)
		gate_send_hello(w);
}

void gate_tick(struct gate *g, uint64_t now_ns)
{
	for (int i = 0; i < GATE_MAX_TOTAL; i++) {
		struct gate_wait *w = g->w[i];

		if (w && w->held && !w->closing) {
			struct proto_frame f;

			if (proto_frame_next(w->in, &f) == 1)
				gate_offer(w, &f, now_ns - w->since_ns > GATE_DEADLINE_NS);
			continue;
		}
		if (!w || now_ns - w->since_ns <= GATE_DEADLINE_NS)
			continue;
		if (!w->closing)
			gate_log(g, w->host, w->peer, "refused a connection: no TLS handshake "
				 "and HELLO in time", g->tls && !w->up ?
				 "no handshake (a primary without keys?)" : "no HELLO");
		gate_drop(w);
	}
}

unsigned gate_waiting(const struct gate *g)
{
	unsigned n = 0;

	for (int i = 0; g && i < GATE_MAX_TOTAL; i++)
		n += g->w[i] != NULL;
	return n;
}

uint64_t gate_refused(const struct gate *g)
{
	return g ? g->refused : 0;
}

int gate_new(struct event_base *base, struct tls_ctx *tls, const struct gate_ops *ops,
	     void *arg, struct gate **out)
{
	struct gate *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->base = base;
	g->tls = tls;
	g->ops = ops;
	g->arg = arg;
	*out = g;
	return 0;
}

void gate_free(struct gate *g)
{
	if (!g)
		return;
	for (int i = 0; i < GATE_MAX_TOTAL; i++)
		if (g->w[i])
			gate_drop(g->w[i]);
	free(g);
}
