/*
 * mirrorsess — a mirror client served on its own thread (mirrorsess.h).
 * The thread owns its link, its receiver and what it reads; the runs of
 * frames that write whole files go to a few apply threads (tw-apply,
 * applypool.h) while it reads on; serve's loop only starts it, asks
 * whether it is done (an atomic flag) and joins it.
 * A TLS connection stays on the loop behind a relay (relay.h): OpenSSL's
 * connection object must not change threads under libevent.
 */
#include "netsync/secondary/mirrorsess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/clock.h"
#include "common/log.h"
#include "netsync/delta/blockhash.h"
#include "netsync/delta/hashcache.h"
#include "netsync/delta/inventory.h"
#include "netsync/secondary/applypool.h"
#include "netsync/secondary/peerhash.h"
#include "netsync/secondary/receiver.h"
#include "netsync/secondary/relay.h"
#include "netsync/wire/link.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

#define MS_FLUSH (1u << 20)
/* After an ERROR, what the client still sends is read and dropped for
 * at most this long (see ms_linger). */
#define MS_LINGER_MS 2000
/* A client may hash or read a large file for a while without sending. */
#define MS_TIMEOUT_MS (600 * 1000)

struct ms {
	struct link *l;
	const struct mirrorsess_opts *o;
	struct receiver *r;
	struct evbuffer *out;
	char peer[64];
	uint64_t applied, data_bytes, hashed;
	bool failed;			/* an ERROR went to the client */
	struct applypool *pool;		/* file runs applied in parallel */
};

static int ms_flush(struct ms *m)
{
	return link_send(m->l, m->out);
}

static int ms_error(struct ms *m, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ms_error(struct ms *m, uint32_t code, const char *fmt, ...)
{
	char text[PROTO_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_warn("mirror session ends with an error", "peer=%s code=%s err=\"%s\"", m->peer,
		 proto_err_name(code), text);
	proto_encode_error(m->out, code, text);
	ms_flush(m);
	m->failed = true;
	return -EPROTO;
}

/*
 * Lingering close. Closing a socket with unread input sends a RST, which
 * can overtake the ERROR just written: the client, in the middle of
 * sending, saw "Broken pipe" instead of "No space left on device". So
 * after an ERROR the sending side is shut down (the client reads the
 * ERROR, then EOF) and input is read and dropped until the client closes
 * or MS_LINGER_MS pass.
 */
static void ms_linger(struct link *l)
{
	uint64_t end = clock_mono_ns() + (uint64_t)MS_LINGER_MS * 1000000;
	char buf[65536];

	shutdown(l->fd, SHUT_WR);
	for (;;) {
		uint64_t now = clock_mono_ns();
		struct pollfd p = { .fd = l->fd, .events = POLLIN };

		if (now >= end || poll(&p, 1, (int)((end - now) / 1000000) + 1) <= 0 ||
		    recv(l->fd, buf, sizeof(buf), 0) <= 0)
			break;
	}
}

/* TREE_REQ: the entries of the subtree, sorted, then ENTRIES_END. */
static int ms_tree(struct ms *m, const struct proto_frame *f)
{
	struct proto_tree_req q;
	struct inventory inv;
	struct inventory_opts io = { .replicated_xattrs = true };
	char path[PROTO_PATH_MAX + 1];
	int rc;

	if (proto_decode_tree_req(f, &q) < 0 || path_check(q.path, true) < 0)
		return ms_error(m, PROTO_E_BADFRAME, "malformed TREE_REQ");
	snprintf(path, sizeof(path), "%s", q.path);
	io.sub = path;
	io.with_sub = (q.flags & PROTO_TREE_F_SUBTREE) && *path;
	io.hash_content = (q.flags & PROTO_TREE_F_CHECKSUM) != 0;
	rc = inventory_walk(m->o->store, &io, &inv);
	if (rc == 0 && inventory_encode_root(&inv, m->out) < 0)
		rc = -EINVAL;	/* the root's entry is always encodable */
	for (size_t i = 0; rc == 0 && i < inv.n; i++) {
		if (proto_encode_entry(m->out, &inv.e[i]) < 0)
			continue;	/* cannot be named on the wire: not in any replica */
		if (evbuffer_get_length(m->out) >= MS_FLUSH && ms_flush(m) < 0)
			rc = -EPIPE;
	}
	if (rc != -EPIPE)
		proto_encode_entries_end(m->out, rc < 0 ? 0 : inv.n, rc < 0 ? (uint32_t)-rc : 0);
	inventory_free(&inv);
	return rc == -EPIPE ? rc : ms_flush(m);
}

static int ms_hashes(struct ms *m, const struct proto_frame *f)
{
	struct proto_hash_req q;
	char path[PROTO_PATH_MAX + 1];
	uint64_t read = 0;

	if (proto_decode_hash_req(f, &q) < 0 || path_check(q.path, false) < 0)
		return ms_error(m, PROTO_E_BADFRAME, "malformed HASH_REQ");
	snprintf(path, sizeof(path), "%s", q.path);
	q.path = path;
	if (peerhash_answer(receiver_store_fd(m->r), m->o->cache, &q, m->out, &read) < 0)
		return ms_error(m, PROTO_E_APPLY, "cannot encode the hashes of '%s'", path);
	m->hashed += read;
	return evbuffer_get_length(m->out) >= MS_FLUSH ? ms_flush(m) : 0;
}

/* FILE_CHECK: the file as written now must have the client's blocks. */
static int ms_check(struct ms *m, const struct proto_frame *f)
{
	struct proto_file_check q;
	struct blockhash b;
	uint64_t read = 0;
	uint8_t d[16];
	char path[PROTO_PATH_MAX + 1];
	int rc;

	if (proto_decode_file_check(f, &q) < 0 || path_check(q.path, false) < 0)
		return ms_error(m, PROTO_E_BADFRAME, "malformed FILE_CHECK");
	snprintf(path, sizeof(path), "%s", q.path);
	rc = peerhash_blocks(receiver_store_fd(m->r), m->o->cache, path, q.block_size, true,
			     &b, &read);
	m->hashed += read;
	if (rc < 0)
		return ms_error(m, PROTO_E_APPLY, "check '%s': %s", path, strerror(-rc));
	blockhash_digest(&b, d);
	rc = b.size == q.size && memcmp(d, q.digest, 16) == 0;
	blockhash_free(&b);
	if (!rc)
		return ms_error(m, PROTO_E_APPLY, "check '%s': the content differs from the "
				"source's after the delta", path);
	return 0;
}

/* An apply error, in the words serve uses for a primary. */
static int ms_apply_failed(struct ms *m, const char *what, int rc)
{
	const char *path = receiver_failed_path(m->r);

	if (rc == -EBADMSG)
		return ms_error(m, PROTO_E_BADHASH, "%s '%s': block hash mismatch; nothing "
				"written", what, path);
	if (rc == -EINVAL || rc == -EXDEV || rc == -ELOOP)
		return ms_error(m, PROTO_E_PATH, "%s '%s': path not allowed (%s)", what, path,
				strerror(-rc));
	return ms_error(m, PROTO_E_APPLY, "%s '%s': %s", what, path, strerror(-rc));
}

/* One frame of the stream. 1 to go on, 0 when the client said goodbye,
 * -errno to end. */
static int ms_frame(struct ms *m, const struct proto_frame *f)
{
	int rc = 0;

	switch (f->h.type) {
	case PROTO_TREE_REQ:
		return ms_tree(m, f) < 0 ? -EPIPE : 1;
	case PROTO_HASH_REQ:
		return ms_hashes(m, f) < 0 ? -EPIPE : 1;
	case PROTO_FILE_CHECK:
		return ms_check(m, f) < 0 ? -EPIPE : 1;
	case PROTO_OP: {
		struct proto_op o;

		if (proto_decode_op(f, &o) < 0)
			break;
		rc = receiver_op(m->r, &o);
		return rc < 0 ? ms_apply_failed(m, proto_op_name(o.op.type), rc) : (m->applied++, 1);
	}
	case PROTO_DATA: {
		struct proto_data d;

		if (proto_decode_data(f, &d) < 0)
			break;
		rc = receiver_data(m->r, &d);
		m->data_bytes += d.len;
		return rc < 0 ? ms_apply_failed(m, "write", rc) : 1;
	}
	case PROTO_ATTR: {
		struct proto_attr a;

		if (proto_decode_attr(f, &a) < 0)
			break;
		rc = receiver_attr(m->r, &a);
		return rc < 0 ? ms_apply_failed(m, "setattr", rc) : 1;
	}
	case PROTO_PRUNE: {
		struct proto_prune p;

		if (proto_decode_prune(f, &p) < 0)
			break;
		rc = receiver_prune(m->r, &p);
		return rc < 0 ? ms_apply_failed(m, "prune", rc) : 1;
	}
	case PROTO_BATCH_END: {
		uint64_t seq;

		if (proto_decode_seq(f, &seq) < 0)
			break;
		if (syncfs(receiver_store_fd(m->r)) < 0)
			return ms_error(m, PROTO_E_APPLY, "sync of the store: %s", strerror(errno));
		proto_encode_ack(m->out, seq);
		return ms_flush(m) < 0 ? -EPIPE : 1;
	}
	case PROTO_HEARTBEAT:
		return 1;
	case PROTO_GOODBYE:
		return 0;
	default:
		return ms_error(m, PROTO_E_BADFRAME, "unexpected %s frame from a mirror client",
				proto_type_name(f->h.type));
	}
	return ms_error(m, PROTO_E_BADFRAME, "malformed %s frame", proto_type_name(f->h.type));
}

/* Waits until the apply pool applied everything offered. 0, or -EPROTO
 * after its failure went to the client. */
static int ms_drain(struct ms *m)
{
	int rc = applypool_drain(m->pool);

	if (rc < 0) {
		const char *text;
		uint32_t code = applypool_error(m->pool, &text);

		return ms_error(m, code, "%s", text);
	}
	if (rc == 1)
		receiver_forget(m->r);	/* the runs moved names */
	return 0;
}

/* A frame of a file's run goes to the apply pool; any other waits until
 * the pool has applied everything before it and is applied here, in
 * order (applypool.h). */
static int ms_dispatch(struct ms *m, const struct proto_frame *f)
{
	struct link_slab *s = link_hold(m->l);
	int rc = applypool_offer(m->pool, f, s);

	if (rc == 1)
		return 1;
	link_slab_put(s);
	/* not a run's frame (0), or a run failed (-EIO): the drain waits for
	 * the workers and tells the client a failure */
	rc = ms_drain(m);
	if (rc < 0)
		return rc;
	rc = ms_frame(m, f);
	if (f->h.type == PROTO_OP || f->h.type == PROTO_PRUNE)
		applypool_forget(m->pool);
	return rc;
}

int mirrorsess_run(struct link *l, const struct mirrorsess_opts *o)
{
	struct ms m = { .l = l, .o = o };
	uint64_t pool_ops = 0, pool_bytes = 0;
	struct proto_frame f;
	int rc;

	snprintf(m.peer, sizeof(m.peer), "%s", "mirror");
	l->timeout_ms = MS_TIMEOUT_MS;
	m.out = evbuffer_new();
	if (!m.out)
		return -ENOMEM;
	if (o->send_hello) {
		struct proto_hello h = { .version = PROTO_VERSION, .role = PROTO_ROLE_SECONDARY,
					 .name = o->name };

		proto_encode_hello(m.out, &h);
		rc = ms_flush(&m);
		if (rc == 0 && (rc = link_recv(l, &f, true)) == 1) {
			struct proto_hello ch;

			rc = f.h.type == PROTO_HELLO && proto_decode_hello(&f, &ch) == 0 &&
			     ch.role == PROTO_ROLE_MIRROR && ch.version == PROTO_VERSION ? 0 :
			     ms_error(&m, PROTO_E_ROLE, "expected a mirror client's HELLO");
		}
		if (rc < 0)
			goto out;
	}
	if (o->refuse) {
		rc = ms_error(&m, PROTO_E_ROLE, "%s", o->refuse);
		goto out;
	}
	rc = receiver_open(o->store, NULL, &m.r);
	if (rc < 0) {
		ms_error(&m, PROTO_E_APPLY, "cannot open the store: %s", strerror(-rc));
		goto out;
	}
	rc = applypool_start(o->store, &m.pool);
	if (rc < 0) {
		ms_error(&m, PROTO_E_APPLY, "cannot start a thread: %s", strerror(-rc));
		receiver_close(m.r);
		goto out;
	}
	/* a run that fails ends the wait for input: the drain tells why */
	l->wake_fd = applypool_fd(m.pool);
	for (;;) {
		/* answers wait in m.out while more requests are there; before
		 * blocking, they go and the workers start on what they have
		 * (not waited for: a drain there stalled the stream) */
		rc = link_recv(l, &f, false);
		if (rc == 0) {
			applypool_kick(m.pool);
			rc = ms_flush(&m);
		}
		if (rc == 0)
			rc = link_recv(l, &f, true);
		if (rc == -ECANCELED) {
			rc = ms_drain(&m);
			break;
		}
		if (rc == -ECONNRESET) {
			rc = 0;
			break;
		}
		if (rc < 0) {
			if (rc == -EBADMSG)
				ms_error(&m, PROTO_E_BADFRAME, "bad frame (magic, type, length or "
					 "checksum)");
			break;
		}
		rc = ms_dispatch(&m, &f);
		if (rc <= 0)
			break;
	}
	l->wake_fd = -1;
	applypool_counts(m.pool, &pool_ops, &pool_bytes);
	applypool_stop(m.pool);
	m.applied += pool_ops;
	m.data_bytes += pool_bytes;
	log_info("mirror session ended", "ops=%llu data_bytes=%llu hashed_bytes=%llu rc=%d",
		 (unsigned long long)m.applied, (unsigned long long)m.data_bytes,
		 (unsigned long long)m.hashed, rc);
	receiver_close(m.r);
	if (o->cache)
		hashcache_save(o->cache);
out:
	if (m.failed)
		ms_linger(l);
	evbuffer_free(m.out);
	return rc < 0 ? rc : 0;
}

/* ---- serve's sessions ---- */

struct mirrorsess {
	struct link l;
	struct mirrorsess_opts o;
	char *store, *refuse;
	struct relay *relay;	/* TLS: the loop's half */
	struct evbuffer *first;	/* bytes for the client before anything */
	pthread_t thr;
	atomic_bool done;
};

static void *mirrorsess_thread(void *arg)
{
	struct mirrorsess *s = arg;

	pthread_setname_np(pthread_self(), "tw-mirror");
	if (evbuffer_get_length(s->first) == 0 || link_send(&s->l, s->first) == 0)
		mirrorsess_run(&s->l, &s->o);
	shutdown(s->l.fd, SHUT_RDWR);
	atomic_store(&s->done, true);
	return NULL;
}

int mirrorsess_start(struct event_base *base, struct gate_conn *c,
		     const struct mirrorsess_opts *o, struct mirrorsess **out)
{
	struct mirrorsess *s = calloc(1, sizeof(*s));
	int fd = -1, rc = -ENOMEM;

	if (!s || link_init(&s->l, MS_TIMEOUT_MS) < 0 || !(s->first = evbuffer_new()))
		goto fail;
	s->o = *o;
	s->store = strdup(o->store);
	s->refuse = o->refuse ? strdup(o->refuse) : NULL;
	if (!s->store || (o->refuse && !s->refuse))
		goto fail;
	s->o.store = s->store;
	s->o.refuse = s->refuse;
	if (c->tls) {
		rc = relay_start(base, c->bev, c->in, &fd, &s->relay);
		c->bev = NULL;
		c->in = NULL;
		if (rc < 0)
			goto fail;
		rc = link_adopt(&s->l, fd, NULL, NULL);
	} else {
		/* plaintext: the thread takes the socket itself */
		fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			goto fail;
		}
		evbuffer_add_buffer(s->first, bufferevent_get_output(c->bev));
		bufferevent_free(c->bev);
		c->bev = NULL;
		rc = link_adopt(&s->l, fd, NULL, c->in);
		evbuffer_free(c->in);
		c->in = NULL;
	}
	if (rc < 0)
		goto fail;
	rc = -pthread_create(&s->thr, NULL, mirrorsess_thread, s);
	if (rc < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->in)
		evbuffer_free(c->in);
	c->bev = NULL;
	c->in = NULL;
	if (s) {
		link_close(&s->l);
		relay_free(s->relay);
		if (s->first)
			evbuffer_free(s->first);
		free(s->store);
		free(s->refuse);
		free(s);
	}
	return rc;
}

bool mirrorsess_done(const struct mirrorsess *m)
{
	return atomic_load(&((struct mirrorsess *)m)->done) &&
	       (!m->relay || relay_done(m->relay));
}

void mirrorsess_free(struct mirrorsess *m)
{
	if (!m)
		return;
	if (m->l.fd >= 0)
		shutdown(m->l.fd, SHUT_RDWR);
	pthread_join(m->thr, NULL);
	link_close(&m->l);
	relay_free(m->relay);
	evbuffer_free(m->first);
	free(m->store);
	free(m->refuse);
	free(m);
}
