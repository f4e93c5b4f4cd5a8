/*
 * link — blocking framed IO over a non-blocking socket (link.h). Every
 * wait is a poll() with the link's timeout; a send that cannot progress
 * reads what the peer sends meanwhile (both ends may be busy sending:
 * hash lists one way, data the other). Runs on the thread that owns the
 * link; touches nothing else.
 */
#include "netsync/wire/link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "common/clock.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/tls.h"

/* Input slabs (link.h): this big unless a frame needs more; one read
 * takes at most LINK_READ_MAX and is given at least LINK_READ_MIN of room. */
#define LINK_SLAB (4u << 20)
#define LINK_READ_MAX (1u << 20)
#define LINK_READ_MIN (64u << 10)
/* One send takes at most this much (the rate limit's step), in at most
 * LINK_IOV pieces. */
#define LINK_SEND_MAX (1u << 20)
#define LINK_IOV 64
/* While a send waits, at most this much input is buffered; then only
 * the send is waited for (the peer reads while it sends, see link.h). */
#define LINK_IN_MAX (64u << 20)

/*
 * Slabs of LINK_SLAB bytes are kept for reuse, process-wide (at most
 * LINK_SLABS_KEPT): a fresh one faults its 1,024 pages in, which on a VM
 * with free page reporting costs about what copying them does, and a link
 * whose frames other threads hold (a mirror session's apply pool) starts a
 * new slab every few frames. Measured: serve took 60,000-98,000 page
 * faults per mirror of 1.57 GB without the cache (~1,000 before the pool).
 */
#define LINK_SLABS_KEPT 16

struct link_slab {
	atomic_uint ref;	/* the link's own + link_hold's */
	size_t cap, len;	/* allocated, filled */
	uint8_t data[];
};

static pthread_mutex_t link_kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct link_slab *link_kept[LINK_SLABS_KEPT];	/* link_kept_mu */
static int link_n_kept;					/* link_kept_mu */

static struct link_slab *link_slab_new(size_t cap)
{
	struct link_slab *s = NULL;

	if (cap == LINK_SLAB) {
		pthread_mutex_lock(&link_kept_mu);
		if (link_n_kept)
			s = link_kept[--link_n_kept];
		pthread_mutex_unlock(&link_kept_mu);
	}
	if (!s && !(s = malloc(sizeof(*s) + cap)))
		return NULL;
	atomic_init(&s->ref, 1);
	s->cap = cap;
	s->len = 0;
	return s;
}

void link_slab_put(struct link_slab *s)
{
	if (!s || atomic_fetch_sub(&s->ref, 1) != 1)
		return;
	if (s->cap == LINK_SLAB) {
		pthread_mutex_lock(&link_kept_mu);
		if (link_n_kept < LINK_SLABS_KEPT) {
			link_kept[link_n_kept++] = s;
			s = NULL;
		}
		pthread_mutex_unlock(&link_kept_mu);
	}
	free(s);
}

struct link_slab *link_slab_get(struct link_slab *s)
{
	atomic_fetch_add(&s->ref, 1);
	return s;
}

struct link_slab *link_hold(struct link *l)
{
	if (!l->have || !l->slab)
		return NULL;
	atomic_fetch_add(&l->slab->ref, 1);
	return l->slab;
}

/* Bytes received and not consumed. */
static size_t link_pending(const struct link *l)
{
	return l->slab ? l->slab->len - l->head : 0;
}

/* Drops the frame link_recv returned last. */
static void link_consume(struct link *l)
{
	if (l->have)
		l->head += PROTO_HDR_LEN + (size_t)l->cur.h.len;
	l->have = false;
}

/*
 * Makes room for the next read: the frame that starts at `head` must fit
 * whole after it (its length is known once its header is in), and a read
 * gets at least LINK_READ_MIN. The bytes of that frame read so far move
 * to the front of the slab (when nobody holds it) or to a new slab; whole
 * frames handed out never move. 0 or -ENOMEM.
 */
static int link_room(struct link *l)
{
	struct link_slab *s = l->slab, *n;
	size_t part = link_pending(l), need = part + LINK_READ_MIN, cap;
	struct proto_hdr h;

	if (part >= PROTO_HDR_LEN && proto_hdr_parse(s->data + l->head, &h) == 0 &&
	    PROTO_HDR_LEN + (size_t)h.len > part)
		need = PROTO_HDR_LEN + (size_t)h.len;
	if (s && l->head + need <= s->cap)
		return 0;
	/* ref 1: only this thread could add a holder, so nobody else reads it */
	if (s && atomic_load(&s->ref) == 1 && need <= s->cap) {
		memmove(s->data, s->data + l->head, part);
		s->len = part;
		l->head = 0;
		return 0;
	}
	cap = need > LINK_SLAB ? need : LINK_SLAB;
	n = link_slab_new(cap);
	if (!n)
		return -ENOMEM;
	if (part)
		memcpy(n->data, s->data + l->head, part);
	n->len = part;
	link_slab_put(s);
	l->slab = n;
	l->head = 0;
	return 0;
}

int link_init(struct link *l, int timeout_ms)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->wake_fd = -1;
	l->timeout_ms = timeout_ms;
	return 0;
}

static void link_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int link_adopt(struct link *l, int fd, SSL *ssl, struct evbuffer *in)
{
	l->fd = fd;
	l->ssl = ssl;
	link_nonblock(fd);
	if (ssl)
		SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
			     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (in && evbuffer_get_length(in)) {
		size_t n = evbuffer_get_length(in);

		l->slab = link_slab_new(n + LINK_SLAB);
		if (!l->slab)
			return -ENOMEM;
		evbuffer_remove(in, l->slab->data, n);
		l->slab->len = n;
		l->head = 0;
	}
	return 0;
}

int link_connect(struct link *l, const char *hostport, struct tls_ctx *tls, char *why,
		 size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int gai = 0, rc;

	rc = addr_resolve(hostport, 0, &ss, &sl, &gai);
	if (rc < 0) {
		snprintf(why, len, "cannot resolve %s", hostport);
		return -ENOENT;
	}
	if (!tls && !addr_is_loopback((struct sockaddr *)&ss)) {
		snprintf(why, len, "%s is not a loopback address and the link has no keys "
			 "(--psk-file)", hostport);
		return -EPERM;
	}
	l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || connect(l->fd, (struct sockaddr *)&ss, sl) < 0) {
		rc = -errno;
		snprintf(why, len, "cannot connect to %s: %s", hostport, strerror(-rc));
		return rc;
	}
	setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (tls) {
		char err[160];

		/* the handshake blocks (bounded by the peer's own deadline) */
		l->ssl = tls_ssl_new(tls);
		if (!l->ssl || !SSL_set_fd(l->ssl, l->fd) || SSL_connect(l->ssl) != 1) {
			snprintf(why, len, "TLS handshake with %s failed: %s (the same key on "
				 "both nodes?)", hostport, tls_error_string(err, sizeof(err)));
			return -EACCES;
		}
	}
	return link_adopt(l, l->fd, l->ssl, NULL);
}

/* One read into the slab: bytes read (> 0), 0 when nothing is there now,
 * -ECONNRESET at the end of the stream, or -errno. */
static int link_read_some(struct link *l)
{
	uint8_t *at;
	size_t room;
	int n, rc = link_room(l);

	if (rc < 0)
		return rc;
	at = l->slab->data + l->slab->len;
	room = l->slab->cap - l->slab->len;
	if (room > LINK_READ_MAX)
		room = LINK_READ_MAX;
	if (l->ssl) {
		n = SSL_read(l->ssl, at, (int)room);
		if (n <= 0) {
			int e = SSL_get_error(l->ssl, n);

			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			return e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && n == 0) ?
			       -ECONNRESET : -EPROTO;
		}
	} else {
		ssize_t r = recv(l->fd, at, room, 0);

		if (r <= 0) {
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return 0;
			return r == 0 ? -ECONNRESET : -errno;
		}
		n = (int)r;
	}
	l->slab->len += (size_t)n;
	l->rx_bytes += (uint64_t)n;
	return n;
}

/* True if an ERROR is among the whole frames received and not consumed:
 * the peer failed and stopped reading, so a send need not go on (its
 * lingering close discards what still comes). */
static bool link_error_waiting(struct link *l)
{
	size_t at = l->head;
	struct proto_frame f;

	while (l->slab && at < l->slab->len &&
	       proto_frame_parse(l->slab->data + at, l->slab->len - at, &f) == 1) {
		if (f.h.type == PROTO_ERROR)
			return true;
		at += PROTO_HDR_LEN + (size_t)f.h.len;
	}
	return false;
}

/* Waits up to the timeout for EVENTS; 0, or -ETIMEDOUT. */
static int link_wait(struct link *l, short events, int ms)
{
	struct pollfd p[2] = { { .fd = l->fd, .events = events },
			       { .fd = l->wake_fd, .events = POLLIN } };
	int r;

	do {
		r = poll(p, l->wake_fd >= 0 ? 2 : 1, ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r > 0 && l->wake_fd >= 0 && (p[1].revents & POLLIN))
		return -ECANCELED;
	return r == 0 ? -ETIMEDOUT : 0;
}

void link_rate_restart(struct link *l)
{
	l->t0_ns = 0;
	l->tx_base = l->tx_bytes;
}

/* The rate limit: sleeps (reading what arrives) until sending N more
 * bytes keeps the average since the first send (or link_rate_restart) at
 * or below bwlimit (the bytes about to go count: the last send of a run
 * must wait too). */
static int link_throttle(struct link *l, size_t n)
{
	uint64_t now = clock_mono_ns(), due;

	if (!l->bwlimit)
		return 0;
	if (!l->t0_ns)
		l->t0_ns = now;
	due = l->t0_ns + (uint64_t)((double)(l->tx_bytes - l->tx_base + n) * 1e9 /
				    (double)l->bwlimit);
	while (due > now) {
		int ms = (int)((due - now) / 1000000) + 1, rc;

		rc = link_wait(l, POLLIN, ms);
		if (rc == 0 && link_pending(l) < LINK_IN_MAX &&
		    (rc = link_read_some(l)) < 0)
			return rc;
		if (link_error_waiting(l))
			return -ECONNABORTED;
		now = clock_mono_ns();
	}
	return 0;
}

/* One sendmsg of the first LINK_SEND_MAX bytes of OUT, chain by chain
 * (a frame's header, its block by reference, the next small frames): one
 * call where a send per chain cost three per small file. */
static ssize_t link_sendv(struct link *l, struct evbuffer *out)
{
	struct evbuffer_iovec v[LINK_IOV];
	struct iovec iov[LINK_IOV];
	struct msghdr mh = { .msg_iov = iov };
	size_t total = 0;
	int n = evbuffer_peek(out, LINK_SEND_MAX, NULL, v, LINK_IOV);

	if (n > LINK_IOV)
		n = LINK_IOV;
	for (int i = 0; i < n && total < LINK_SEND_MAX; i++) {
		size_t len = v[i].iov_len;

		if (len > LINK_SEND_MAX - total)
			len = LINK_SEND_MAX - total;
		iov[mh.msg_iovlen].iov_base = v[i].iov_base;
		iov[mh.msg_iovlen++].iov_len = len;
		total += len;
	}
	return sendmsg(l->fd, &mh, MSG_NOSIGNAL);
}

int link_send(struct link *l, struct evbuffer *out)
{
	link_consume(l);
	while (evbuffer_get_length(out)) {
		size_t n = evbuffer_get_contiguous_space(out);
		int k, rc;

		if (n > LINK_SEND_MAX)
			n = LINK_SEND_MAX;
		rc = link_throttle(l, l->ssl ? n : (evbuffer_get_length(out) < LINK_SEND_MAX ?
						    evbuffer_get_length(out) : LINK_SEND_MAX));
		if (rc < 0)
			return rc;
		if (l->ssl) {
			k = SSL_write(l->ssl, evbuffer_pullup(out, (ev_ssize_t)n), (int)n);
			if (k <= 0) {
				int e = SSL_get_error(l->ssl, k);

				if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
					return -EPIPE;
				k = 0;
			}
		} else {
			ssize_t r = link_sendv(l, out);

			if (r < 0 && errno != EAGAIN && errno != EINTR)
				return -errno;
			k = r < 0 ? 0 : (int)r;
		}
		if (k > 0) {
			evbuffer_drain(out, (size_t)k);
			l->tx_bytes += (uint64_t)k;
			continue;
		}
		/* full: read what the peer sends while we wait to write */
		{
			struct pollfd p = { .fd = l->fd, .events = POLLOUT };
			int r;

			if (link_pending(l) < LINK_IN_MAX)
				p.events |= POLLIN;
			do {
				r = poll(&p, 1, l->timeout_ms);
			} while (r < 0 && errno == EINTR);
			if (r == 0)
				return -ETIMEDOUT;
			if (r < 0)
				return -errno;
			if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && (p.events & POLLIN)) {
				rc = link_read_some(l);
				if (rc < 0 && rc != -ECONNRESET)
					return rc;
				if (link_error_waiting(l))
					return -ECONNABORTED;
			}
		}
	}
	return 0;
}

int link_recv(struct link *l, struct proto_frame *f, bool wait)
{
	link_consume(l);
	for (;;) {
		size_t part = link_pending(l);
		int rc = part ? proto_frame_parse(l->slab->data + l->head, part, &l->cur) : 0;

		if (rc == 1) {
			l->have = true;
			*f = l->cur;
			return 1;
		}
		if (rc < 0)
			return -EBADMSG;
		rc = link_read_some(l);
		if (rc > 0)
			continue;
		if (rc < 0)
			return rc;
		/* TLS may hold decrypted bytes that poll cannot see */
		if (l->ssl && SSL_pending(l->ssl) > 0)
			continue;
		if (!wait)
			return 0;
		rc = link_wait(l, POLLIN, l->timeout_ms);
		if (rc < 0)
			return rc;
	}
}

int link_hello(struct link *l, const struct proto_hello *ours, struct proto_hello *peer,
	       char *why, size_t len)
{
	struct evbuffer *out = evbuffer_new();
	struct proto_frame f;
	struct proto_error pe;
	int rc;

	if (!out)
		return -ENOMEM;
	rc = proto_encode_hello(out, ours);
	if (rc == 0)
		rc = link_send(l, out);
	evbuffer_free(out);
	if (rc < 0) {
		snprintf(why, len, "cannot send HELLO: %s", strerror(-rc));
		return rc;
	}
	rc = link_recv(l, &f, true);
	if (rc < 0) {
		snprintf(why, len, "no HELLO from the peer: %s", rc == -EBADMSG ?
			 "it is not a twinfs serve (bad frame)" : strerror(-rc));
		return rc == -EBADMSG ? -EPROTO : rc;
	}
	if (f.h.type == PROTO_ERROR && proto_decode_error(&f, &pe) == 0) {
		snprintf(why, len, "the peer refused: %s", pe.text);
		return -ECONNREFUSED;
	}
	if (f.h.type != PROTO_HELLO || proto_decode_hello(&f, peer) < 0 ||
	    peer->role != PROTO_ROLE_SECONDARY) {
		snprintf(why, len, "the peer is not a twinfs serve");
		return -EPROTO;
	}
	peer->name = NULL;
	if (peer->version != PROTO_VERSION) {
		snprintf(why, len, "the peer speaks protocol %u, this node %u", peer->version,
			 PROTO_VERSION);
		return -EPROTO;
	}
	return 0;
}

void link_close(struct link *l)
{
	if (l->ssl) {
		SSL_shutdown(l->ssl);
		SSL_free(l->ssl);
		l->ssl = NULL;
	}
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	link_slab_put(l->slab);
	l->slab = NULL;
	l->head = 0;
	l->have = false;
}
