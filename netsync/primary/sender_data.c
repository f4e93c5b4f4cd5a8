/*
 * sender_data — the sender's cursor through a batch and the file data it
 * streams: opens each dirty or repaired file, preads its changed ranges
 * block by block into pooled buffers, puts DATA frames (skipping blocks
 * the peer holds, sentmap.c) and the ATTR that closes each file.
 * Runs only on the primary thread's event_base (sender_int.h).
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/xattrname.h"
#include "journal/journal.h"
#include "netsync/delta/hashcache.h"
#include "netsync/wire/proto.h"
#include "netsync/primary/sentmap.h"
#include "netsync/primary/treewalk.h"

/* ---- data buffer pool (loop thread only, see struct pool) ---- */

struct pool_buf {
	struct pool_buf *next;
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

void pool_close(struct pool *p)
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
size_t cursor_n_files(const struct cursor *c)
{
	if (c->baseline || c->walk || c->next_root < c->n_roots)
		return 0;
	return c->cur->b->n_files;
}

void cursor_reset(struct cursor *c)
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
	pathset_clear(&c->pruned);
	pathset_clear(&c->names_after);
	pathset_clear(&c->paths_after);
	pathset_clear(&c->inodes_after);
	cursor_forget_links(c);
	pathset_clear(&c->attrs_after);
	cursor_free_deltas(c);
	blockhash_free(&c->mine);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
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
	/* Unlinked (alive only through an fd, the journal's or a process's):
	 * no name here holds it, and the peer must end with none either. Its
	 * old name may be gone there already (a walk of the folder pruned it),
	 * where its data and xattr state would fail to apply. */
	if (!S_ISREG(c->st.st_mode) || c->st.st_nlink == 0)
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
		fd = fsutil_open_noatime(AT_FDCWD, proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	} else {
		fd = fsutil_open_noatime(s->store_fd, d->path, O_RDONLY | O_CLOEXEC |
					 O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	}
	if (fd < 0)
		return fd;
	c->fd = fd;
	c->own_fd = true;
out_stat:
	if (fstat(c->fd, &c->st) < 0) {
		int rc = -errno;

		cursor_close_file(c);
		return rc;
	}
	if (!S_ISREG(c->st.st_mode) || c->st.st_nlink == 0) {
		cursor_close_file(c);
		return -ENOENT;
	}
	return 0;
}

/* A file the batch's records asked to re-send whole, below a subtree this
 * batch walks: the walk sends it, after making whatever is above it what
 * the store has (sent first, it could meet a symlink or a file where the
 * store has a folder). */
static bool cursor_left_to_walk(const struct cursor *c, const struct journal_dirty *d)
{
	return c->file >= cursor_n_files(c) && !c->walk && c->next_root == 0 &&
	       cursor_walks(c, d->path);
}

/* ---- streaming ---- */

/* The current delta file's own block list: from the hash cache, or an
 * empty one to fill as its blocks are read (see struct cursor, mine). */
static void cursor_mine_start(struct sender *s)
{
	struct cursor *c = &s->c;
	uint64_t n;

	blockhash_free(&c->mine);
	c->mine_cached = false;
	c->mine_hashed = 0;
	c->mine_st = c->st;
	if (!c->dl || c->dl->rc != 1)
		return;
	if (s->hcache && hashcache_lookup_blocks(s->hcache, &c->st, s->delta_bs, &c->mine) == 1) {
		c->mine_cached = true;
		return;
	}
	n = proto_blocks((uint64_t)c->st.st_size, s->delta_bs);
	c->mine.h = n && n <= UINT32_MAX ? calloc(n, 16) : NULL;
	if (!c->mine.h)
		return;		/* nothing to fill: not cached */
	c->mine.size = (uint64_t)c->st.st_size;
	c->mine.block_size = s->delta_bs;
	c->mine.n = (uint32_t)n;
}

/* The current delta file is done: its list goes into the cache when every
 * block was hashed and the file did not change while it was read (the
 * key from before the reading, checked after it: a write in between must
 * not be cached under either key). ST: its fstat now. */
static void cursor_mine_end(struct sender *s, const struct stat *st)
{
	struct cursor *c = &s->c;
	const struct stat *k = &c->mine_st;

	if (s->hcache && !c->mine_cached && c->mine.n && c->mine_hashed == c->mine.n &&
	    st->st_size == k->st_size && st->st_mtim.tv_sec == k->st_mtim.tv_sec &&
	    st->st_mtim.tv_nsec == k->st_mtim.tv_nsec && st->st_ctim.tv_sec == k->st_ctim.tv_sec &&
	    st->st_ctim.tv_nsec == k->st_ctim.tv_nsec)
		hashcache_store_blocks(s->hcache, k, &c->mine);
	blockhash_free(&c->mine);
	c->mine_cached = false;
	c->mine_hashed = 0;
}

/* A delta file's block of LEN bytes at the cursor that the cache says the
 * peer holds: skipped without reading it (true). */
static bool sender_delta_known(struct sender *s, uint64_t len)
{
	struct cursor *c = &s->c;
	uint64_t idx = c->off / s->delta_bs;

	if (!c->mine_cached || c->off % s->delta_bs != 0 || idx >= c->mine.n ||
	    idx >= c->dl->peer.n || memcmp(c->mine.h + idx * 16, c->dl->peer.h + idx * 16, 16))
		return false;
	s->resync_bytes_matched += len;
	return true;
}

/* Opens the cursor's file D and sets where its sending starts. Returns 1,
 * 0 if it is gone (skip it), 3 if it waits for the peer's block hashes,
 * or -errno. */
static int cursor_start_file(struct sender *s, const struct journal_dirty *d)
{
	struct cursor *c = &s->c;
	struct sdelta *dl = cursor_sdelta(c, c->file);
	int rc;

	if (dl && !dl->ready)
		return 3;	/* the peer's hashes are on their way */
	rc = cursor_open_file(s, d);
	if (rc == -ENOENT || rc == -ELOOP || rc == -ENOTDIR)
		return 0;
	if (rc < 0) {
		log_error("cannot read a changed file to send it", "path=%s err=%s", d->path,
			  strerror(-rc));
		sender_set_error(s, "cannot read %s: %s", d->path, strerror(-rc));
		return rc;
	}
	c->range = 0;
	c->off = d->whole ? 0 : (d->n_ranges ? d->ranges[0].off : 0);
	/* A file with other names can change on the peer through them: not
	 * followed (sentmap.c). */
	c->held = c->st.st_nlink == 1 && (uint64_t)c->st.st_size >= HELD_MIN_SIZE;
	/* a delta: what the peer holds is known block by block (an empty
	 * list, a file just created there: every block goes, unhashed) */
	c->dl = dl && dl->rc == 1 && dl->peer.n ? dl : NULL;
	if (dl) {
		c->held = false;
		s->resync_left_files--;
		s->resync_left_bytes -= dl->size;
	}
	if (!c->held)
		sentmap_forget(s->held, d->path);
	/* counted when first read: a cached file may need no read at all */
	c->count_read = dl || c->file >= cursor_n_files(c);
	cursor_mine_start(s);
	return 1;
}

/* A delta file's block BUF (N bytes at the cursor) that the peer holds
 * (the same XXH3-128 at its index) is skipped: true then. Its hash goes
 * into the file's own list; with a cached list it is known to differ. */
static bool sender_delta_holds(struct sender *s, const void *buf, size_t n)
{
	struct cursor *c = &s->c;
	uint64_t idx = c->off / s->delta_bs;
	uint8_t h[16];

	s->resync_bytes_read += n;
	if (c->mine_cached)
		return false;	/* sender_delta_known said it differs */
	blockhash_one(buf, n, h);
	if (c->off % s->delta_bs == 0 && idx < c->mine.n &&
	    (n == s->delta_bs || c->off + n == c->mine.size)) {
		memcpy(c->mine.h + idx * 16, h, 16);
		c->mine_hashed++;
	}
	if (c->off % s->delta_bs != 0 || idx >= c->dl->peer.n ||
	    memcmp(h, c->dl->peer.h + idx * 16, 16) != 0)
		return false;
	s->resync_bytes_matched += n;
	return true;
}

/* A write drops a file's capabilities (security.capability), on the peer
 * as here, and the batch's DATA reaches the peer after all of its ops, so
 * a capability set after the file's last write here would be dropped
 * there by that write's DATA: where the file has one now, it follows the
 * file's ATTR (which may chown, which drops it too). */
static void sender_put_caps(struct evbuffer *out, uint64_t seq, const char *path, int fd)
{
	char val[256];
	ssize_t n = fgetxattr(fd, XATTRNAME_CAPS, val, sizeof(val));
	struct journal_op op = { .type = JOP_SETXATTR, .path = path, .xname = XATTRNAME_CAPS };

	if (n <= 0)
		return;
	op.xvalue = val;
	op.xsize = (size_t)n;
	if (proto_encode_op(out, seq, &op) < 0)
		log_warn("cannot re-send a file's capabilities", "path=%s", path);
}

/* The current file's data is sent: its xattr state where due, its ATTR,
 * its capabilities, and the cursor moves to the next file. */
static void cursor_end_file(struct sender *s, struct evbuffer *out,
			    const struct journal_dirty *d)
{
	struct cursor *c = &s->c;
	struct proto_attr a;

	/* A repaired path gets its whole state: xattrs too; so does a file
	 * crash recovery marked (an xattr change of it may be among the lost
	 * records, and the mount-time scan leaves it to this,
	 * netsync/delta/scan.c scan_recovered). */
	if ((c->file >= cursor_n_files(c) || d->recovered) &&
	    sender_put_xattr_state(out, c->cur->b->end_seq, d->path, c->fd, NULL) < 0)
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
		sender_put_caps(out, c->cur->b->end_seq, d->path, c->fd);
		sentmap_trim(s->held, d->path, a.size);
		if (c->dl)
			cursor_mine_end(s, &c->st);
	} else {
		sentmap_forget(s->held, d->path);
	}
	blockhash_free(&c->mine);
	cursor_close_file(c);
	c->dl = NULL;
	c->file++;
	c->range = 0;
	c->off = 0;
}

/* Sends the next data block or ATTR of the current file; moves the cursor.
 * Returns 1 if it put something on the wire (or skipped a block the peer
 * holds), 2 if it skipped and the pump's skip budget is spent, 3 if the
 * current file waits for the peer's block hashes (sender_delta.c), 0 when
 * the batch's files are done, -errno on a local failure that drops the
 * connection. */
int sender_put_data(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	const struct journal_dirty *d;
	uint64_t end, len;
	void *buf;
	ssize_t n;
	int rc;

	for (;;) {
		if (!c->fasked && s->delta_bs) {
			rc = sender_delta_files(s, out);
			if (rc < 0)
				return rc;
		}
		d = cursor_dirty(c, c->file);
		if (!d)
			return 0;
		if (c->fd < 0 && cursor_left_to_walk(c, d)) {
			c->file++;
			continue;
		}
		if (c->fd < 0) {
			rc = cursor_start_file(s, d);
			if (rc == 3 || rc < 0)
				return rc;
			if (rc == 0) {
				/* Gone or replaced: a later record removes it. */
				c->file++;
				c->range = 0;
				c->off = 0;
				continue;
			}
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
		cursor_end_file(s, out, d);
		return 1;
	}
	len = end - c->off;
	if (len > BLOCK_SIZE)
		len = BLOCK_SIZE;
	if (c->dl && len > s->delta_bs)
		len = s->delta_bs;
	if (c->dl && sender_delta_known(s, len)) {
		c->off += len;
		s->held_budget -= (int64_t)len;
		return s->held_budget > 0 ? 1 : 2;
	}
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
	if (c->count_read) {
		s->resync_files_read++;
		c->count_read = false;
	}
	if (c->dl) {
		if (sender_delta_holds(s, buf, (size_t)n)) {
			pool_put_cb(buf, BLOCK_SIZE, s->pool);
			c->off += (uint64_t)n;
			s->held_budget -= n;
			return s->held_budget > 0 ? 1 : 2;
		}
	} else if (c->walk || c->file >= cursor_n_files(c)) {
		s->resync_bytes_read += (uint64_t)n;
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
