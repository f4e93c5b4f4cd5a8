/*
 * prefetch — the mirror client's read-ahead thread (prefetch.h).
 *
 * Blocks. Content is read into 1 MiB blocks of a fixed pool and handed to
 * the chunk's evbuffer by reference, so it is copied once by read(2) and
 * once into the socket, never in between; small files share a block, each
 * at its own offset. A block goes back to the pool when every reference
 * is freed (by the client's thread, once it sent them): the pool is the
 * read-ahead's bound and its flow control. Its mutex also guards the
 * queue of chunks; the thread never touches the client's link or plan
 * state beyond reading the plan.
 */
#include "netsync/delta/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/xattrname.h"
#include "netsync/wire/proto.h"

#define PF_BLOCK PROTO_BLOCK_SIZE
#define PF_BLOCKS (PREFETCH_AHEAD / PF_BLOCK)
#define PF_QUEUE 8192		/* chunks waiting at most */
#define PF_CHUNK_DATA PF_BLOCK	/* a chunk is handed over at this much data */
/* The client's thread, once it waited, wakes for this much (pf_ready). */
#define PF_WAKE_CHUNKS 64
#define PF_WAKE_BYTES PF_BLOCK
#define PF_META (JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_MTIME)

struct pf_block {
	struct prefetch *p;
	atomic_uint refs;	/* the thread's (while filling) + one per slice */
	size_t used;
	uint8_t *mem;
};

struct prefetch {
	int rootfd;
	const struct plan *pl;
	uint64_t seq;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv_data;	/* enough queued for the client (pf_ready) */
	pthread_cond_t cv_room;	/* a chunk taken, a block freed, stop */
	struct pf_block blocks[PF_BLOCKS];
	struct pf_block *free[PF_BLOCKS];
	size_t n_free;
	struct prefetch_chunk *q;	/* ring [head, head + n) of PF_QUEUE */
	size_t head, n;
	uint64_t q_data;	/* content bytes queued */
	bool starved;		/* the thread waits for a free block */
	bool stop, done;
	/* the thread's own */
	struct pf_block *cur;	/* being filled */
	uint64_t tmp_seq;
};

/* ---- the pool ---- */

static void pf_block_put(struct pf_block *b)
{
	struct prefetch *p = b->p;

	if (atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	pthread_mutex_lock(&p->mu);
	p->free[p->n_free++] = b;
	pthread_cond_signal(&p->cv_room);
	pthread_mutex_unlock(&p->mu);
}

static void pf_slice_done(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	pf_block_put(arg);
}

/* LEN bytes of block memory for the thread (a fresh block when the
 * current one has less left); NULL when stopped. */
static uint8_t *pf_space(struct prefetch *p, size_t len)
{
	struct pf_block *b = p->cur;

	if (b && PF_BLOCK - b->used >= len)
		return b->mem + b->used;
	if (b)
		pf_block_put(b);
	p->cur = NULL;
	pthread_mutex_lock(&p->mu);
	while (!p->stop && !p->n_free) {
		p->starved = true;
		pthread_cond_signal(&p->cv_data);
		pthread_cond_wait(&p->cv_room, &p->mu);
	}
	p->starved = false;
	if (p->stop) {
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	b = p->free[--p->n_free];
	pthread_mutex_unlock(&p->mu);
	atomic_store(&b->refs, 1);
	b->used = 0;
	p->cur = b;
	return b->mem;
}

/* ---- the queue ---- */

/*
 * Whether the client's thread, waiting, should wake: a batch is there
 * (many small files, or a block's worth of data), the thread is done, or
 * it waits for blocks that only the client's sends give back. Waking per
 * small file cost a futex wait and wake-up each.
 */
static bool pf_ready(const struct prefetch *p)
{
	return p->done || p->n >= PF_WAKE_CHUNKS || p->q_data >= PF_WAKE_BYTES ||
	       (p->n && p->starved);
}

/* Hands C over (waiting for room); false when stopped (C is freed). */
static bool pf_push(struct prefetch *p, struct prefetch_chunk *c)
{
	pthread_mutex_lock(&p->mu);
	while (!p->stop && p->n == PF_QUEUE)
		pthread_cond_wait(&p->cv_room, &p->mu);
	if (p->stop) {
		pthread_mutex_unlock(&p->mu);
		evbuffer_free(c->buf);
		c->buf = NULL;
		return false;
	}
	p->q[(p->head + p->n) % PF_QUEUE] = *c;
	p->n++;
	p->q_data += c->data;
	if (pf_ready(p))
		pthread_cond_signal(&p->cv_data);
	pthread_mutex_unlock(&p->mu);
	c->buf = NULL;
	return true;
}

int prefetch_next(struct prefetch *p, struct prefetch_chunk *c, bool wait)
{
	pthread_mutex_lock(&p->mu);
	while (wait && !pf_ready(p))
		pthread_cond_wait(&p->cv_data, &p->mu);
	if (!p->n) {
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	*c = p->q[p->head];
	p->head = (p->head + 1) % PF_QUEUE;
	p->n--;
	p->q_data -= c->data;
	pthread_cond_signal(&p->cv_room);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

/* ---- encoding ---- */

int prefetch_caps(int fd, const char *peer_path, uint64_t seq, struct evbuffer *out)
{
	char val[256];
	struct journal_op op = { .type = JOP_SETXATTR, .path = peer_path,
				 .xname = XATTRNAME_CAPS, .xvalue = val };
	ssize_t n = fgetxattr(fd, XATTRNAME_CAPS, val, sizeof(val));

	if (n <= 0)
		return 0;	/* none, or gone since: the next run sees it */
	op.xsize = (size_t)n;
	return proto_encode_op(out, seq, &op) < 0 ? -EINVAL : 0;
}

int prefetch_xattrs(int rootfd, int fd, const char *path, const char *peer_path,
		    uint64_t seq, struct evbuffer *out)
{
	char lpath[64 + PROTO_PATH_MAX], *names = NULL, *val = NULL;
	struct journal_op op = { .type = JOP_REMOVEXATTR, .path = peer_path };
	size_t keep = 0;
	ssize_t n, vn;
	int rc = 0;

	snprintf(lpath, sizeof(lpath), "/proc/self/fd/%d/%s", rootfd, path);
	n = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(lpath, NULL, 0);
	if (n < 0)
		return 0;	/* none (ENOTSUP), or gone: the next run sees it */
	names = malloc((size_t)n + 1);
	val = malloc(PROTO_XVALUE_MAX);
	if (!names || !val) {
		rc = -ENOMEM;
		goto out;
	}
	if (n)
		n = fd >= 0 ? flistxattr(fd, names, (size_t)n) : llistxattr(lpath, names, (size_t)n);
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
		size_t l = strlen(names + i) + 1;

		if (xattrname_replicated(names + i)) {
			memmove(names + keep, names + i, l);
			keep += l;
		}
	}
	op.xvalue = keep ? names : NULL;
	op.xsize = keep;
	if (proto_encode_op(out, seq, &op) < 0)
		rc = -EINVAL;
	for (size_t i = 0; rc == 0 && i < keep; i += strlen(names + i) + 1) {
		vn = fd >= 0 ? fgetxattr(fd, names + i, val, PROTO_XVALUE_MAX) :
		     lgetxattr(lpath, names + i, val, PROTO_XVALUE_MAX);
		if (vn < 0)
			continue;	/* removed meanwhile */
		op = (struct journal_op){ .type = JOP_SETXATTR, .path = peer_path,
					  .xname = names + i, .xvalue = val, .xsize = (size_t)vn };
		if (proto_encode_op(out, seq, &op) < 0)
			rc = -EINVAL;
	}
out:
	free(names);
	free(val);
	return rc;
}

/* "WHAT PATH: reason" into C; returns RC. */
static int pf_fail(struct prefetch_chunk *c, int rc, const char *what, const char *path)
{
	snprintf(c->err, sizeof(c->err), "%s %s: %s", what, path, strerror(-rc));
	c->rc = rc;
	return rc;
}

/* DATA of [off, off + len) of FD as PEER_PATH into C, read into the pool.
 * Returns the bytes read (0: the file ended early), or -errno. */
static ssize_t pf_data(struct prefetch *p, struct prefetch_chunk *c, int fd,
		       const char *peer_path, uint64_t off, size_t len, const char *path)
{
	uint8_t *at = pf_space(p, len);
	size_t got = 0;

	if (!at)
		return -ECANCELED;
	while (got < len) {
		ssize_t n = pread(fd, at + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pf_fail(c, -errno, "cannot read", path);
		if (n == 0)
			break;	/* shrunk: the ATTR's size says so */
		got += (size_t)n;
	}
	if (!got)
		return 0;
	atomic_fetch_add(&p->cur->refs, 1);
	p->cur->used += got;
	if (proto_encode_data(c->buf, peer_path, off, at, (uint32_t)got, pf_slice_done, p->cur,
			      NULL) < 0) {
		pf_block_put(p->cur);
		return pf_fail(c, -ENOMEM, "cannot encode data of", path);
	}
	c->data += got;
	return (ssize_t)got;
}

/* Hands C over and starts the next chunk of the same item. */
static int pf_handover(struct prefetch *p, struct prefetch_chunk *c)
{
	struct prefetch_chunk next = { .item = c->item };

	next.buf = evbuffer_new();
	if (!next.buf)
		return pf_fail(c, -ENOMEM, "cannot read ahead", "");
	if (!pf_push(p, c)) {
		evbuffer_free(next.buf);
		return -ECANCELED;
	}
	*c = next;
	return 0;
}

/* The frames of one whole-file item into chunks; C is its first. */
static int pf_item(struct prefetch *p, const struct plan_item *it, struct prefetch_chunk *c)
{
	const struct proto_entry *e = it->s;
	char tmp[PROTO_PATH_MAX + 64];
	const char *peer_path = e->path, *slash = strrchr(e->path, '/');
	struct journal_op op = { .type = JOP_CREATE };
	struct stat st;
	int fd, rc;

	if (it->act == PLAN_REPLACE) {
		/* a temporary name in its folder, renamed over the old file
		 * at the end (mirror.c); no room for one: in place */
		snprintf(tmp, sizeof(tmp), "%.*s%s.~twinfs.%d.%" PRIu64,
			 slash ? (int)(slash - e->path) : 0, e->path, slash ? "/" : "",
			 (int)getpid(), ++p->tmp_seq);
		if (strlen(tmp) <= PROTO_PATH_MAX)
			peer_path = tmp;
	}
	fd = openat(p->rootfd, e->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;	/* gone since the walk: the next run sees it */
	if (fd < 0)
		return pf_fail(c, -errno, "cannot read", e->path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;	/* replaced since the walk */
	}
	op.path = peer_path;
	op.mode = st.st_mode;
	op.uid = st.st_uid;
	op.gid = st.st_gid;
	rc = proto_encode_op(c->buf, p->seq, &op) < 0 ? -EINVAL : 0;
	if (rc == 0)
		rc = prefetch_xattrs(p->rootfd, fd, e->path, peer_path, p->seq, c->buf);
	if (rc < 0)
		pf_fail(c, rc, "cannot encode the metadata of", e->path);
	for (uint64_t off = 0; rc == 0 && off < (uint64_t)st.st_size; off += PF_BLOCK) {
		uint64_t left = (uint64_t)st.st_size - off;
		ssize_t n = pf_data(p, c, fd, peer_path, off, left < PF_BLOCK ? left : PF_BLOCK,
				    e->path);

		if (n <= 0) {
			rc = (int)n;
			break;
		}
		if (c->data >= PF_CHUNK_DATA && off + PF_BLOCK < (uint64_t)st.st_size)
			rc = pf_handover(p, c);
	}
	/* The attributes from before the reading: a write during it leaves
	 * the source's mtime newer than the peer's, so the next run sends
	 * the file again (taken after, it could mark stale content current) */
	if (rc == 0) {
		struct proto_attr a = { .path = peer_path, .mask = PF_META | JATTR_SIZE,
					.mode = st.st_mode & 07777, .uid = st.st_uid,
					.gid = st.st_gid, .size = (uint64_t)st.st_size,
					.mtime = st.st_mtim };

		rc = proto_encode_attr(c->buf, &a) < 0 ||
		     prefetch_caps(fd, peer_path, p->seq, c->buf) < 0 ?
		     pf_fail(c, -EINVAL, "cannot encode the attributes of", e->path) : 0;
	}
	if (rc == 0 && peer_path != e->path) {
		struct journal_op mv = { .type = JOP_RENAME, .path = peer_path, .path2 = e->path };

		rc = proto_encode_op(c->buf, p->seq, &mv) < 0 ?
		     pf_fail(c, -EINVAL, "cannot encode the rename of", e->path) : 0;
	}
	close(fd);
	if (rc == 0) {
		c->sent = true;
		c->size = (uint64_t)st.st_size;
	}
	return rc;
}

static void *pf_thread(void *arg)
{
	struct prefetch *p = arg;

	pthread_setname_np(pthread_self(), "tw-prefetch");
	for (size_t i = 0; i < p->pl->n; i++) {
		const struct plan_item *it = &p->pl->it[i];
		struct prefetch_chunk c = { .item = i };
		int rc;

		if (it->act != PLAN_FILE && it->act != PLAN_REPLACE)
			continue;
		c.buf = evbuffer_new();
		if (!c.buf) {
			c.rc = -ENOMEM;
			snprintf(c.err, sizeof(c.err), "out of memory");
		} else {
			rc = pf_item(p, it, &c);
			if (rc == -ECANCELED) {
				if (c.buf)
					evbuffer_free(c.buf);
				break;
			}
		}
		c.last = true;
		if (!pf_push(p, &c) || c.rc < 0)
			break;
	}
	if (p->cur)
		pf_block_put(p->cur);
	p->cur = NULL;
	pthread_mutex_lock(&p->mu);
	p->done = true;
	pthread_cond_signal(&p->cv_data);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int prefetch_start(int rootfd, const struct plan *pl, uint64_t seq, struct prefetch **out)
{
	struct prefetch *p = calloc(1, sizeof(*p));
	int rc = -ENOMEM;

	if (!p || !(p->q = calloc(PF_QUEUE, sizeof(*p->q))))
		goto fail;
	for (size_t i = 0; i < PF_BLOCKS; i++) {
		p->blocks[i].p = p;
		p->blocks[i].mem = malloc(PF_BLOCK);
		if (!p->blocks[i].mem)
			goto fail;
		p->free[p->n_free++] = &p->blocks[i];
	}
	p->rootfd = rootfd;
	p->pl = pl;
	p->seq = seq;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_data, NULL);
	pthread_cond_init(&p->cv_room, NULL);
	rc = -pthread_create(&p->thr, NULL, pf_thread, p);
	if (rc == 0) {
		*out = p;
		return 0;
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_data);
	pthread_cond_destroy(&p->cv_room);
fail:
	if (p) {
		for (size_t i = 0; i < PF_BLOCKS; i++)
			free(p->blocks[i].mem);
		free(p->q);
	}
	free(p);
	return rc;
}

void prefetch_stop(struct prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv_room);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thr, NULL);
	for (; p->n; p->n--, p->head = (p->head + 1) % PF_QUEUE)
		evbuffer_free(p->q[p->head].buf);
	/* every slice is freed now (the caller freed or sent what it took):
	 * the blocks are all back */
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_data);
	pthread_cond_destroy(&p->cv_room);
	for (size_t i = 0; i < PF_BLOCKS; i++)
		free(p->blocks[i].mem);
	free(p->q);
	free(p);
}
