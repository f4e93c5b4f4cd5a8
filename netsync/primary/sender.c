/*
 * sender — streams the journal to the peer over one TCP connection.
 * Owns the connection (a bufferevent), the batches in flight and the buffer
 * pool for file data. Runs only on the primary thread's event_base; it
 * touches the journal through netsync/journal.h (thread-safe) and never
 * blocks: connects, reads and writes are all driven by the loop.
 */
#include "netsync/primary/sender.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <xxhash.h>

#include "common/clock.h"
#include "common/log.h"
#include "conf/conf.h"
#include "journal/journal.h"
#include "netsync/roles/state.h"
#include "netsync/wire/proto.h"
#include "netsync/primary/sentmap.h"
#include "netsync/primary/treewalk.h"

/*
 * Flow control — why three limits and not one.
 *
 * The sender never waits for a round trip per file or per block: it keeps
 * taking batches and putting frames on the wire while two things hold:
 *   - the bufferevent's output buffer holds less than OUT_HIGH_WM bytes
 *     (more would only pile up in our memory, the socket is the bottleneck;
 *     the write callback fires when it drains below OUT_LOW_WM and we
 *     continue where we stopped), and fewer than POOL_MAX data blocks
 *     are lent to it (small files make small blocks), and
 *   - less than WINDOW_BYTES of file data is unacknowledged (the peer
 *     applies and syncs in batches; the window lets many batches be in
 *     flight so that the peer's fsync of batch N overlaps the transfer of
 *     batch N+1, yet bounds what must be re-sent after a disconnect).
 * Within a batch, data is produced block by block from a cursor (file,
 * range, offset), so a 10 GiB batch costs no more memory than a small one:
 * at most OUT_HIGH_WM plus one block of buffers exist at any time. Each
 * block is pread into a pooled buffer once, hashed once with XXH3, and
 * handed to the output evbuffer by reference; the buffer returns to the
 * pool when libevent has written it to the socket.
 */
#define BLOCK_SIZE	PROTO_BLOCK_SIZE
#define OUT_HIGH_WM	(8u << 20)
#define OUT_LOW_WM	(4u << 20)
#define WINDOW_BYTES	(64ull << 20)
#define SEND_MAX_WRITE	(4u << 20)
/* Blocks lent to the output at once, and kept for reuse: a small file's
 * block is small, so OUT_HIGH_WM alone let hundreds be out, and the pool
 * freed and malloc'd them again and again; each fresh block faulted its
 * pages in during pread, which was about a fifth of tw-send's time while
 * 10,000 small files were copied into the mount (perf, 2-CPU PVM guest). */
#define POOL_MAX	64
#define BACKOFF_MIN_MS	200
#define BACKOFF_MAX_MS	5000
#define CONNECT_TIMEOUT_S 5
#define RATE_SLOTS	5
/* At most one journal_take_batch per interval: each take appends a BATCH
 * record and waits for a group commit, so a stream of small changes
 * should make batches, not one take per create. */
#define TAKE_INTERVAL_S	0.02
/*
 * At most this many batches unacknowledged unless someone waits for the
 * peer (a sync-mode fsync, `twinfs sync`). Why: every batch costs a fixed
 * set of synchronous disk writes on both nodes (the BATCH record's group
 * commit and the ack file here; a syncfs or fsyncs plus STATE/applied on
 * the peer), whatever its size. Taking one every TAKE_INTERVAL_S while a
 * copy of 10,000 small files runs made ~50 batches/s; measured with perf
 * trace -s on the mount (10,000 small files, 499 MB): 1138 ack-file
 * fsyncs and 3055 journal fdatasyncs in 25 s, and cp spent 42 s of its
 * 64 s in read() of its source, queued behind those flushes on the disk
 * both nodes share. Holding the next take until an ack arrives makes
 * the batch size follow the peer's sync time instead (self-clocking, as
 * TCP's Nagle/delayed-ack pairing): a slow sync yields one large batch,
 * not many small ones. Two, not one: while the peer syncs batch N it
 * already applies N+1, so its apply and its sync still overlap. Waiters
 * bypass the hold, so sync-mode latency is unchanged.
 * On loopback the peer acked each small batch within the 20 ms anyway, so
 * the hold alone changed nothing (610 vs 618 batches): a stream that is
 * busy (a take less than TAKE_BUSY_AFTER_S ago) is also taken at most
 * every TAKE_BUSY_INTERVAL_S. The first change after a quiet spell still
 * goes out after TAKE_INTERVAL_S, so async lag stays ~20 ms for sparse
 * changes and at most ~250 ms more during a bulk copy. Measured, same
 * copy: 60-72 batches, ~150 fsyncs and ~60 syncfs instead of ~4000 and
 * ~330 on the two nodes together.
 */
#define TAKE_AHEAD	2
#define TAKE_BUSY_AFTER_S	0.5
#define TAKE_BUSY_INTERVAL_S	0.25
/* A subtree walk yields to the event loop after this many entries per
 * pump (each costs a readdir step and an lstat), so a baseline of a big
 * tree of small files does not hold the loop (ACKs, heartbeats, status)
 * for seconds; it continues from the write callback. */
#define WALK_STEPS_PER_PUMP 1024
/*
 * Sends of files of at least HELD_MIN_SIZE skip the blocks the peer holds
 * (netsync/sentmap.c); smaller files cost little to send again and would
 * only crowd the map. It pays for files written through passthrough,
 * which are marked from offset 0 to their end each time they change.
 * Skipping puts nothing on the wire, so a pump that has skipped
 * HELD_PER_PUMP bytes (read and hashed them) yields to the loop (ACKs,
 * heartbeats, status) and continues from cont_ev.
 */
#define HELD_MIN_SIZE	(4u << 20)
#define HELD_PER_PUMP	(64u << 20)

/* A batch sent (or being sent) and not yet acknowledged. */
struct inflight {
	struct journal_batch *b;
	uint64_t data_bytes;	/* data bytes sent for it so far */
	struct inflight *next;
};

/* Where streaming of the current batch stands. */
struct cursor {
	struct inflight *cur;	/* batch being streamed, NULL: take one */
	size_t rec;		/* next record to send */
	size_t file;		/* current file */
	size_t range;		/* current range of that file */
	uint64_t off;		/* next offset within that range */
	int fd;			/* readable fd of the current file, -1: none */
	bool own_fd;		/* fd was opened here (close it) */
	struct stat st;		/* fstat at file start (size bound, ATTR) */
	bool held;		/* this file's send consults s->held */
	/* Paths whose whole state is sent after the batch's dirty files (or,
	 * if the batch walks subtrees, before the walks): NEEDS_SCAN records, and every path named by a replayed batch when
	 * the peer said its last apply was interrupted (HELLO_F_DIRTY). */
	struct journal_dirty *repair;
	size_t n_repair, cap_repair;
	/* Subtrees whose whole current state is sent before the batch's
	 * dirty files (see "Baseline" below): the whole store for a baseline batch, a
	 * directory for a NEEDS_SCAN record naming one. */
	char **walk_roots;
	size_t n_roots, cap_roots, next_root;
	struct treewalk *walk;	/* the walk in progress, NULL: none */
	/* The directories the walk is in, innermost last, each with the
	 * names found in it so far, for the PRUNE sent when the walk leaves
	 * it (see "Baseline" below). */
	struct walk_dir {
		char *path;
		char *names;	/* NUL-terminated names back to back */
		size_t len, cap;
	} *dirs;
	size_t n_dirs, cap_dirs;
	/* A baseline batch: its own records and files are covered by the
	 * walk of the whole store and are not sent. */
	bool baseline;
};

struct pool_buf {
	struct pool_buf *next;
};

struct sender {
	struct event_base *base;
	struct journal *j;
	char *peer;
	char *state_dir;
	char *store_dir;
	bool insecure;
	uint32_t heartbeat_s;
	const atomic_int *waiters;
	int store_fd;

	enum peer_state state;
	struct bufferevent *bev;
	struct event *retry_ev;
	struct event *take_ev;	/* next journal_take_batch allowed */
	double last_take;	/* clock_mono_s() of the last take */
	uint32_t backoff_ms;
	double state_since;	/* clock_mono_s() of the last transition */
	double last_rx, last_tx;

	struct state_node id;
	char name[64];		/* host name, sent in HELLO */
	uint64_t peer_generation;
	/* The peer was interrupted mid-apply: records up to this seq are
	 * replayed with the whole state of every path they name. */
	uint64_t repair_until;
	uint64_t ack_pending;	/* highest ACK seen in this read, not yet recorded */

	/* Unacked batches, oldest first; the cursor's batch is the tail. */
	struct inflight *head, *tail;
	uint64_t inflight_bytes;
	uint64_t inflight_batches;
	uint64_t inflight_files;	/* files of those batches: an fd each */
	struct cursor c;

	struct pool *pool;
	/* What the peer holds of large files sent, and whose it is. */
	struct sentmap *held;
	uint8_t held_node[16];
	uint64_t held_generation;
	uint64_t bytes_held;	/* data not re-sent because the peer held it */
	int64_t held_budget;	/* bytes this pump may still skip */
	struct event *cont_ev;	/* continue a pump that yielded */

	uint64_t bytes_sent;
	uint64_t rate_slot[RATE_SLOTS];
	uint64_t rate_mark;	/* bytes_sent at the last tick */
	int rate_i;
	uint64_t reconnects;
	char last_error[256];
	bool pumping;		/* re-entrancy guard for sender_pump */

	/* Baseline (full-state send), see "Baseline" below. */
	bool baseline_pending;	/* the next batch taken is a baseline */
	bool resync;		/* a baseline is sent and not yet acked */
	uint64_t baseline_end;	/* its batch's end seq (0: not taken yet) */
	double baseline_t0;
	uint64_t resync_files, resync_bytes;
	int walk_budget;	/* walk steps left in this pump */
	/* The journal head when the last walk ended: records up to it ran
	 * concurrently with the walk (0: none unacked). */
	uint64_t walk_window_end;
	bool rebaseline;	/* send a baseline on the next HELLO */
};

static const char *const peer_state_names[] = {
	[PEER_IDLE] = "idle",
	[PEER_BACKOFF] = "backoff",
	[PEER_CONNECTING] = "connecting",
	[PEER_HELLO] = "hello",
	[PEER_STREAMING] = "streaming",
	[PEER_REFUSED] = "refused",
};

const char *peer_state_name(enum peer_state st)
{
	if ((size_t)st < sizeof(peer_state_names) / sizeof(peer_state_names[0]))
		return peer_state_names[st];
	return "?";
}

static void sender_set_state(struct sender *s, enum peer_state st, const char *why)
{
	if (s->state == st)
		return;
	log_info("peer state change", "peer=%s from=%s to=%s why=\"%s\"",
		 s->peer ? s->peer : "-", peer_state_name(s->state),
		 peer_state_name(st), why);
	s->state = st;
	s->state_since = clock_mono_s();
}

static void sender_set_error(struct sender *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sender_set_error(struct sender *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->last_error, sizeof(s->last_error), fmt, ap);
	va_end(ap);
}

/* ---- data buffer pool (loop thread only) ----
 * Blocks handed to libevent by reference come back through pool_put_cb
 * when written, possibly after the sender is gone (libevent finalizes a
 * freed bufferevent on a later loop pass), so the pool is its own object,
 * freed by whichever of sender_free and the last returned block is last. */

struct pool {
	struct pool_buf *free_list;
	int n_free;
	int outstanding;	/* blocks lent to evbuffers */
	bool closed;		/* the sender is gone */
};

static void *pool_get(struct pool *p)
{
	struct pool_buf *b = p->free_list;

	if (b) {
		p->free_list = b->next;
		p->n_free--;
	} else {
		b = malloc(BLOCK_SIZE);
		if (!b)
			return NULL;
	}
	p->outstanding++;
	return b;
}

static void pool_destroy(struct pool *p)
{
	struct pool_buf *b;

	while ((b = p->free_list)) {
		p->free_list = b->next;
		free(b);
	}
	free(p);
}

static void pool_put_cb(const void *data, size_t len, void *arg)
{
	struct pool *p = arg;
	struct pool_buf *b = (struct pool_buf *)data;

	p->outstanding--;
	if (p->closed || p->n_free >= POOL_MAX) {
		free(b);
	} else {
		b->next = p->free_list;
		p->free_list = b;
		p->n_free++;
	}
	if (p->closed && p->outstanding == 0)
		pool_destroy(p);
}

static void pool_close(struct pool *p)
{
	p->closed = true;
	if (p->outstanding == 0)
		pool_destroy(p);
}

/* ---- cursor ---- */

static void cursor_close_file(struct cursor *c)
{
	if (c->own_fd && c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->own_fd = false;
}

/*
 * The number of the batch's own dirty files the cursor sends now. Order of
 * a batch's data: the repairs its records asked for, then the subtree
 * walks (each file's content as a repair, one at a time), then the batch's
 * dirty files. The walks go first because a dirty file may lie in a
 * directory that only a walk creates on the peer (NEEDS_SCAN of its
 * parent); a baseline's own dirty files are covered by its walk.
 */
static size_t cursor_n_files(const struct cursor *c)
{
	if (c->baseline || c->walk || c->next_root < c->n_roots)
		return 0;
	return c->cur->b->n_files;
}

/* Every repair is sent: forget them (a walk adds one per file, so the list
 * must not grow with the tree). */
static void cursor_clear_repairs(struct cursor *c)
{
	for (size_t i = 0; i < c->n_repair; i++) {
		free(c->repair[i].path);
		if (c->repair[i].fd >= 0)
			close(c->repair[i].fd);
	}
	c->n_repair = 0;
	c->file = cursor_n_files(c);
}

/* Forgets the walk's directories down to N. */
static void cursor_pop_dirs(struct cursor *c, size_t n)
{
	while (c->n_dirs > n) {
		struct walk_dir *d = &c->dirs[--c->n_dirs];

		free(d->path);
		free(d->names);
	}
}

/* Notes NAME in the directory the walk is in (none for the walk's root). */
static int cursor_note_name(struct cursor *c, const char *name)
{
	struct walk_dir *d;
	size_t n = strlen(name) + 1;

	if (c->n_dirs == 0)
		return 0;
	d = &c->dirs[c->n_dirs - 1];
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4096;
		char *p;

		while (cap < d->len + n)
			cap *= 2;
		p = realloc(d->names, cap);
		if (!p)
			return -ENOMEM;
		d->names = p;
		d->cap = cap;
	}
	memcpy(d->names + d->len, name, n);
	d->len += n;
	return 0;
}

/* The walk enters directory PATH. */
static int cursor_push_dir(struct cursor *c, const char *path)
{
	if (c->n_dirs == c->cap_dirs) {
		size_t cap = c->cap_dirs ? c->cap_dirs * 2 : 16;
		struct walk_dir *p = realloc(c->dirs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->dirs = p;
		c->cap_dirs = cap;
	}
	memset(&c->dirs[c->n_dirs], 0, sizeof(c->dirs[0]));
	c->dirs[c->n_dirs].path = strdup(path);
	if (!c->dirs[c->n_dirs].path)
		return -ENOMEM;
	c->n_dirs++;
	return 0;
}

static void cursor_reset(struct cursor *c)
{
	cursor_close_file(c);
	for (size_t i = 0; i < c->n_repair; i++) {
		free(c->repair[i].path);
		if (c->repair[i].fd >= 0)
			close(c->repair[i].fd);
	}
	free(c->repair);
	treewalk_free(c->walk);
	for (size_t i = 0; i < c->n_roots; i++)
		free(c->walk_roots[i]);
	free(c->walk_roots);
	cursor_pop_dirs(c, 0);
	free(c->dirs);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Queues the subtree ROOT ("" = the whole store) to be walked after the
 * batch's files. */
static int cursor_add_walk(struct cursor *c, const char *root)
{
	char **nr;
	size_t cap;

	for (size_t i = 0; i < c->n_roots; i++)
		if (strcmp(c->walk_roots[i], root) == 0 || !*c->walk_roots[i])
			return 0;
	if (c->n_roots == c->cap_roots) {
		cap = c->cap_roots ? c->cap_roots * 2 : 4;
		nr = realloc(c->walk_roots, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->walk_roots = nr;
		c->cap_roots = cap;
	}
	c->walk_roots[c->n_roots] = strdup(root);
	if (!c->walk_roots[c->n_roots])
		return -ENOMEM;
	c->n_roots++;
	return 0;
}

static int cursor_add_repair(struct cursor *c, const char *path)
{
	struct journal_dirty *nr, *d;
	size_t cap;

	if (!path || !*path)
		return 0;
	for (size_t i = 0; i < c->n_repair; i++)
		if (strcmp(c->repair[i].path, path) == 0)
			return 0;
	if (c->n_repair == c->cap_repair) {
		cap = c->cap_repair ? c->cap_repair * 2 : 16;
		nr = realloc(c->repair, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->repair = nr;
		c->cap_repair = cap;
	}
	d = &c->repair[c->n_repair];
	memset(d, 0, sizeof(*d));
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	d->fd = -1;
	d->whole = true;
	c->n_repair++;
	return 0;
}

/* The cursor's file number i: the batch's dirty files, then the repairs. */
static const struct journal_dirty *cursor_dirty(const struct cursor *c, size_t i)
{
	const struct journal_batch *b = c->cur->b;
	size_t n = cursor_n_files(c);

	if (i < n)
		return &b->files[i];
	i -= n;
	return i < c->n_repair ? &c->repair[i] : NULL;
}

/*
 * Opens the current file of the cursor's batch for reading. The journal
 * keeps an O_PATH (or O_RDONLY) fd per inode so that renames after the
 * batch was taken do not matter; an O_PATH fd cannot be read, so it is
 * reopened through /proc/self/fd. After crash recovery there is no fd and
 * the file is opened by its path under the store. Returns 0, -ENOENT if
 * the file is gone (nothing to send: a later record removes it on the
 * peer too), or -errno.
 */
static int cursor_open_file(struct sender *s, const struct journal_dirty *d)
{
	struct cursor *c = &s->c;
	char proc[64];
	int fl, fd;

	/* Only a regular file is ever opened: a fifo there would block this
	 * loop, a device open has side effects, and neither has data to send
	 * (a later record replaces or describes it). */
	if ((d->fd >= 0 ? fstat(d->fd, &c->st) :
			  fstatat(s->store_fd, d->path, &c->st, AT_SYMLINK_NOFOLLOW)) < 0)
		return -errno;
	if (!S_ISREG(c->st.st_mode))
		return -ENOENT;
	if (d->fd >= 0) {
		fl = fcntl(d->fd, F_GETFL);
		if (fl < 0)
			return -errno;
		if (!(fl & O_PATH) && (fl & O_ACCMODE) != O_WRONLY) {
			c->fd = d->fd;
			c->own_fd = false;
			goto out_stat;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", d->fd);
		fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	} else {
		fd = openat(s->store_fd, d->path, O_RDONLY | O_CLOEXEC |
			    O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	}
	if (fd < 0)
		return -errno;
	c->fd = fd;
	c->own_fd = true;
out_stat:
	if (fstat(c->fd, &c->st) < 0) {
		int rc = -errno;

		cursor_close_file(c);
		return rc;
	}
	if (!S_ISREG(c->st.st_mode)) {
		cursor_close_file(c);
		return -ENOENT;
	}
	return 0;
}

/* ---- connection ---- */

static void sender_connect(struct sender *s);
static void sender_baseline_start(struct sender *s, const char *why);
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

/* Drops the connection (if any), requeues, schedules a reconnect. */
static void sender_disconnect(struct sender *s, const char *why)
{
	bool was_up = s->state == PEER_STREAMING;

	if (s->bev) {
		bufferevent_free(s->bev);
		s->bev = NULL;
	}
	sender_requeue_all(s);
	/* An unacked baseline starts again on the next HELLO (the peer's
	 * position is still below it). */
	s->resync = false;
	s->baseline_pending = false;
	if (was_up) {
		log_warn("replication peer disconnected; changes are kept and "
			 "sent when it is back", "peer=%s why=\"%s\"", s->peer, why);
		s->reconnects++;
	} else {
		log_info("replication peer not reachable; retrying",
			 "peer=%s why=\"%s\" retry_ms=%u", s->peer, why, s->backoff_ms);
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

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

int sender_check_peer(const char *peer, bool insecure, char *why, size_t len)
{
	struct addrinfo hints = { 0 }, *ai = NULL;
	char host[256], portstr[8];
	uint16_t port;
	int rc;

	if (conf_parse_addr(peer, host, sizeof(host), &port) < 0) {
		snprintf(why, len, "bad peer address '%s' (want HOST:PORT)", peer);
		return -EINVAL;
	}
	snprintf(portstr, sizeof(portstr), "%u", port);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc != 0) {
		/* Maybe resolvable later; the sender retries. */
		return 0;
	}
	rc = 0;
	if (!insecure && !addr_is_loopback(ai->ai_addr)) {
		snprintf(why, len, "peer %s is not a loopback address and TLS is not "
			 "part of this build: pass --insecure to replicate in the clear "
			 "on a network you trust", peer);
		rc = -EPERM;
	}
	freeaddrinfo(ai);
	return rc;
}

static void sender_connect(struct sender *s)
{
	struct addrinfo hints = { 0 }, *ai = NULL;
	char host[256], portstr[8];
	uint16_t port;
	int rc;

	if (conf_parse_addr(s->peer, host, sizeof(host), &port) < 0) {
		sender_set_error(s, "bad peer address '%s' (want HOST:PORT)", s->peer);
		log_error("bad peer address; fix --peer", "peer=%s", s->peer);
		sender_set_state(s, PEER_REFUSED, "bad address");
		return;
	}
	snprintf(portstr, sizeof(portstr), "%u", port);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
	rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc != 0) {
		sender_set_error(s, "cannot resolve peer %s: %s", s->peer, gai_strerror(rc));
		sender_disconnect(s, gai_strerror(rc));
		return;
	}
	/*
	 * Without TLS keys twinfs talks only on loopback addresses: a file
	 * store must not be readable by anyone who can reach the port. A
	 * non-loopback peer needs --insecure in so many words.
	 */
	if (!addr_is_loopback(ai->ai_addr) && !s->insecure) {
		sender_set_error(s, "peer %s is not a loopback address and TLS is not "
				 "configured; pass --insecure to replicate in the clear",
				 s->peer);
		log_error("refusing to replicate to a non-loopback peer without TLS; "
			  "use --insecure on a trusted network", "peer=%s", s->peer);
		freeaddrinfo(ai);
		sender_set_state(s, PEER_REFUSED, "non-loopback without --insecure");
		return;
	}
	if (!addr_is_loopback(ai->ai_addr))
		log_warn("replicating in the clear to a non-loopback peer (--insecure)",
			 "peer=%s", s->peer);
	s->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!s->bev) {
		freeaddrinfo(ai);
		sender_disconnect(s, "out of memory");
		return;
	}
	bufferevent_setcb(s->bev, sender_read_cb, sender_write_cb, sender_event_cb, s);
	bufferevent_setwatermark(s->bev, EV_WRITE, OUT_LOW_WM, 0);
	/*
	 * libevent writes at most 16 KiB per write event by default: one
	 * writev and one trip through the loop per 16 KiB, and as many small
	 * reads on the peer (measured: serve made 124,000 readv calls for
	 * 499 MB). Let one event write what the socket takes.
	 */
	if (bufferevent_set_max_single_write(s->bev, SEND_MAX_WRITE) < 0)
		log_warn("cannot raise the socket write size; sending in 16 KiB steps",
			 "peer=%s", s->peer);
	sender_set_state(s, PEER_CONNECTING, "connect");
	rc = bufferevent_socket_connect(s->bev, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo(ai);
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
	evutil_socket_t fd = bufferevent_getfd(s->bev);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	journal_get_stats(s->j, &js);
	h.version = PROTO_VERSION;
	memcpy(h.node_id, s->id.id, sizeof(h.node_id));
	h.generation = s->id.generation;
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
	char why[160];

	if (what & BEV_EVENT_CONNECTED) {
		if (s->state == PEER_CONNECTING)
			sender_connected(s);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		snprintf(why, sizeof(why), "peer closed the connection");
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
	const char *why;
	bool baseline;
	int rc;

	if (s->state != PEER_HELLO)
		return -EPROTO;
	if (h->role != PROTO_ROLE_SECONDARY) {
		sender_set_error(s, "peer %s is not a secondary (twinfs serve)", s->peer);
		return -EPROTO;
	}
	s->peer_generation = h->generation;
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
	if (h->flags & PROTO_HELLO_F_DIRTY) {
		struct journal_stats js;

		journal_get_stats(s->j, &js);
		s->repair_until = js.head_seq;
		log_notice("the peer was interrupted while applying; re-sending the "
			   "whole state of every path changed since its last durable "
			   "point", "peer=%s peer_seq=%llu", s->peer,
			   (unsigned long long)h->applied_seq);
	}
	baseline = h->applied_seq == 0 || s->rebaseline;
	why = h->applied_seq == 0 ? "the peer has never applied anything" :
	      "the peer failed to replay a change made during a walk";
	s->rebaseline = false;
	rc = journal_rewind(s->j, h->applied_seq);
	if (rc == -ERANGE) {
		struct journal_stats js;

		journal_get_stats(s->j, &js);
		if (h->applied_seq < js.acked_seq) {
			log_notice("the peer is behind what it acknowledged (a new or "
				   "restored peer?); the journal cannot cover the gap",
				   "peer=%s peer_seq=%llu acked=%llu", s->peer,
				   (unsigned long long)h->applied_seq,
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
		   "peer_generation=%llu", s->peer,
		   (unsigned long long)h->applied_seq,
		   (unsigned long long)h->generation);
	s->backoff_ms = BACKOFF_MIN_MS;
	if (baseline)
		sender_baseline_start(s, why);
	sender_set_state(s, PEER_STREAMING, "hello exchanged");
	return 0;
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
	log_debug("ack from peer", "seq=%llu", (unsigned long long)seq);
	rc = journal_ack(s->j, seq);
	if (rc < 0)
		log_warn("cannot record the peer's ack", "seq=%llu err=%s",
			 (unsigned long long)seq, strerror(-rc));
	if (s->resync && s->baseline_end && seq >= s->baseline_end) {
		s->resync = false;
		log_notice("baseline complete: the peer has this store's state", "peer=%s "
			   "seq=%llu files=%llu bytes=%llu seconds=%.1f", s->peer,
			   (unsigned long long)seq, (unsigned long long)s->resync_files,
			   (unsigned long long)s->resync_bytes,
			   clock_mono_s() - s->baseline_t0);
	}
	if (s->walk_window_end && seq >= s->walk_window_end)
		s->walk_window_end = 0;	/* the peer applied everything it overlapped */
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
	int rc;

	if (s->state == PEER_HELLO && fr->h.type != PROTO_HELLO &&
	    fr->h.type != PROTO_ERROR)
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
	case PROTO_ERROR:
		rc = proto_decode_error(fr, &e);
		if (rc < 0)
			return rc;
		sender_set_error(s, "peer %s: %s", s->peer, e.text);
		log_error("the replication peer reported an error", "peer=%s code=%s "
			  "text=\"%s\"", s->peer, proto_err_name(e.code), e.text);
		/*
		 * A walk reads directories while names change (readdir may
		 * miss a renamed entry or return it under both names), so the
		 * peer can fail to replay a rename that ran during the walk.
		 * Replaying it again would fail again: instead the next
		 * connection sends a new baseline, which covers those records.
		 */
		if (s->walk_window_end && e.code == PROTO_E_APPLY) {
			log_notice("the peer could not apply a change made while a subtree "
				   "was being sent; sending a baseline of the whole store "
				   "again", "peer=%s window_end=%llu", s->peer,
				   (unsigned long long)s->walk_window_end);
			s->rebaseline = true;
		}
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
		rc = proto_frame_next(in, &fr);
		if (rc == 0)
			break;
		if (rc < 0) {
			log_error("bad frame from the peer; dropping the connection",
				  "peer=%s err=%s", s->peer, strerror(-rc));
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

/* The whole xattr state (user.*, trusted.*) of the repaired file open on
 * FD, named PATH: REMOVEXATTR without a name listing the names it keeps
 * (docs/protocol.md), then a SETXATTR per name. Returns 0 or -errno. */
static int sender_put_fd_xattrs(struct evbuffer *out, uint64_t seq, const char *path,
				int fd)
{
	struct journal_op op = { .type = JOP_REMOVEXATTR, .path = path };
	char *names = NULL, *val = NULL;
	size_t keep = 0;
	ssize_t n, vn;
	int rc = 0;

	n = flistxattr(fd, NULL, 0);
	if (n < 0)
		return errno == ENOTSUP ? 0 : -errno;
	names = malloc((size_t)n + 1);
	val = malloc(PROTO_XVALUE_MAX);
	if (!names || !val) {
		rc = -ENOMEM;
		goto out_free;
	}
	n = n ? flistxattr(fd, names, (size_t)n) : 0;
	if (n < 0) {
		rc = -errno;
		goto out_free;
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		size_t l = strlen(names + i) + 1;

		if (strncmp(names + i, "user.", 5) == 0 || strncmp(names + i, "trusted.", 8) == 0) {
			memmove(names + keep, names + i, l);
			keep += l;
		}
	}
	op.xvalue = keep ? names : NULL;
	op.xsize = keep;
	if (proto_encode_op(out, seq, &op) < 0) {
		rc = -EINVAL;
		goto out_free;
	}
	for (size_t i = 0; i < keep; i += strlen(names + i) + 1) {
		vn = fgetxattr(fd, names + i, val, PROTO_XVALUE_MAX);
		if (vn < 0)
			continue;	/* removed meanwhile: a later op says so */
		op = (struct journal_op){ .type = JOP_SETXATTR, .path = path, .xname = names + i,
					  .xvalue = val, .xsize = (size_t)vn };
		if (proto_encode_op(out, seq, &op) < 0) {
			rc = -EINVAL;
			goto out_free;
		}
	}
out_free:
	free(names);
	free(val);
	return rc;
}

/* Sends the next data block or ATTR of the current file; moves the cursor.
 * Returns 1 if it put something on the wire (or skipped a block the peer
 * holds), 2 if it skipped and the pump's skip budget is spent, 0 when the
 * batch's files are done, -errno on a local failure that drops the
 * connection. */
static int sender_put_data(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	const struct journal_dirty *d;
	struct proto_attr a;
	uint64_t end, len;
	void *buf;
	ssize_t n;
	int rc;

	for (;;) {
		d = cursor_dirty(c, c->file);
		if (!d)
			return 0;
		if (c->fd < 0) {
			rc = cursor_open_file(s, d);
			if (rc == -ENOENT || rc == -ELOOP || rc == -ENOTDIR) {
				/* Gone or replaced: a later record removes it. */
				c->file++;
				c->range = 0;
				c->off = 0;
				continue;
			}
			if (rc < 0) {
				log_error("cannot read a changed file to send it", "path=%s "
					  "err=%s", d->path, strerror(-rc));
				sender_set_error(s, "cannot read %s: %s", d->path, strerror(-rc));
				return rc;
			}
			c->range = 0;
			c->off = d->whole ? 0 : (d->n_ranges ? d->ranges[0].off : 0);
			/* A file with other names can change on the peer
			 * through them: not followed (sentmap.c). */
			c->held = c->st.st_nlink == 1 &&
				  (uint64_t)c->st.st_size >= HELD_MIN_SIZE;
			if (!c->held)
				sentmap_forget(s->held, d->path);
		}
		/* The end of the current range, bounded by the file's size. */
		if (d->whole) {
			end = c->range == 0 ? (uint64_t)c->st.st_size : 0;
		} else if (c->range < d->n_ranges) {
			end = d->ranges[c->range].off + d->ranges[c->range].len;
			if (end > (uint64_t)c->st.st_size)
				end = (uint64_t)c->st.st_size;
		} else {
			end = 0;
		}
		if (c->off < end)
			break;
		/* This range is done: next range, or the ATTR closing the file. */
		if (!d->whole && c->range + 1 < d->n_ranges) {
			c->range++;
			c->off = d->ranges[c->range].off;
			continue;
		}
		/* A repaired path gets its whole state: xattrs too. */
		if (c->file >= cursor_n_files(c) &&
		    sender_put_fd_xattrs(out, c->cur->b->end_seq, d->path, c->fd) < 0)
			log_warn("cannot re-send the extended attributes of a file",
				 "path=%s", d->path);
		if (fstat(c->fd, &c->st) == 0) {
			memset(&a, 0, sizeof(a));
			a.path = d->path;
			a.mask = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_SIZE |
				 JATTR_ATIME | JATTR_MTIME;
			a.size = (uint64_t)c->st.st_size;
			a.mode = c->st.st_mode & 07777;
			a.uid = c->st.st_uid;
			a.gid = c->st.st_gid;
			a.atime = c->st.st_atim;
			a.mtime = c->st.st_mtim;
			proto_encode_attr(out, &a);
			sentmap_trim(s->held, d->path, a.size);
		} else {
			sentmap_forget(s->held, d->path);
		}
		cursor_close_file(c);
		c->file++;
		c->range = 0;
		c->off = 0;
		return 1;
	}
	len = end - c->off;
	if (len > BLOCK_SIZE)
		len = BLOCK_SIZE;
	buf = pool_get(s->pool);
	if (!buf)
		return -ENOMEM;
	n = pread(c->fd, buf, len, (off_t)c->off);
	if (n <= 0) {
		rc = n < 0 ? -errno : 0;
		pool_put_cb(buf, BLOCK_SIZE, s->pool);
		if (rc < 0) {
			log_error("cannot read a changed file to send it", "path=%s "
				  "off=%llu err=%s", d->path,
				  (unsigned long long)c->off, strerror(-rc));
			sender_set_error(s, "cannot read %s: %s", d->path, strerror(-rc));
			return rc;
		}
		/* Shrunk under us: what is left of the range does not exist. */
		c->st.st_size = (off_t)c->off;
		return 1;
	}
	if (c->held) {
		/* The one hash of this block: compared, then sent in DATA. */
		uint64_t h = XXH3_64bits(buf, (size_t)n);

		if (sentmap_holds(s->held, d->path, c->off, (uint32_t)n, h)) {
			pool_put_cb(buf, BLOCK_SIZE, s->pool);
			c->off += (uint64_t)n;
			s->bytes_held += (uint64_t)n;
			s->held_budget -= n;
			return s->held_budget > 0 ? 1 : 2;
		}
		rc = proto_encode_data_hashed(out, d->path, c->off, buf, (uint32_t)n, h,
					      pool_put_cb, s->pool);
		if (rc == 0)
			(void)sentmap_note(s->held, d->path, c->off, (uint32_t)n, h,
					   c->cur->b->end_seq);
	} else {
		rc = proto_encode_data(out, d->path, c->off, buf, (uint32_t)n,
				       pool_put_cb, s->pool, NULL);
	}
	if (rc < 0) {
		if (rc == -EINVAL)
			pool_put_cb(buf, BLOCK_SIZE, s->pool);
		return rc;
	}
	c->off += (uint64_t)n;
	if (c->walk)
		s->resync_bytes += (uint64_t)n;
	c->cur->data_bytes += (uint64_t)n;
	s->inflight_bytes += (uint64_t)n;
	s->bytes_sent += (uint64_t)n;
	return 1;
}

/*
 * Records that are not plain namespace ops. MARK_*, BATCH and EPOCH are
 * the journal's own bookkeeping and stay local. NEEDS_SCAN names a path
 * the journal could not record in detail (it was full): we send what the
 * path is now — the entry itself as an OP carrying the record's seq (so
 * order and resume work as for any op), and for a regular file its whole
 * content after the batch's dirty files. For a directory its entries may
 * have changed in any way, so the whole subtree is walked and sent
 * before the batch's dirty files (sender_put_walk, cursor_n_files). A path that no longer exists needs
 * nothing: the op that removed it follows in the journal.
 */
static int sender_put_scan(struct sender *s, struct evbuffer *out,
			   const struct journal_rec *r)
{
	struct journal_op op = { 0 };
	char target[4096];
	struct stat st;
	ssize_t n;

	/* "" is the store itself (a rescan of everything). */
	if (fstatat(s->store_fd, *r->op.path ? r->op.path : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	op.path = r->op.path;
	op.mode = st.st_mode;
	op.uid = st.st_uid;
	op.gid = st.st_gid;
	op.res_mask = JRES_BIT(JRES_PATH);	/* a file's ATTR follows its data */
	op.res_mtime[JRES_PATH] = st.st_mtim;
	if (S_ISREG(st.st_mode)) {
		op.type = JOP_CREATE;
	} else if (S_ISDIR(st.st_mode)) {
		op.type = JOP_MKDIR;
	} else if (S_ISLNK(st.st_mode)) {
		n = readlinkat(s->store_fd, r->op.path, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		op.type = JOP_SYMLINK;
		op.path2 = target;
	} else {
		op.type = JOP_MKNOD;
		op.rdev = st.st_rdev;
	}
	if ((!S_ISDIR(st.st_mode) || *r->op.path) && proto_encode_op(out, r->seq, &op) < 0)
		return -EINVAL;
	if (S_ISDIR(st.st_mode)) {
		log_notice("the journal could not describe how a directory changed "
			   "(it was full, or records were lost in a crash); sending "
			   "its whole subtree", "path=/%s", r->op.path);
		return cursor_add_walk(&s->c, r->op.path);
	}
	return S_ISREG(st.st_mode) ? cursor_add_repair(&s->c, r->op.path) : 0;
}

/*
 * Baseline — sending what the store holds rather than what the journal
 * says changed.
 *
 * The journal covers changes since the peer's last acknowledged position.
 * Three gaps are outside it: a peer that never applied anything (a first
 * `mount --peer` over a store that already holds files), a peer behind
 * what this journal still holds (restored from an old backup, or its
 * state reset after the journal was trimmed: journal_rewind says
 * -ERANGE), and a directory recorded as NEEDS_SCAN while the journal was
 * full. Until a scan/delta engine exists they are closed by re-sending
 * the affected subtree whole, never by skipping it.
 *
 * Ordering is the one of a fuzzy checkpoint plus redo log. A baseline is
 * an ordinary batch taken from the journal (journal_owe_batch makes sure
 * there is one, with a fresh BATCH seq S above anything the peer holds);
 * its own records and dirty files are not sent, because every change
 * they describe is already in the store when the walk starts (the fs
 * applies a change to the store before it appends the record, and the
 * take appends S under the ns lock). The walk then sends, for every
 * entry of the subtree, parents before children, the op that creates it
 * (MKDIR, CREATE, SYMLINK, MKNOD, or LINK for a further name of an inode
 * already sent in this walk), its user/trusted xattrs, for a regular
 * file its whole content followed by its ATTR (the repair path, one read
 * and one hash per block as for any data), and for a directory an ATTR
 * when it is left. All these ops carry seq S, which is above the peer's
 * applied seq, so the receiver applies them; BATCH_END(S) closes the
 * batch and the peer acks S when it is all durable. Changes made while
 * the walk runs get seqs above S and follow in later batches: whatever
 * state of an entry the walk happened to see, replaying them gives the
 * final state, because the receiver's ops are idempotent (creating an
 * existing file or directory, unlinking a missing name, renaming a name
 * already renamed all succeed) and dirty data is re-sent by range.
 * If the connection drops before S is acked, the peer still reports a
 * position below S (or 0), so the next HELLO starts the baseline again.
 *
 * Where that argument is weak: readdir of a directory whose names change
 * may miss a renamed entry or return it under both names, so a RENAME
 * replayed after the walk can find neither name on the peer (ENOENT) or
 * a non-empty directory in the way. The peer then reports an apply
 * error; replaying would fail the same way, so the sender sends a new
 * baseline on the next connection (sender_on_frame, rebaseline), whose
 * batch covers those records. It converges once a walk runs without
 * such a rename. Entries sent under a name that was renamed away stay
 * on the peer as names it alone has (see below).
 *
 * A baseline also deletes. When the walk leaves a directory it sends the
 * names it found there (PRUNE, after the entries and before the
 * directory's ATTR); the peer removes every other entry of its copy,
 * whole subtrees included (netsync/receiver.c, receiver_prune). The same
 * ordering argument holds: a name created here after the walk read the
 * directory may be removed on the peer, and its CREATE, with a higher
 * seq, follows.
 */
static int sender_put_xattrs(struct sender *s, struct evbuffer *out, uint64_t seq,
			     const struct treewalk_item *it)
{
	struct journal_op op = { 0 };
	char p[64 + NAME_MAX + 1];
	char *names = NULL, *val = NULL;
	ssize_t n, vn;
	int rc = 0;

	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", it->dirfd, it->name);
	n = llistxattr(p, NULL, 0);
	if (n <= 0)
		return 0;
	names = malloc((size_t)n);
	val = malloc(PROTO_XVALUE_MAX);
	if (!names || !val) {
		rc = -ENOMEM;
		goto out_free;
	}
	n = llistxattr(p, names, (size_t)n);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;

		/* system.* and security.* belong to the host (ACLs are replicated
		 * through the mode only, labels are the peer's own). */
		if (strncmp(name, "user.", 5) != 0 && strncmp(name, "trusted.", 8) != 0)
			continue;
		vn = lgetxattr(p, name, val, PROTO_XVALUE_MAX);
		if (vn < 0)
			continue;	/* removed meanwhile: a later op says so */
		op.type = JOP_SETXATTR;
		op.path = it->path;
		op.xname = name;
		op.xvalue = val;
		op.xsize = (size_t)vn;
		if (proto_encode_op(out, seq, &op) < 0) {
			log_error("cannot send an extended attribute", "path=%s name=%s",
				  it->path, name);
			rc = -EINVAL;
			goto out_free;
		}
	}
out_free:
	free(names);
	free(val);
	return rc;
}

static void sender_put_walk_attr(struct evbuffer *out, const struct treewalk_item *it,
				 uint32_t mask)
{
	struct proto_attr a;

	memset(&a, 0, sizeof(a));
	a.path = it->path;
	a.mask = mask;
	a.mode = it->st.st_mode & 07777;
	a.uid = it->st.st_uid;
	a.gid = it->st.st_gid;
	a.atime = it->st.st_atim;
	a.mtime = it->st.st_mtim;
	proto_encode_attr(out, &a);
}

/* The walk leaves directory PATH: sends the names it found there (several
 * PRUNE frames for a long list), so that the peer removes the others. */
static int sender_put_prune(struct sender *s, struct evbuffer *out, uint64_t seq,
			    const char *path)
{
	struct cursor *c = &s->c;
	struct walk_dir *d;
	struct proto_prune m = { .seq = seq, .path = path };
	size_t off = 0;
	int rc;

	if (c->n_dirs == 0 || strcmp(c->dirs[c->n_dirs - 1].path, path) != 0) {
		/* Cannot happen with a depth-first walk; without the list
		 * nothing is removed, which only leaves extra names. */
		log_warn("baseline walk left a directory it was not in; not pruning it",
			 "path=/%s", path);
		return 0;
	}
	d = &c->dirs[c->n_dirs - 1];
	do {
		size_t end = off;

		/* whole names, at most PROTO_PRUNE_CHUNK bytes */
		while (end < d->len) {
			size_t n = strlen(d->names + end) + 1;

			if (end - off + n > PROTO_PRUNE_CHUNK)
				break;
			end += n;
		}
		m.names = d->names ? d->names + off : NULL;
		m.names_len = end - off;
		m.flags = end >= d->len ? PROTO_PRUNE_F_LAST : 0;
		rc = proto_encode_prune(out, &m);
		if (rc < 0) {
			log_error("cannot send the names of a directory", "path=/%s", path);
			sender_set_error(s, "cannot send the names of %s", path);
			return rc;
		}
		off = end;
	} while (off < d->len);
	cursor_pop_dirs(c, c->n_dirs - 1);
	return 0;
}

/* Sends one entry of a walk. Returns 0 or -errno. */
static int sender_put_walk_item(struct sender *s, struct evbuffer *out,
				const struct treewalk_item *it)
{
	const uint32_t meta = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_ATIME |
			      JATTR_MTIME;
	uint64_t seq = s->c.cur->b->end_seq;
	struct journal_op op = { 0 };
	char target[PATH_MAX];
	ssize_t n;
	int fd, rc;

	if (it->leave) {
		/* After its entries, whose creation changed its times. */
		rc = sender_put_prune(s, out, seq, it->path);
		if (rc < 0)
			return rc;
		sender_put_walk_attr(out, it, meta);
		return 0;
	}
	rc = cursor_note_name(&s->c, it->name);
	if (rc == 0 && S_ISDIR(it->st.st_mode))
		rc = cursor_push_dir(&s->c, it->path);
	if (rc < 0)
		return rc;
	op.path = it->path;
	op.mode = it->st.st_mode;
	op.uid = it->st.st_uid;
	op.gid = it->st.st_gid;
	if (!S_ISDIR(it->st.st_mode) && it->link_to) {
		op.type = JOP_LINK;
		op.path = it->link_to;
		op.path2 = it->path;
	} else if (S_ISREG(it->st.st_mode)) {
		op.type = JOP_CREATE;
	} else if (S_ISDIR(it->st.st_mode)) {
		op.type = JOP_MKDIR;
	} else if (S_ISLNK(it->st.st_mode)) {
		n = readlinkat(it->dirfd, it->name, target, sizeof(target) - 1);
		if (n < 0)
			return 0;	/* gone meanwhile: a later op says so */
		target[n] = '\0';
		op.type = JOP_SYMLINK;
		op.path2 = target;
	} else {
		op.type = JOP_MKNOD;
		op.rdev = it->st.st_rdev;
	}
	/* A CREATE makes the peer's copy anew: what it held is gone. */
	sentmap_forget(s->held, op.path);
	if (op.type == JOP_LINK)
		sentmap_forget(s->held, op.path2);
	if ((op.type != JOP_MKDIR || *it->path) && proto_encode_op(out, seq, &op) < 0) {
		log_error("cannot send an entry of the store", "path=%s", it->path);
		sender_set_error(s, "cannot send %s (name or target too long?)", it->path);
		return -EINVAL;
	}
	if (op.type == JOP_LINK)
		return 0;
	rc = sender_put_xattrs(s, out, seq, it);
	if (rc < 0)
		return rc;
	switch (op.type) {
	case JOP_CREATE:
		s->resync_files++;
		/*
		 * Its content is read through an fd opened here, relative to the
		 * walk's directory fd, not later by path: if a parent is renamed
		 * while the walk is in it, the path no longer resolves, yet the
		 * peer must get the content under the name it was created with
		 * (the RENAME that follows moves it).
		 */
		fd = openat(it->dirfd, it->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
			    O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return errno == ENOENT || errno == ELOOP ? 0 : -errno;
		rc = cursor_add_repair(&s->c, it->path);	/* data, then ATTR */
		if (rc < 0 || s->c.n_repair == 0 ||
		    strcmp(s->c.repair[s->c.n_repair - 1].path, it->path) != 0 ||
		    s->c.repair[s->c.n_repair - 1].fd >= 0) {
			close(fd);
			return rc;
		}
		s->c.repair[s->c.n_repair - 1].fd = fd;
		return 0;
	case JOP_MKNOD:
		sender_put_walk_attr(out, it, meta);
		return 0;
	case JOP_SYMLINK:	/* no mode of its own */
		sender_put_walk_attr(out, it, meta & ~JATTR_MODE);
		return 0;
	default:
		return 0;
	}
}

/* Walks the cursor's queued subtrees, one entry per call, before the
 * batch's dirty files (see cursor_n_files). Returns 1 if it put something on the wire, 0 when every
 * walk is done, -EAGAIN when this pump's step budget is used up (continue
 * from the write callback), or -errno to drop the connection. */
static int sender_put_walk(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	struct treewalk_item it;
	struct journal_stats js;
	int rc;

	cursor_clear_repairs(c);	/* sender_put_data sent them all */
	for (;;) {
		if (!c->walk) {
			if (c->next_root >= c->n_roots)
				return 0;
			rc = treewalk_open(s->store_fd, c->walk_roots[c->next_root], &c->walk);
			if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP) {
				c->next_root++;	/* gone: a later op removes it */
				continue;
			}
			if (rc < 0) {
				log_error("cannot walk the store to send it", "path=%s err=%s",
					  c->walk_roots[c->next_root], strerror(-rc));
				sender_set_error(s, "cannot walk %s: %s",
						 c->walk_roots[c->next_root], strerror(-rc));
				return rc;
			}
			log_notice("sending the whole state of a subtree; the peer "
				 "removes names it alone has", "peer=%s path=/%s", s->peer,
				 c->walk_roots[c->next_root]);
		}
		if (s->walk_budget <= 0)
			return -EAGAIN;
		s->walk_budget--;
		rc = treewalk_next(c->walk, &it);
		if (rc == 0) {
			treewalk_free(c->walk);
			c->walk = NULL;
			c->next_root++;
			if (c->next_root < c->n_roots)
				continue;
			/* The walks are done: the batch's dirty files follow. */
			journal_get_stats(s->j, &js);
			s->walk_window_end = js.head_seq;
			c->file = 0;
			return 1;
		}
		if (rc < 0) {
			log_error("cannot walk the store to send it", "path=%s err=%s",
				  c->walk_roots[c->next_root], strerror(-rc));
			sender_set_error(s, "cannot walk %s: %s", c->walk_roots[c->next_root],
					 strerror(-rc));
			return rc;
		}
		rc = sender_put_walk_item(s, out, &it);
		return rc < 0 ? rc : 1;
	}
}

/* The peer needs a baseline of the whole store (see "Baseline"). */
static void sender_baseline_start(struct sender *s, const char *why)
{
	log_notice("sending the peer the whole store (baseline)", "peer=%s why=\"%s\"",
		   s->peer, why);
	s->baseline_pending = true;
	s->baseline_end = 0;
	sentmap_clear(s->held);
	journal_owe_batch(s->j);
}

static int sender_put_rec(struct sender *s, struct evbuffer *out,
			  const struct journal_rec *r)
{
	int rc;

	switch (r->op.type) {
	case JOP_MARK_DIR:
	case JOP_MARK_FILE:
	case JOP_BATCH:
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
	if (r->op.type == JOP_NEEDS_SCAN)
		return sender_put_scan(s, out, r);
	if (r->seq <= s->repair_until) {
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
	 * limit (it made a mount at 600 fds run out while syncing 3,000
	 * small files, every batch of them in flight). */
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

	if (s->state != PEER_STREAMING || !s->bev || s->pumping)
		return;
	s->pumping = true;
	out = bufferevent_get_output(s->bev);
	s->walk_budget = WALK_STEPS_PER_PUMP;
	s->held_budget = HELD_PER_PUMP;
	while (evbuffer_get_length(out) < OUT_HIGH_WM &&
	       s->pool->outstanding < POOL_MAX) {
		if (!c->cur) {
			rc = sender_take(s);
			if (rc <= 0)
				break;
		}
		b = c->cur->b;
		if (c->rec < b->n_recs) {
			rc = sender_put_rec(s, out, &b->recs[c->rec]);
			if (rc < 0)
				goto out_drop;
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

/* ---- periodic work ---- */

void sender_tick(struct sender *s)
{
	double now = clock_mono_s();
	double hb = s->heartbeat_s ? s->heartbeat_s : 1;
	double dead = hb * 5 < 15 ? 15 : hb * 5;

	s->rate_slot[s->rate_i] = s->bytes_sent - s->rate_mark;
	s->rate_mark = s->bytes_sent;
	s->rate_i = (s->rate_i + 1) % RATE_SLOTS;

	switch (s->state) {
	case PEER_CONNECTING:
		if (now - s->state_since > CONNECT_TIMEOUT_S) {
			sender_set_error(s, "cannot connect to %s: timed out", s->peer);
			sender_disconnect(s, "connect timed out");
		}
		break;
	case PEER_HELLO:
	case PEER_STREAMING:
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
	struct sender *s;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base = base;
	s->j = j;
	s->insecure = o->insecure;
	s->heartbeat_s = o->heartbeat_s;
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
	free(s->pool);
out_close:
	close(s->store_fd);
out_free:
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
			proto_encode_goodbye(bufferevent_get_output(s->bev), "unmount");
			/* Best effort: the fd is blocking-free, so write what fits. */
			evbuffer_write(bufferevent_get_output(s->bev), bufferevent_getfd(s->bev));
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
	pool_close(s->pool);
	if (s->store_fd >= 0)
		close(s->store_fd);
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
	st->generation = s->id.generation;
	st->peer_generation = s->peer_generation;
	st->reconnects = s->reconnects;
	st->resync = s->resync || s->baseline_pending;
	st->resync_files = s->resync_files;
	st->resync_bytes = s->resync_bytes;
	snprintf(st->last_error, sizeof(st->last_error), "%s", s->last_error);
}
