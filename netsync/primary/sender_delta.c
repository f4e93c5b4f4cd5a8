/*
 * sender_delta — the block-hash delta of the live replicator's resyncs
 * (docs/protocol.md, "Delta: trees and block hashes"; the engine is
 * netsync/delta/). Where the sender used to send a file whole because it
 * could not know what the peer holds, it now asks (HASH_REQ) and sends
 * only the blocks whose XXH3-128 differ:
 *   - a file of a walk (baseline, NEEDS_SCAN, repair): both sides read and
 *     hash it (see sender_delta_walk for why not by size and mtime); the
 *     walk goes on while answers are out (at most DELTA_OUT_MAX), and each
 *     answered file is queued as a repair, in walk order, so no round trip
 *     per file stalls the stream;
 *   - a file marked by crash recovery (journal_dirty.recovered): asked
 *     without the quick check (its mtime says nothing about what the peer
 *     got before the crash), all of a batch's at once, before its data.
 * The peer answers in the order asked, on the same connection, after
 * applying everything sent before the question. Runs on the primary
 * thread's event_base only (sender_int.h).
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/array.h"
#include "common/log.h"
#include "netsync/wire/proto.h"

static struct sdelta *sdelta_new(const char *path, int fd, bool walk, uint64_t size)
{
	struct sdelta *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	d->fd = fd;
	d->walk = walk;
	d->size = size;
	return d;
}

static void sdelta_free(struct sdelta *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	blockhash_free(&d->peer);
	free(d->path);
	free(d);
}

/* Sends the question and queues D (taken, also on failure). */
static int sender_delta_ask(struct sender *s, struct evbuffer *out, struct sdelta *d,
			    uint32_t flags)
{
	struct cursor *c = &s->c;
	struct proto_hash_req q = { .block_size = s->delta_bs, .flags = flags,
				    .path = d->path };
	int rc = ARRAY_GROW(c->dq, c->dq_cap, c->dq_n + 1, 64);

	if (rc < 0) {
		sdelta_free(d);
		return rc;
	}
	c->dq[c->dq_n++] = d;
	rc = proto_encode_hash_req(out, &q);
	if (rc < 0) {
		log_error("cannot ask the peer for block hashes", "path=%s", d->path);
		return rc;
	}
	s->resync_left_files++;
	s->resync_left_bytes += d->size;
	return 0;
}

int sender_delta_walk(struct sender *s, struct evbuffer *out, const char *path, int fd,
		      const struct stat *st)
{
	struct sdelta *d = sdelta_new(path, fd, true, (uint64_t)st->st_size);

	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	/* No quick check: after a crash a file's mtime can equal the peer's
	 * while its content does not (a write in the same clock tick as the
	 * one the peer got, its record lost), and a walk cannot tell which
	 * files those are; so both sides compare blocks (docs/protocol.md),
	 * each from its hash cache when the file is unchanged since. */
	return sender_delta_ask(s, out, d, 0);
}

/*
 * The repairs queued by the records (the paths a replay names after the
 * peer was interrupted mid-apply) are sent whole unless asked for here,
 * after every record of the batch, so that the answer describes what the
 * file phase will write over. ONE_NAME: a peer file of several names is
 * not a base to write into (its other names would change too); it is then
 * sent whole, as before. A walk file's repair has its answer already.
 */
static int sender_delta_repairs(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	size_t nf = cursor_n_files(c);
	int rc = 0;

	for (size_t i = 0; i < c->n_repair && rc == 0; i++) {
		const char *path = c->repair[i].path;
		struct sdelta *d;
		struct stat st;

		if (cursor_sdelta(c, nf + i) || fstatat(s->store_fd, path, &st,
							AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		d = sdelta_new(path, -1, false, (uint64_t)st.st_size);
		if (!d)
			return -ENOMEM;
		rc = sender_delta_ask(s, out, d, PROTO_HASH_F_ONE_NAME);
		if (rc == 0)
			rc = cursor_attach_rdelta(c, i, d);
	}
	return rc;
}

int sender_delta_files(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	const struct journal_batch *b = c->cur->b;
	int rc = 0;

	c->fasked = true;
	rc = sender_delta_repairs(s, out);
	for (size_t i = 0; i < b->n_files && rc == 0; i++) {
		const struct journal_dirty *f = &b->files[i];
		struct sdelta *d;

		if (!f->whole || !f->recovered || !f->path || !*f->path)
			continue;
		if (!c->fdelta) {
			c->fdelta = calloc(b->n_files, sizeof(*c->fdelta));
			if (!c->fdelta)
				return -ENOMEM;
		}
		d = sdelta_new(f->path, -1, false, f->bytes);
		if (!d)
			return -ENOMEM;
		c->fdelta[i] = d;
		rc = sender_delta_ask(s, out, d, 0);
	}
	return rc;
}

/* The questions of a repair record: one per regular file among SCOPES. 1
 * if any was asked, 0 if none, -errno. */
static int sender_delta_replace_ask(struct sender *s, struct evbuffer *out, uint64_t seq,
				    const char *const *scopes, size_t n)
{
	struct cursor *c = &s->c;
	int asked = 0, rc;

	free(c->rq);
	c->rq = calloc(n ? n : 1, sizeof(*c->rq));
	if (!c->rq)
		return -ENOMEM;
	c->rq_n = n;
	c->rq_seq = seq;
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (!*scopes[i] || fstatat(s->store_fd, scopes[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		c->rq[i] = sdelta_new(scopes[i], -1, false, (uint64_t)st.st_size);
		if (!c->rq[i])
			return -ENOMEM;
		rc = sender_delta_ask(s, out, c->rq[i], PROTO_HASH_F_ONE_NAME);
		if (rc < 0)
			return rc;
		asked = 1;
	}
	return asked;
}

int sender_delta_replace(struct sender *s, struct evbuffer *out, uint64_t seq,
			 const char *const *scopes, size_t n)
{
	struct cursor *c = &s->c;
	int rc = 0;

	if (!s->delta_bs) {
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = sender_put_replace(s, out, seq, scopes[i]);
		return rc;
	}
	if (c->rq_seq != seq) {
		rc = sender_delta_replace_ask(s, out, seq, scopes, n);
		if (rc != 0)
			return rc < 0 ? rc : 3;
	}
	for (size_t i = 0; i < c->rq_n; i++)
		if (c->rq[i] && !c->rq[i]->ready)
			return 3;
	/* Held as a regular file of one name: kept, and the walk of the path
	 * that follows asks again (after the batch's records) and sends the
	 * blocks that differ. Anything else there (missing, another type,
	 * other names) is removed first and the path sent anew. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct sdelta *d = i < c->rq_n ? c->rq[i] : NULL;

		if (d) {
			/* the answer only decided: the walk's question is counted */
			s->resync_left_files--;
			s->resync_left_bytes -= d->size;
		}
		rc = d && d->rc == 1 ? sender_put_path(s, out, seq, scopes[i]) :
		     sender_put_replace(s, out, seq, scopes[i]);
	}
	free(c->rq);
	c->rq = NULL;
	c->rq_n = 0;
	c->rq_seq = 0;
	return rc;
}

int sender_delta_on_hashes(struct sender *s, const struct proto_frame *fr)
{
	struct cursor *c = &s->c;
	struct proto_hashes m;
	struct sdelta *d;
	int rc;

	if (c->dq_head >= c->dq_n || proto_decode_hashes(fr, &m) < 0) {
		log_error("a hash list from the peer that was not asked for, or malformed",
			  "peer=%s", s->peer);
		return -EPROTO;
	}
	d = c->dq[c->dq_head];
	rc = blockhash_add_frame(&d->peer, d->path, s->delta_bs, &m);
	if (rc == 0)
		return 0;	/* more frames of this list follow */
	if (rc == -EBADMSG || rc == -ENOMEM) {
		log_error("an inconsistent hash list from the peer", "peer=%s path=%s",
			  s->peer, d->path);
		return -EPROTO;
	}
	/* 1: a list; -errno: the peer has no such file, or not as a file of
	 * one name when asked so (sent whole) */
	d->rc = rc;
	d->ready = true;
	c->dq_head++;
	return 0;
}

int sender_delta_next(struct sender *s)
{
	struct cursor *c = &s->c;

	while (c->dq_next < c->dq_head) {
		struct sdelta *d = c->dq[c->dq_next++];
		int rc;

		if (!d->walk)
			continue;	/* a batch file's: found through fdelta */
		rc = cursor_add_repair(c, d->path);
		if (rc < 0)
			return rc;
		if (c->n_repair == 0 || strcmp(c->repair[c->n_repair - 1].path, d->path) != 0)
			continue;	/* queued already: sent with that one */
		c->repair[c->n_repair - 1].fd = d->fd;
		d->fd = -1;
		rc = cursor_attach_rdelta(c, c->n_repair - 1, d);
		return rc < 0 ? rc : 1;
	}
	return 0;
}

size_t sender_delta_pending(const struct cursor *c)
{
	size_t n = 0;

	for (size_t i = c->dq_next; i < c->dq_n; i++)
		n += c->dq[i]->walk;
	return n;
}

size_t sender_delta_unanswered(const struct cursor *c)
{
	return c->dq_n - c->dq_head;
}

struct sdelta *cursor_sdelta(const struct cursor *c, size_t i)
{
	size_t n = cursor_n_files(c);

	if (i < n)
		return c->fdelta ? c->fdelta[i] : NULL;
	i -= n;
	return i < c->n_repair && c->rdelta && i < c->cap_rdelta ? c->rdelta[i] : NULL;
}

int cursor_attach_rdelta(struct cursor *c, size_t i, struct sdelta *d)
{
	if (i >= c->cap_rdelta) {
		size_t cap = c->cap_rdelta ? c->cap_rdelta * 2 : 16;
		struct sdelta **v;

		while (cap <= i)
			cap *= 2;
		v = realloc(c->rdelta, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + c->cap_rdelta, 0, (cap - c->cap_rdelta) * sizeof(*v));
		c->rdelta = v;
		c->cap_rdelta = cap;
	}
	c->rdelta[i] = d;
	return 0;
}

void cursor_free_deltas(struct cursor *c)
{
	for (size_t i = 0; i < c->dq_n; i++)
		sdelta_free(c->dq[i]);
	free(c->dq);
	free(c->fdelta);
	free(c->rdelta);
	free(c->rq);
	c->rq = NULL;
	c->rq_n = 0;
	c->rq_seq = 0;
	c->dq = NULL;
	c->fdelta = NULL;
	c->rdelta = NULL;
	c->dq_n = c->dq_cap = c->dq_head = c->dq_next = c->cap_rdelta = 0;
	c->fasked = false;
	c->dl = NULL;
}
