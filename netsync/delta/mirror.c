/*
 * mirror — the client side of the convergence engine (mirror.h).
 *
 * Order on the wire, and why. TREE_REQ first; the peer walks its store
 * while this side walks the source on a thread, and its ENTRY frames
 * arrive sorted. Then the plan's items in tree order, so a folder exists
 * on the peer before anything in it: creations, links, renames (a moved
 * file reaches its new folder, made just before), attributes. A changed
 * large file gets a HASH_REQ where its item is and the walk goes on: the
 * peer answers in order (HASHES), at most MC_PENDING_MAX requests are
 * outstanding, and whenever answers are there the differing blocks are
 * sent, then the file's ATTR (size, times: the writes moved its mtime)
 * and a FILE_CHECK that the peer verifies against its own blocks. Then
 * the PRUNEs of --delete (after the renames, which move files out of
 * folders that go), then every touched folder's ATTR (what happened in
 * it moved its mtime), then BATCH_END; the peer makes it all durable
 * (syncfs) and ACKs. Every OP carries seq 1: the peer's receiver runs
 * without STATE/applied for a mirror.
 *
 * Changed small files go to a temporary name in their folder and are
 * renamed over the old one, so a reader never sees half a file; large
 * files are written in place (a copy would double the space and the
 * writes) and the FILE_CHECK proves the result.
 */
#include "netsync/delta/mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/progress.h"
#include "netsync/delta/blockhash.h"
#include "netsync/delta/exclude.h"
#include "netsync/delta/hashcache.h"
#include "netsync/delta/inventory.h"
#include "netsync/delta/plan.h"
#include "netsync/delta/prefetch.h"
#include "netsync/wire/link.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

#define MC_SEQ 1
#define MC_FLUSH (1u << 20)	/* send the output buffer at this size */
#define MC_PENDING_MAX 64	/* HASH_REQs outstanding */
#define MC_DELTA_MIN_BLOCKS 2	/* smaller changed files are replaced whole */

struct mc_pend {
	const struct plan_item *it;
	struct blockhash peer;	/* assembled from HASHES */
};

struct mc {
	struct link *l;
	const struct mirror_opts *o;
	struct mirror_stats *st;
	int rootfd;
	uint32_t bs;
	struct evbuffer *out;
	uint8_t *buf;		/* PROTO_BLOCK_SIZE */
	struct mc_pend *pend;	/* a FIFO: [head, n) */
	size_t head, n, cap;
	uint64_t tmp_seq;
	struct progress pr;
	uint64_t done_bytes, done_files;
	struct prefetch *pf;	/* whole files read ahead */
};

/* ---- errors ---- */

static int mc_fail(struct mc *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int mc_fail(struct mc *c, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!c->st->error[0]) {
		va_start(ap, fmt);
		vsnprintf(c->st->error, sizeof(c->st->error), fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* An ERROR frame from the peer: its text, and an errno for its code. */
static int mc_peer_error(struct mc *c, const struct proto_frame *f)
{
	struct proto_error e;

	if (proto_decode_error(f, &e) < 0)
		return mc_fail(c, -EBADMSG, "a malformed ERROR from the peer");
	switch (e.code) {
	case PROTO_E_ROLE:
	case PROTO_E_BUSY:
	case PROTO_E_SHUTDOWN:
		return mc_fail(c, -ECONNREFUSED, "the peer refused: %s", e.text);
	case PROTO_E_PATH:
		return mc_fail(c, -EINVAL, "the peer refused a path: %s", e.text);
	case PROTO_E_BADFRAME:
	case PROTO_E_BADHASH:
	case PROTO_E_VERSION:
		return mc_fail(c, -EPROTO, "the peer rejected the stream: %s", e.text);
	default:
		return mc_fail(c, -EIO, "the peer failed to apply: %s", e.text);
	}
}

static int mc_link_error(struct mc *c, int rc)
{
	struct proto_frame f;

	/* A peer that fails sends ERROR, then closes: a send that meets the
	 * closed socket reports its reason (No space left on device), not
	 * the broken pipe. */
	if (rc == -EPIPE || rc == -ECONNRESET || rc == -ECONNABORTED)
		while (link_recv(c->l, &f, false) == 1)
			if (f.h.type == PROTO_ERROR)
				return mc_peer_error(c, &f);
	if (rc == -EBADMSG)
		return mc_fail(c, rc, "a bad frame from the peer");
	if (rc == -ETIMEDOUT)
		return mc_fail(c, rc, "the peer did not answer for %d s", c->l->timeout_ms / 1000);
	return mc_fail(c, rc, "the connection to the peer failed: %s", strerror(-rc));
}

/* ---- output ---- */

static int mc_flush(struct mc *c)
{
	int rc = link_send(c->l, c->out);

	return rc < 0 ? mc_link_error(c, rc) : 0;
}

static int mc_maybe_flush(struct mc *c)
{
	return evbuffer_get_length(c->out) >= MC_FLUSH ? mc_flush(c) : 0;
}

static int mc_op(struct mc *c, const struct journal_op *op)
{
	if (proto_encode_op(c->out, MC_SEQ, op) < 0)
		return mc_fail(c, -EINVAL, "cannot encode %s for %s (name or value too long?)",
			       proto_op_name(op->type), op->path);
	return mc_maybe_flush(c);
}

/* ATTR of PATH from ST (MASK says which fields). */
static int mc_attr(struct mc *c, const char *path, uint32_t mask, const struct stat *st)
{
	struct proto_attr a = { .path = path, .mask = mask, .mode = st->st_mode & 07777,
				.uid = st->st_uid, .gid = st->st_gid,
				.size = (uint64_t)st->st_size, .mtime = st->st_mtim };

	if (proto_encode_attr(c->out, &a) < 0)
		return mc_fail(c, -EINVAL, "cannot encode the attributes of %s", path);
	return mc_maybe_flush(c);
}

/* prefetch_caps of the source's PATH (FD open on it, or -1) as PEER_PATH,
 * after its ATTR. */
static int mc_caps(struct mc *c, int fd, const char *path, const char *peer_path)
{
	int own = fd < 0 ? openat(c->rootfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				  O_NOCTTY | O_CLOEXEC) : -1;
	int rc = fd >= 0 || own >= 0 ? prefetch_caps(fd < 0 ? own : fd, peer_path, MC_SEQ,
						     c->out) : 0;

	if (own >= 0)
		close(own);
	if (rc < 0)
		return mc_fail(c, rc, "cannot encode the capabilities of %s", path);
	return mc_maybe_flush(c);
}

/* ATTR from an inventory entry (no size). */
static int mc_attr_entry(struct mc *c, const struct proto_entry *e, uint32_t mask)
{
	struct stat st = { .st_mode = e->mode, .st_uid = e->uid, .st_gid = e->gid };

	st.st_mtim.tv_sec = e->mtime_ns / 1000000000;
	st.st_mtim.tv_nsec = e->mtime_ns % 1000000000;
	if (st.st_mtim.tv_nsec < 0) {
		st.st_mtim.tv_nsec += 1000000000;
		st.st_mtim.tv_sec--;
	}
	return mc_attr(c, e->path, mask, &st);
}

#define MC_META (JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_MTIME)

/* The source's replicated xattrs of PATH as PEER_PATH's whole xattr state
 * (prefetch_xattrs). */
static int mc_xattrs(struct mc *c, const char *path, const char *peer_path)
{
	/* the root's own ("" on the wire) is read as "." */
	int rc = prefetch_xattrs(c->rootfd, -1, *path ? path : ".", peer_path, MC_SEQ, c->out);

	if (rc < 0)
		return mc_fail(c, rc, "cannot encode the xattrs of %s: %s", path, strerror(-rc));
	return mc_maybe_flush(c);
}

/* Opens the source's regular file PATH. */
static int mc_open(struct mc *c, const char *path, struct stat *st)
{
	int fd = openat(c->rootfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* DATA of [off, off + len) of FD as PEER_PATH's; the bytes are sent before
 * the buffer is reused. */
static int mc_data(struct mc *c, int fd, const char *peer_path, uint64_t off, size_t len,
		   const char *path)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, c->buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return mc_fail(c, -errno, "cannot read %s: %s", path, strerror(errno));
		if (n == 0)
			break;	/* shrunk: the ATTR's size says so */
		got += (size_t)n;
	}
	c->st->bytes_read += got;
	if (!got)
		return 0;
	if (proto_encode_data(c->out, peer_path, off, c->buf, (uint32_t)got, NULL, NULL,
			      NULL) < 0)
		return mc_fail(c, -ENOMEM, "cannot encode data of %s", path);
	c->done_bytes += got;
	progress_update(&c->pr, c->done_bytes);
	return mc_flush(c);
}

/* The whole content of the source's PATH sent as PEER_PATH (CREATE, xattrs,
 * DATA, ATTR). */
static int mc_whole(struct mc *c, const struct proto_entry *e, const char *peer_path)
{
	struct journal_op op = { .type = JOP_CREATE, .path = peer_path };
	struct stat st;
	int fd = mc_open(c, e->path, &st), rc;

	if (fd == -ENOENT || fd == -ESTALE)
		return 0;	/* gone or replaced since the walk: the next run sees it */
	if (fd < 0)
		return mc_fail(c, fd, "cannot read %s: %s", e->path, strerror(-fd));
	op.mode = st.st_mode;
	op.uid = st.st_uid;
	op.gid = st.st_gid;
	rc = mc_op(c, &op);
	if (rc == 0)
		rc = mc_xattrs(c, e->path, peer_path);
	for (uint64_t off = 0; rc == 0 && off < (uint64_t)st.st_size; off += PROTO_BLOCK_SIZE) {
		uint64_t left = (uint64_t)st.st_size - off;

		rc = mc_data(c, fd, peer_path, off, left < PROTO_BLOCK_SIZE ? left :
			     PROTO_BLOCK_SIZE, e->path);
	}
	/* the attributes from before the reading (prefetch.c says why) */
	if (rc == 0)
		rc = mc_attr(c, peer_path, MC_META | JATTR_SIZE, &st);
	if (rc == 0)
		rc = mc_caps(c, fd, e->path, peer_path);
	close(fd);
	if (rc == 0) {
		c->st->files_whole++;
		c->st->bytes_whole += (uint64_t)st.st_size;
	}
	return rc;
}

/* ---- block deltas ---- */

static int mc_delta_finish(struct mc *c, struct mc_pend *p);

/* Handles one frame from the peer while items are sent: HASHES for the
 * oldest pending file. 0, or -errno to stop. */
static int mc_on_frame(struct mc *c, const struct proto_frame *f)
{
	struct proto_hashes m;
	struct mc_pend *p;
	int rc;

	switch (f->h.type) {
	case PROTO_ERROR:
		return mc_peer_error(c, f);
	case PROTO_HEARTBEAT:
		return 0;
	case PROTO_HASHES:
		break;
	default:
		return mc_fail(c, -EBADMSG, "an unexpected %s frame from the peer",
			       proto_type_name(f->h.type));
	}
	if (c->head == c->n)
		return mc_fail(c, -EBADMSG, "a hash list nobody asked for");
	p = &c->pend[c->head];
	if (proto_decode_hashes(f, &m) < 0)
		return mc_fail(c, -EBADMSG, "a malformed hash list for %s", p->it->s->path);
	rc = blockhash_add_frame(&p->peer, p->it->s->path, c->bs, &m);
	if (rc == -EBADMSG || rc == -ENOMEM)
		return mc_fail(c, rc, "an inconsistent hash list for %s from the peer",
			       p->it->s->path);
	if (rc == 0)
		return 0;
	c->head++;
	if (rc < 0) {
		/* the peer has no such file (anymore): send it whole */
		blockhash_free(&p->peer);
		return mc_whole(c, p->it->s, p->it->s->path);
	}
	rc = mc_delta_finish(c, p);
	blockhash_free(&p->peer);
	return rc;
}

/* Reads what the peer sent; with WAIT, blocks until the oldest pending
 * request is answered (or until fewer than MAX are pending). */
static int mc_replies(struct mc *c, bool wait, size_t max)
{
	struct proto_frame f;
	int rc;

	for (;;) {
		bool need = wait && c->n - c->head > max;

		if (need && (rc = mc_flush(c)) < 0)
			return rc;
		rc = link_recv(c->l, &f, need);
		if (rc < 0)
			return mc_link_error(c, rc);
		if (rc == 0)
			return 0;
		rc = mc_on_frame(c, &f);
		if (rc < 0)
			return rc;
		if (c->head == c->n) {
			c->head = c->n = 0;
			if (wait)
				return 0;
		}
	}
}

static int mc_delta_start(struct mc *c, const struct plan_item *it)
{
	struct proto_hash_req q = { .block_size = c->bs, .path = it->s->path };
	int rc = ARRAY_GROW(c->pend, c->cap, c->n + 1, 64);

	if (rc < 0)
		return mc_fail(c, rc, "out of memory");
	memset(&c->pend[c->n], 0, sizeof(c->pend[0]));
	c->pend[c->n++].it = it;
	if (proto_encode_hash_req(c->out, &q) < 0)
		return mc_fail(c, -EINVAL, "cannot ask for the hashes of %s", it->s->path);
	rc = mc_maybe_flush(c);
	if (rc == 0 && c->n - c->head >= MC_PENDING_MAX)
		rc = mc_replies(c, true, MC_PENDING_MAX / 2);
	return rc;
}

/* The peer's list of P's file is complete: send the blocks that differ,
 * the ATTR, and the check. */
static int mc_delta_finish(struct mc *c, struct mc_pend *p)
{
	const struct proto_entry *e = p->it->s;
	struct proto_file_check fc = { .path = e->path, .block_size = c->bs };
	struct blockhash mine;
	struct stat st;
	int fd = mc_open(c, e->path, &st), rc = 0;

	if (fd == -ENOENT || fd == -ESTALE)
		return 0;
	if (fd < 0)
		return mc_fail(c, fd, "cannot read %s: %s", e->path, strerror(-fd));
	rc = c->o->cache && !c->o->checksum ?
	     hashcache_lookup_blocks(c->o->cache, &st, c->bs, &mine) : 0;
	if (rc <= 0) {
		rc = blockhash_fd(fd, c->bs, &mine);
		if (rc < 0) {
			close(fd);
			return mc_fail(c, rc, "cannot read %s: %s", e->path, strerror(-rc));
		}
		c->st->bytes_read += mine.bytes_read;
		if (c->o->cache)
			hashcache_store_blocks(c->o->cache, &st, &mine);
	}
	for (uint32_t i = 0; rc >= 0 && i < mine.n; i++) {
		uint64_t off = (uint64_t)i * c->bs, len = mine.size - off;

		if (len > c->bs)
			len = c->bs;
		if (blockhash_same(&mine, &p->peer, i)) {
			c->st->bytes_matched += len;
			c->done_bytes += len;
			continue;
		}
		rc = mc_data(c, fd, e->path, off, (size_t)len, e->path);
		c->st->bytes_delta += len;
	}
	if (rc >= 0)
		rc = mc_attr(c, e->path, MC_META | JATTR_SIZE, &st);
	if (rc >= 0)
		rc = mc_caps(c, fd, e->path, e->path);
	if (rc >= 0) {
		fc.size = mine.size;
		blockhash_digest(&mine, fc.digest);
		rc = proto_encode_file_check(c->out, &fc) < 0 ?
		     mc_fail(c, -EINVAL, "cannot encode the check of %s", e->path) : 0;
	}
	blockhash_free(&mine);
	close(fd);
	if (rc >= 0) {
		c->st->files_delta++;
		progress_files(&c->pr, ++c->done_files);
	}
	return rc < 0 ? rc : mc_maybe_flush(c);
}

/*
 * A whole-file item (PLAN_FILE, PLAN_REPLACE), the Ith of the plan: its
 * chunks from the read-ahead (prefetch.h), in order. Before waiting for
 * one, what is encoded goes out (it holds the read-ahead's blocks) and
 * the peer's answers are read.
 */
static int mc_take(struct mc *c, size_t i)
{
	struct prefetch_chunk ch;
	int rc;

	for (;;) {
		rc = prefetch_next(c->pf, &ch, false);
		if (rc == 0) {
			rc = mc_flush(c);
			if (rc == 0 && c->n > c->head)
				rc = mc_replies(c, false, 0);
			if (rc < 0)
				return rc;
			if (prefetch_next(c->pf, &ch, true) == 0)
				return mc_fail(c, -EIO, "the read-ahead stopped early");
		}
		if (ch.item != i || ch.rc < 0) {
			evbuffer_free(ch.buf);
			if (ch.item != i)
				return mc_fail(c, -EIO, "the read-ahead is out of order");
			return mc_fail(c, ch.rc, "%s", ch.err);
		}
		rc = evbuffer_add_buffer(c->out, ch.buf);
		evbuffer_free(ch.buf);
		if (rc < 0)
			return mc_fail(c, -ENOMEM, "out of memory");
		c->st->bytes_read += ch.data;
		c->done_bytes += ch.data;
		progress_update(&c->pr, c->done_bytes);
		if (ch.last) {
			if (ch.sent) {
				c->st->files_whole++;
				c->st->bytes_whole += ch.size;
			}
			progress_files(&c->pr, ++c->done_files);
			return mc_maybe_flush(c);
		}
		rc = mc_maybe_flush(c);
		if (rc < 0)
			return rc;
	}
}

/* ---- items ---- */

static int mc_item(struct mc *c, const struct plan_item *it, size_t i)
{
	const struct proto_entry *e = it->s;
	struct journal_op op = { .path = e ? e->path : NULL };
	int rc = 0;

	switch (it->act) {
	case PLAN_MKDIR:
		op.type = JOP_MKDIR;
		op.mode = e->mode;
		op.uid = e->uid;
		op.gid = e->gid;
		rc = mc_op(c, &op);
		if (rc == 0 && (e->n_xattrs || it->p))
			rc = mc_xattrs(c, e->path, e->path);
		c->st->created_other++;
		return rc;
	case PLAN_FILE:
	case PLAN_REPLACE:
		return mc_take(c, i);
	case PLAN_RENAME:
		op.type = JOP_RENAME;
		op.path = it->from;
		op.path2 = e->path;
		rc = mc_op(c, &op);
		c->st->renamed++;
		/* the moved content is checked and fixed like a changed file */
		__attribute__((fallthrough));
	case PLAN_DELTA:
		if (rc == 0 && (it->why & PLAN_W_XATTR))
			rc = mc_xattrs(c, e->path, e->path);
		return rc ? rc : mc_delta_start(c, it);
	case PLAN_LINK:
		op.type = JOP_LINK;
		op.path = e->link;
		op.path2 = e->path;
		c->st->linked++;
		return mc_op(c, &op);
	case PLAN_SYMLINK:
		op.type = JOP_SYMLINK;
		op.flags = e->nlink > 1 ? JCREATE_F_LINKED : 0;	/* as before: links kept */
		op.path2 = e->target ? e->target : "";
		op.uid = e->uid;
		op.gid = e->gid;
		rc = mc_op(c, &op);
		c->st->created_other++;
		return rc ? rc : mc_attr_entry(c, e, JATTR_UID | JATTR_GID | JATTR_MTIME);
	case PLAN_SPECIAL:
		op.type = JOP_MKNOD;
		op.flags = e->nlink > 1 ? JCREATE_F_LINKED : 0;
		op.mode = e->mode;
		op.rdev = e->rdev;
		op.uid = e->uid;
		op.gid = e->gid;
		rc = mc_op(c, &op);
		if (rc == 0 && e->n_xattrs)
			rc = mc_xattrs(c, e->path, e->path);
		c->st->created_other++;
		return rc ? rc : mc_attr_entry(c, e, MC_META);
	case PLAN_META:
		c->st->meta++;
		if (it->why & PLAN_W_XATTR)
			rc = mc_xattrs(c, e->path, e->path);
		if (rc || S_ISDIR(e->mode))
			return rc;	/* a folder's attributes go last */
		rc = mc_attr_entry(c, e, S_ISLNK(e->mode) ? MC_META & ~JATTR_MODE : MC_META);
		return rc || !S_ISREG(e->mode) ? rc : mc_caps(c, -1, e->path, e->path);
	case PLAN_DELETE:
		c->st->deleted++;
		return 0;
	}
	return 0;
}

static int mc_prunes(struct mc *c, const struct plan *pl)
{
	for (size_t i = 0; i < pl->n_pr; i++) {
		const struct plan_prune *pr = &pl->pr[i];
		size_t off = 0;

		if (!pr->dir)
			continue;
		do {
			struct proto_prune m = { .seq = MC_SEQ, .path = pr->dir,
						 .names = pr->names ? pr->names + off : "" };
			size_t n = 0;

			/* whole names, at most PROTO_PRUNE_CHUNK bytes per frame */
			while (off + n < pr->len) {
				size_t l = strlen(pr->names + off + n) + 1;

				if (n && n + l > PROTO_PRUNE_CHUNK)
					break;
				n += l;
			}
			m.names_len = n;
			if (off + n >= pr->len)
				m.flags = PROTO_PRUNE_F_LAST;
			if (proto_encode_prune(c->out, &m) < 0)
				return mc_fail(c, -EINVAL, "cannot encode the names of %s", pr->dir);
			off += n;
		} while (off < pr->len);
		if (mc_maybe_flush(c) < 0)
			return -EIO;
	}
	return 0;
}

/* BATCH_END, then the ACK once the peer made everything durable. */
static int mc_commit(struct mc *c)
{
	struct proto_frame f;
	uint64_t seq;
	int rc;

	if (proto_encode_batch_end(c->out, MC_SEQ) < 0)
		return mc_fail(c, -ENOMEM, "out of memory");
	rc = mc_flush(c);
	while (rc == 0) {
		rc = link_recv(c->l, &f, true);
		if (rc < 0)
			return mc_link_error(c, rc);
		if (f.h.type == PROTO_ACK && proto_decode_seq(&f, &seq) == 0 && seq == MC_SEQ)
			return 0;
		rc = mc_on_frame(c, &f);
	}
	return rc;
}

/* ---- the two inventories ---- */

struct mc_walk {
	const char *root;
	struct inventory_opts io;
	struct inventory inv;
	int rc;
};

static void *mc_walk_run(void *arg)
{
	struct mc_walk *w = arg;

	w->rc = inventory_walk(w->root, &w->io, &w->inv);
	return NULL;
}

/* Asks for the peer's entries of ROOT and adds them to INV. */
static int mc_fetch(struct mc *c, const char *root, struct inventory *inv)
{
	struct proto_tree_req q = { .path = root, .flags = c->o->checksum ?
				    PROTO_TREE_F_CHECKSUM : 0 };
	struct proto_frame f;
	size_t first = inv->n;
	uint64_t count;
	uint32_t err;
	int rc;

	if (*root)
		q.flags |= PROTO_TREE_F_SUBTREE;
	if (proto_encode_tree_req(c->out, &q) < 0)
		return mc_fail(c, -EINVAL, "cannot ask for the entries of %s", root);
	rc = mc_flush(c);
	while (rc == 0) {
		struct proto_entry e;

		rc = link_recv(c->l, &f, true);
		if (rc < 0)
			return mc_link_error(c, rc);
		rc = 0;
		if (f.h.type == PROTO_ERROR)
			return mc_peer_error(c, &f);
		if (f.h.type == PROTO_HEARTBEAT)
			continue;
		if (f.h.type == PROTO_ENTRIES_END) {
			if (proto_decode_entries_end(&f, &count, &err) < 0 ||
			    count != inv->n - first)
				return mc_fail(c, -EBADMSG, "the peer's list of entries is "
					       "inconsistent (count)");
			if (err == ENOENT || err == ENOTDIR)
				return 0;	/* the peer lacks the subtree */
			if (err)
				return mc_fail(c, -EIO, "the peer could not read its store: %s",
					       strerror((int)err > 0 && err < 4096 ? (int)err : EIO));
			return 0;
		}
		/* untrusted: well-formed, inside the subtree, in tree order; the
		 * root's own entry only first, and only of the whole tree */
		if (proto_decode_entry(&f, &e) == 0 && (e.flags & PROTO_ENTRY_F_ROOT)) {
			bool bad = false;

			if (!inventory_take_root(inv, &e, &bad) || bad || *root || inv->n > first)
				return mc_fail(c, -EBADMSG, "a malformed root entry from the peer");
			continue;
		}
		if (proto_decode_entry(&f, &e) < 0 || path_check(e.path, false) < 0 ||
		    (*root && !(strncmp(e.path, root, strlen(root)) == 0 &&
				(e.path[strlen(root)] == '/' || !e.path[strlen(root)]))) ||
		    (inv->n > first && inventory_path_cmp(inv->e[inv->n - 1].path, e.path) >= 0) ||
		    (e.link && path_check(e.link, false) < 0))
			return mc_fail(c, -EBADMSG, "a malformed, escaping or out-of-order entry "
				       "from the peer");
		rc = inventory_add(inv, &e);
		if (rc < 0)
			return mc_fail(c, rc, "out of memory");
	}
	return rc;
}

/* Both inventories: the source's on a thread while the peer's arrives. */
static int mc_inventories(struct mc *c, const char *src_root, struct inventory *src,
			  struct inventory *peer)
{
	size_t n = c->o->n_roots ? c->o->n_roots : 1;
	int rc = 0;

	for (size_t r = 0; rc == 0 && r < n; r++) {
		const char *root = c->o->n_roots ? c->o->roots[r] : "";
		struct mc_walk w = { .root = src_root, .io = {
			.hash_content = c->o->checksum, .replicated_xattrs = true,
			.sub = root, .with_sub = *root != '\0',
			.exclude = c->o->exclude ? exclude_cb : NULL,
			.exclude_arg = (void *)c->o->exclude } };
		pthread_t thr;

		if (pthread_create(&thr, NULL, mc_walk_run, &w) != 0)
			return mc_fail(c, -EAGAIN, "cannot start a thread");
		rc = mc_fetch(c, root, peer);
		pthread_join(thr, NULL);
		if (rc == 0 && w.rc < 0 && !(w.rc == -ENOENT && *root))
			rc = mc_fail(c, w.rc, "cannot read %s%s%s: %s", src_root, *root ? "/" : "",
				     root, strerror(-w.rc));
		for (size_t i = 0; rc == 0 && i < w.inv.n; i++)
			rc = inventory_add(src, &w.inv.e[i]);
		if (w.inv.has_root) {	/* its strings are not the walk's */
			src->root = w.inv.root;
			src->has_root = true;
		}
		inventory_free(&w.inv);
	}
	inventory_sort(src);
	inventory_sort(peer);
	return rc;
}

/* A root the source lacks goes on the peer (mirror.h, roots). */
static int mc_remove_roots(struct mc *c, const struct inventory *src,
			   const struct inventory *peer)
{
	for (size_t r = 0; r < c->o->n_roots && c->o->delete; r++) {
		const char *root = c->o->roots[r];
		long at = inventory_find(peer, root);
		struct journal_op op = { .path = root };
		int rc;

		if (!*root || at < 0 || inventory_find(src, root) >= 0)
			continue;
		if (S_ISDIR(peer->e[at].mode)) {
			struct proto_prune m = { .seq = MC_SEQ, .path = root, .names = "",
						 .flags = PROTO_PRUNE_F_LAST };

			if (proto_encode_prune(c->out, &m) < 0)
				return mc_fail(c, -EINVAL, "cannot encode the names of %s", root);
			op.type = JOP_RMDIR;
		} else {
			op.type = JOP_UNLINK;
		}
		rc = mc_op(c, &op);
		if (rc < 0)
			return rc;
		c->st->deleted++;
	}
	return 0;
}

static int mc_execute(struct mc *c, const struct plan *pl)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < pl->n; i++) {
		rc = mc_item(c, &pl->it[i], i);
		if (rc == 0 && c->n > c->head)
			rc = mc_replies(c, false, 0);
	}
	if (rc == 0 && c->n > c->head)
		rc = mc_replies(c, true, 0);
	if (rc == 0)
		rc = mc_prunes(c, pl);
	for (size_t i = 0; rc == 0 && i < pl->n_dirs; i++)
		rc = mc_attr_entry(c, pl->dirs[i], MC_META);
	return rc;
}

int mirror_run(struct link *l, const char *src_root, const struct mirror_opts *o,
	       struct mirror_stats *st)
{
	struct mc c = { .l = l, .o = o, .st = st, .bs = o->block_size ? o->block_size :
			MIRROR_BLOCK_SIZE };
	struct inventory src = { 0 }, peer = { 0 };
	struct plan pl = { 0 };
	struct plan_opts po = { .delete = o->delete, .checksum = o->checksum,
				.delta_min = MC_DELTA_MIN_BLOCKS * c.bs, .exclude = o->exclude };
	double t0 = clock_mono_s();
	uint64_t tx0 = l->tx_bytes, rx0 = l->rx_bytes;
	int rc;

	memset(st, 0, sizeof(*st));
	link_rate_restart(l);	/* --bwlimit holds over this run's own time */
	if (!proto_block_size_ok(c.bs))
		return mc_fail(&c, -EINVAL, "block size %u is not a power of two in [%u, %u]",
			       c.bs, PROTO_DELTA_BLOCK_MIN, PROTO_DELTA_BLOCK_MAX);
	c.rootfd = open(src_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.rootfd < 0)
		return mc_fail(&c, -errno, "cannot open %s: %s", src_root, strerror(errno));
	c.out = evbuffer_new();
	c.buf = malloc(PROTO_BLOCK_SIZE);
	if (!c.out || !c.buf) {
		rc = mc_fail(&c, -ENOMEM, "out of memory");
		goto out;
	}
	rc = mc_inventories(&c, src_root, &src, &peer);
	if (rc == 0)
		rc = plan_build(&src, &peer, &po, &pl);
	if (rc < 0) {
		mc_fail(&c, rc, "out of memory");
		goto out;
	}
	st->entries_src = src.n;
	st->entries_peer = peer.n;
	st->unchanged = pl.unchanged;
	for (size_t i = 0; o->item && i < pl.n; i++) {
		char line[2 * PROTO_PATH_MAX + 64];

		plan_itemize(&pl.it[i], line, sizeof(line));
		o->item(line, o->item_arg);
	}
	if (o->dry_run) {
		st->files_whole = pl.files_whole;
		st->bytes_whole = pl.bytes_whole;
		st->files_delta = pl.files_delta;
		st->deleted = pl.deletes;
		goto out;
	}
	progress_init(&c.pr, stderr, o->progress, "mirror", pl.bytes_whole + pl.bytes_delta,
		      pl.files_whole + pl.files_delta);
	rc = prefetch_start(c.rootfd, &pl, MC_SEQ, &c.pf);
	if (rc < 0) {
		mc_fail(&c, rc, "cannot start the read-ahead: %s", strerror(-rc));
		goto out;
	}
	rc = mc_remove_roots(&c, &src, &peer);
	if (rc == 0)
		rc = mc_execute(&c, &pl);
	if (rc == 0)
		rc = mc_commit(&c);
	progress_done(&c.pr);
out:
	st->wire_tx = l->tx_bytes - tx0;
	st->wire_rx = l->rx_bytes - rx0;
	st->seconds = clock_mono_s() - t0;
	for (size_t i = c.head; i < c.n; i++)
		blockhash_free(&c.pend[i].peer);
	free(c.pend);
	plan_free(&pl);
	inventory_free(&src);
	inventory_free(&peer);
	free(c.buf);
	/* before the read-ahead goes: c.out may hold references to its blocks */
	if (c.out)
		evbuffer_free(c.out);
	prefetch_stop(c.pf);
	close(c.rootfd);
	return rc;
}
