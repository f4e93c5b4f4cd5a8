/*
 * journal — appends, durability marks and the group-commit thread of the
 * change journal (journal/journal.h; opening, recovery and closing are in
 * jopen.c, batches and acks in jbatch.c, offline listing in jpending.c,
 * the byte format in jrec.c).
 * FUSE worker threads call append/mark_dirty/truncate/forget; the sender
 * thread calls the batch side; the committer thread started here is the
 * only writer of segment files. Nothing here touches the network or the
 * store's contents (it only reads paths and ctimes).
 *
 * Design
 *
 * Records. A record is one namespace operation (or a record the journal
 * writes itself: MARK_DIR, MARK_FILE, NEEDS_SCAN, BATCH) with a sequence
 * number. It is encoded by jrec.c as a 16-byte header (magic, length, seq),
 * a fixed 104-byte field block, the strings (each with its NUL), and an
 * XXH3-64 of everything before it. Records live in segment files
 * STATE/journal/seg-<first seq, hex>.log, each starting with a 32-byte
 * header; a new segment starts once the active one holds 64 MiB. Seqs are
 * consecutive across segments, so any gap or bad checksum is the end.
 *
 * Group commit. Appenders encode into an in-memory buffer under `mu` and
 * return; nobody writes per operation. The committer thread wakes when the
 * buffer becomes non-empty, waits out the commit window (commit_ms, default
 * 5 ms) unless someone is waiting for durability, swaps the buffer out,
 * writes it and fdatasyncs once; every thread that was waiting for any seq
 * in it wakes on durable_cv. While one fdatasync runs, new waiters pile up
 * for the next one, so N waiting threads cost about two syncs, not N.
 *
 * Marks and epochs. Data bytes never enter the journal: mark_dirty keeps
 * the inode's byte ranges in memory (rangeset), and the sender reads the
 * bytes from the store. What must survive a crash is only *which* files may
 * differ from the peer. Before the first change in an epoch to a
 * directory's entries, append() writes MARK_DIR(dir) and waits until it is
 * durable; before the first data change in an epoch to a file that existed
 * before the epoch, mark_dirty() writes MARK_FILE(path) and waits. A file
 * created in the epoch (its create record carries its ino) is covered by its
 * directory's mark, so it never waits: copying 10,000 files into 50
 * folders costs ~50 waits. Every later change of a marked inode is a mutex,
 * a hash lookup and a range merge. The first one also takes a file
 * handle for the inode (journal_inode_track: no fd is kept per dirty file;
 * a batch opens its files, at most journal_batch_files). The epoch ends when the peer has acked
 * every record and no dirty data is left: the in-memory marks are dropped
 * and the next change marks again. The epoch boundary is the ack file
 * itself (records <= acked are void), so no EPOCH record is written; while
 * an epoch lasts the ack file stays below its first mark (journal_ack).
 *
 * Recovery. journal_open scans the segments after the ack (jseg.c), cuts a
 * torn or damaged tail, and keeps every later record for re-sending. Each
 * mark after the ack becomes dirty inodes sent whole (by file handle, so
 * they follow later renames like any dirty file): the marked file, and
 * each entry of a marked directory whose ctime >= the time stored in the
 * mark (its mtime field, taken 1 s early because the kernel's ctime clock
 * is coarse). Nothing else in the tree is looked at. journal_list_pending
 * does the same read-only, for a mount that is not running.
 *
 * Size limit. When the unacked segments would exceed size_limit, the
 * journal enters overflow until the epoch ends: each op is replaced by a
 * NEEDS_SCAN record naming its path(s), written once per path (a path
 * under one already recorded is skipped). Marks and NEEDS_SCAN bypass the
 * limit; they are bounded by the number of distinct paths. Writers never
 * wait for space and no change is forgotten; the sender resyncs those
 * paths by scan + block-hash delta. Overflow lasts until everything is
 * acked so records never resume in the middle of a scanned region.
 *
 * Known window: append() and mark_dirty() are called after the store was
 * changed, so a crash between that change and the mark becoming durable
 * (a few ms, once per dir/file per epoch) loses the mark; the application
 * never saw that call return. mark_dirty(ino, fd, off, 0) before a write
 * makes the file's mark durable first and closes the window for data.
 */
#include "journal/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "journal/jhandle.h"
#include "journal/journal_int.h"
#include "journal/jrec.h"

uint64_t journal_segment_bytes = 64ull << 20;
size_t journal_batch_files = 1024;
size_t journal_fds_max = 4096;
bool journal_no_handles;
bool journal_no_lost_window;
uint64_t journal_mark_slack_ns = 1000000000ull;
int journal_fail_append;
int journal_fail_inflight;

static const char *const journal_op_names[] = {
	[JOP_CREATE] = "create", [JOP_MKDIR] = "mkdir", [JOP_MKNOD] = "mknod",
	[JOP_SYMLINK] = "symlink", [JOP_LINK] = "link", [JOP_RENAME] = "rename",
	[JOP_UNLINK] = "unlink", [JOP_RMDIR] = "rmdir", [JOP_SETATTR] = "setattr",
	[JOP_SETXATTR] = "setxattr", [JOP_REMOVEXATTR] = "removexattr",
	[JOP_MARK_DIR] = "mark-dir", [JOP_MARK_FILE] = "mark-file",
	[JOP_NEEDS_SCAN] = "needs-scan", [JOP_BATCH] = "batch", [JOP_EPOCH] = "epoch",
};

const char *journal_op_name(enum journal_op_type t)
{
	if ((unsigned)t >= sizeof(journal_op_names) / sizeof(journal_op_names[0]))
		return NULL;
	return journal_op_names[t];
}

/* ---- inode table (mu held) ---- */

static size_t journal_ihash(const struct journal *j, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (j->itab_nb - 1);
}

struct jinode *journal_inode_find(struct journal *j, uint64_t ino)
{
	if (j->itab_nb == 0)
		return NULL;
	for (struct jinode *e = j->itab[journal_ihash(j, ino)]; e; e = e->hnext)
		if (e->ino == ino)
			return e;
	return NULL;
}

static int journal_itab_grow(struct journal *j)
{
	size_t nb = j->itab_nb ? j->itab_nb * 2 : 1024, old = j->itab_nb;
	struct jinode **t = calloc(nb, sizeof(*t)), **ot = j->itab;

	if (!t)
		return -ENOMEM;
	j->itab = t;
	j->itab_nb = nb;
	for (size_t i = 0; i < old; i++) {
		struct jinode *e = ot[i], *n;

		for (; e; e = n) {
			size_t h = journal_ihash(j, e->ino);

			n = e->hnext;
			e->hnext = t[h];
			t[h] = e;
		}
	}
	free(ot);
	return 0;
}

struct jinode *journal_inode_get(struct journal *j, uint64_t ino)
{
	struct jinode *e = journal_inode_find(j, ino);
	size_t h;

	if (e)
		return e;
	if (j->itab_n >= j->itab_nb && journal_itab_grow(j) < 0)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ino = ino;
	e->fd = -1;
	e->fh = NULL;
	rangeset_init(&e->ranges);
	h = journal_ihash(j, ino);
	e->hnext = j->itab[h];
	j->itab[h] = e;
	j->itab_n++;
	return e;
}

void journal_inode_dirty(struct journal *j, struct jinode *e)
{
	if (e->on_dirty)
		return;
	e->on_dirty = true;
	e->dprev = NULL;
	e->dnext = j->dirty_head;
	if (j->dirty_head)
		j->dirty_head->dprev = e;
	else
		j->dirty_tail = e;
	j->dirty_head = e;
	j->n_dirty++;
	journal_notify_locked(j);
}

void journal_inode_clean(struct journal *j, struct jinode *e)
{
	if (!e->on_dirty)
		return;
	if (e->dprev)
		e->dprev->dnext = e->dnext;
	else
		j->dirty_head = e->dnext;
	if (e->dnext)
		e->dnext->dprev = e->dprev;
	else
		j->dirty_tail = e->dprev;
	e->on_dirty = false;
	e->dnext = e->dprev = NULL;
	j->n_dirty--;
	rangeset_clear(&e->ranges);
	e->whole = false;
	e->recovered = false;
}

void journal_inode_drop(struct journal *j, struct jinode *e)
{
	struct jinode **pp = &j->itab[journal_ihash(j, e->ino)];

	journal_inode_clean(j, e);
	if (e->pinned)
		j->n_pins--;
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	j->itab_n--;
	if (e->fd >= 0) {
		close(e->fd);
		j->n_fds--;
	}
	free(e->fh);
	rangeset_free(&e->ranges);
	free(e);
}

/*
 * How the journal finds a dirty inode again when the sender takes it. It
 * must follow the file across renames (the path is only resolved at take
 * time, under the ns lock), so a path will not do; an fd would, but an fd
 * per dirty file is what ran a peerless mount out of them (see jhandle.c).
 * A file handle costs one syscall here and no fd until the take. Without
 * handles (a filesystem that has none, a file on another mount inside the
 * store) the journal keeps a dup of the fs's fd, at most journal_fds_max
 * of them; past that the caller names the file by path in a NEEDS_SCAN,
 * as it always did when fds ran out, and writes never fail.
 */
int journal_inode_track(struct journal *j, struct jinode *e, int fd)
{
	int err = 0;

	if (e->fh || e->fd >= 0)
		return 0;
	if (!journal_no_handles) {
		e->fh = jhandle_from_fd(&j->hcaps, fd, &err);
		if (e->fh)
			return 0;
		if (err == -ENOMEM)
			return err;
	}
	if (j->n_fds >= journal_fds_max)
		return -EMFILE;
	e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (e->fd < 0)
		return -errno;
	j->n_fds++;
	return 0;
}

/* ---- notification, buffer, durability ---- */

void journal_notify_locked(struct journal *j)
{
	uint64_t one = 1;

	if (j->notified)
		return;
	j->notified = true;
	if (write(j->evfd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("journal cannot wake the sender", "err=%s", strerror(errno));
}

void journal_set_scan(struct journal *j, journal_scan_fn fn, void *arg)
{
	pthread_mutex_lock(&j->scan_mu);
	j->scan_fn = fn;
	j->scan_arg = arg;
	pthread_mutex_unlock(&j->scan_mu);
}

/* Lock order: scan_mu, then whatever the fs takes, then mu. */
void journal_scan(struct journal *j, bool force)
{
	pthread_mutex_lock(&j->scan_mu);
	if (j->scan_fn)
		j->scan_fn(j->scan_arg, force);
	pthread_mutex_unlock(&j->scan_mu);
}

int journal_notify_fd(struct journal *j)
{
	return j->evfd;
}

static int jbuf_reserve(struct jbuf *b, size_t more)
{
	if (more > SIZE_MAX - b->len)
		return -ENOMEM;
	return ARRAY_GROW(b->p, b->cap, b->len + more, 64 * 1024);
}

static int jbuf_add_break(struct jbuf *b, uint64_t first_seq)
{
	if (ARRAY_GROW(b->brk, b->capbrk, b->nbrk + 1, 4) < 0)
		return -ENOMEM;
	b->brk[b->nbrk++] = (struct jbuf_break){ b->len, first_seq };
	return 0;
}

static int journal_segs_push(struct journal *j, uint64_t first_seq)
{
	if (ARRAY_GROW(j->segs, j->capsegs, j->nsegs + 1, 8) < 0)
		return -ENOMEM;
	j->segs[j->nsegs++] = (struct jseg_info){ first_seq, first_seq - 1, JSEG_HDR };
	j->disk_bytes += JSEG_HDR;
	return 0;
}

/* Bytes of segments holding at least one unacked record. */
static uint64_t journal_unacked_bytes(const struct journal *j)
{
	uint64_t n = 0;

	for (size_t i = j->nsegs; i-- > 0;) {
		if (j->segs[i].last_seq <= j->file_acked && j->segs[i].last_seq >= j->segs[i].first_seq)
			break;
		n += j->segs[i].bytes;
	}
	return n;
}

/*
 * Encodes op as the next record into the commit buffer. Returns its seq,
 * -ENOSPC if it does not fit under the size limit (unless bypass_limit),
 * -E2BIG for an op larger than a record may be, -ENOMEM. Caller holds mu.
 */
int64_t journal_append_locked(struct journal *j, const struct journal_op *op,
			      bool bypass_limit)
{
	int64_t sz = jrec_size(op);
	uint64_t seq = j->head_seq + 1;
	struct jseg_info *s;
	size_t len;

	if (sz < 0)
		return sz;
	if (journal_fail_append)
		return journal_fail_append;
	if (!bypass_limit &&
	    (j->overflow || journal_unacked_bytes(j) + (uint64_t)sz > j->size_limit))
		return -ENOSPC;
	if (jbuf_reserve(&j->buf, (size_t)sz) < 0)
		return -ENOMEM;
	if (j->nsegs == 0 || j->rotate_next ||
	    j->segs[j->nsegs - 1].bytes >= journal_segment_bytes) {
		if (jbuf_add_break(&j->buf, seq) < 0)
			return -ENOMEM;
		if (journal_segs_push(j, seq) < 0) {
			j->buf.nbrk--;
			return -ENOMEM;
		}
		j->rotate_next = false;
	}
	len = jrec_encode(j->buf.p + j->buf.len, seq, op);
	if (j->buf.len == 0) {
		j->first_buffered_ns = clock_mono_ns();
		pthread_cond_signal(&j->commit_cv);
	}
	j->buf.len += len;
	j->buf.last_seq = seq;
	if (op->type != JOP_BATCH && op->type != JOP_EPOCH)
		jage_note_locked(j);
	if ((op->type == JOP_MARK_DIR || op->type == JOP_MARK_FILE) && !j->first_mark)
		j->first_mark = seq;
	s = &j->segs[j->nsegs - 1];
	s->last_seq = seq;
	s->bytes += len;
	j->disk_bytes += len;
	j->head_seq = seq;
	journal_notify_locked(j);
	return (int64_t)seq;
}

/* Waits (mu held, released while waiting) until seq is durable. Returns 0
 * or the committer's sticky -errno. */
int journal_wait_durable_locked(struct journal *j, uint64_t seq)
{
	while (j->durable_seq < seq && !j->io_error) {
		j->commit_waiters++;
		pthread_cond_signal(&j->commit_cv);
		pthread_cond_wait(&j->durable_cv, &j->mu);
		j->commit_waiters--;
	}
	return j->durable_seq >= seq ? 0 : j->io_error;
}

/* ---- the committer thread ---- */

static int journal_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes one swapped-out buffer (committer thread only; no lock held). */
static int journal_write_out(struct journal *j, const struct jbuf *b)
{
	bool newseg = false;
	size_t pos = 0, bi = 0;
	int rc;

	while (pos < b->len) {
		size_t end;

		if (bi < b->nbrk && b->brk[bi].off == pos) {
			char name[JSEG_NAME_MAX];
			uint8_t hdr[JSEG_HDR];

			if (j->seg_fd >= 0) {
				if (fdatasync(j->seg_fd) < 0)
					return -errno;
				close(j->seg_fd);
			}
			jseg_name(name, sizeof name, b->brk[bi].first_seq);
			j->seg_fd = openat(j->dirfd, name,
					   O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC |
					   O_NOFOLLOW, 0600);
			if (j->seg_fd < 0)
				return -errno;
			jseg_hdr_encode(hdr, b->brk[bi].first_seq);
			rc = journal_write_all(j->seg_fd, hdr, sizeof hdr);
			if (rc < 0)
				return rc;
			newseg = true;
			bi++;
		}
		end = bi < b->nbrk ? b->brk[bi].off : b->len;
		rc = journal_write_all(j->seg_fd, b->p + pos, end - pos);
		if (rc < 0)
			return rc;
		pos = end;
	}
	if (fdatasync(j->seg_fd) < 0)
		return -errno;
	if (newseg && fsutil_sync_dirfd(j->dirfd) < 0)
		return -errno;
	return 0;
}

void journal_timeout_at(struct timespec *ts, uint64_t mono_deadline_ns)
{
	uint64_t now = clock_mono_ns(), wait = mono_deadline_ns > now ? mono_deadline_ns - now : 0;

	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(wait / 1000000000ull);
	ts->tv_nsec += (long)(wait % 1000000000ull);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void *journal_committer(void *arg)
{
	struct journal *j = arg;
	struct jbuf out = { 0 };

	pthread_setname_np(pthread_self(), "tw-journal");
	pthread_mutex_lock(&j->mu);
	for (;;) {
		struct jbuf t;
		uint64_t last, t0;
		int rc;

		while (j->buf.len == 0 && !j->closing)
			pthread_cond_wait(&j->commit_cv, &j->mu);
		if (j->buf.len == 0)
			break;	/* closing and nothing left */
		/* The commit window: more appends share this sync, unless a
		 * thread is already waiting for it. */
		while (!j->commit_waiters && !j->closing) {
			uint64_t deadline = j->first_buffered_ns + (uint64_t)j->commit_ms * 1000000ull;
			struct timespec ts;

			if (clock_mono_ns() >= deadline)
				break;
			journal_timeout_at(&ts, deadline);
			pthread_cond_timedwait(&j->commit_cv, &j->mu, &ts);
		}
		t = j->buf;
		j->buf = out;
		j->buf.len = 0;
		j->buf.nbrk = 0;
		out = t;
		last = out.last_seq;
		pthread_mutex_unlock(&j->mu);

		t0 = clock_mono_ns();
		rc = j->io_error ? j->io_error : journal_write_out(j, &out);

		pthread_mutex_lock(&j->mu);
		j->n_commits++;
		j->commit_ns += clock_mono_ns() - t0;
		if (rc < 0) {
			if (!j->io_error)
				log_error("journal write failed; changes are no longer "
					  "journalled, a full resync will be needed",
					  "dir=%s err=%s", j->dir, strerror(-rc));
			j->io_error = rc;
		} else {
			j->durable_seq = last;
		}
		pthread_cond_broadcast(&j->durable_cv);
	}
	pthread_mutex_unlock(&j->mu);
	free(out.p);
	free(out.brk);
	return NULL;
}

/* ---- paths ---- */

int journal_fd_path(struct journal *j, int fd, char **out)
{
	char link[64], buf[PATH_MAX + 16];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_nlink == 0 && !S_ISDIR(st.st_mode))
		return -ENOENT;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof buf - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if ((size_t)n < j->store_len || memcmp(buf, j->store, j->store_len) != 0 ||
	    (buf[j->store_len] != '/' && buf[j->store_len] != '\0'))
		return -ENOENT;
	if ((size_t)n > 10 && strcmp(buf + n - 10, " (deleted)") == 0)
		return -ENOENT;
	*out = strdup(buf[j->store_len] == '/' ? buf + j->store_len + 1 : "");
	return *out ? 0 : -ENOMEM;
}

/* The parent directory of a store-relative path ("" for top-level names
 * and for the root itself), written into buf. */
static void journal_parent(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= len)
		n = len - 1;
	memcpy(buf, path, n);
	buf[n] = '\0';
}

/*
 * A LINK the journal cannot record: the folder holding both names is
 * rescanned whole, so that one walk meets both and links them on the peer
 * (scanned one name at a time, each went over as a file of its own). mu
 * held.
 */
static int64_t journal_needs_scan_link_locked(struct journal *j, const char *from,
					      const char *to)
{
	char dir[PATH_MAX];
	size_t i = 0, last = 0;

	snprintf(dir, sizeof(dir), "%s", from);
	for (; dir[i] && dir[i] == to[i]; i++)
		if (dir[i] == '/')
			last = i;
	dir[last] = '\0';
	return journal_needs_scan_locked(j, dir);
}

void journal_mark_time(struct journal_op *op)
{
	struct timespec now;
	uint64_t ns;

	clock_gettime(CLOCK_REALTIME, &now);
	ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	ns = ns > journal_mark_slack_ns ? ns - journal_mark_slack_ns : 0;
	op->mtime.tv_sec = (time_t)(ns / 1000000000ull);
	op->mtime.tv_nsec = (long)(ns % 1000000000ull);
}

/* Ensures dir has a MARK_DIR this epoch, or is covered (see "New
 * directories" above); returns the seq to wait for (0: already durable)
 * or -errno. mu held. */
static int64_t journal_mark_dir_locked(struct journal *j, const char *dir)
{
	struct pathset_entry *e = pathset_find(&j->marked_dirs, dir);
	struct journal_op op = { .type = JOP_MARK_DIR, .path = dir };
	int64_t seq;

	if (e)
		return e->value > j->durable_seq ? (int64_t)e->value : 0;
	e = pathset_find(&j->covered_dirs, dir);
	if (e && e->value == j->dir_gen)
		return 0;	/* its MKDIR waited for the covering mark */
	journal_mark_time(&op);
	seq = journal_append_locked(j, &op, true);
	if (seq < 0)
		return seq;
	if (pathset_add(&j->marked_dirs, dir, (uint64_t)seq) < 0)
		return -ENOMEM;
	return seq;
}

/*
 * New directories. A directory made by MKDIR in this epoch is covered by
 * the durable mark of an ancestor (its parent's mark, or the one covering
 * its parent), which its MKDIR waited for: changes inside it need no mark
 * of their own, so copying a tree into the mount costs one journal sync,
 * not one per directory. Recovery finds such a directory as an entry of
 * the marked ancestor that was born after the mark (jpending.c) and
 * lists everything under it.
 *
 * That holds while the directory stays where its MKDIR put it. Moving a
 * directory (rename, in either direction of an exchange) first makes every
 * record so far durable (journal_prepare): what happened inside covered
 * directories no longer depends on finding them by path. It then starts
 * a new generation, in which the old coverings no longer count and the
 * next change inside one writes a real mark. RMDIR drops its path's
 * covering. mu held; no memory only costs a mark later.
 */
static void journal_note_dirs_locked(struct journal *j, const struct journal_op *op)
{
	struct pathset_entry *e;

	switch (op->type) {
	case JOP_MKDIR:
		e = pathset_find(&j->covered_dirs, op->path);
		if (e)
			e->value = j->dir_gen;
		else if (pathset_add(&j->covered_dirs, op->path, j->dir_gen) < 0)
			return;
		j->covered_gen = j->dir_gen;
		break;
	case JOP_RMDIR:
		pathset_remove(&j->covered_dirs, op->path);
		break;
	case JOP_RENAME:
		if (S_ISDIR(op->mode))
			j->dir_gen++;
		break;
	default:
		break;
	}
}

/* ---- the fs side ---- */

void journal_ns_lock(struct journal *j)
{
	pthread_mutex_lock(&j->ns_mu);
}

void journal_ns_unlock(struct journal *j)
{
	pthread_mutex_unlock(&j->ns_mu);
}

static bool journal_op_has_path2(enum journal_op_type t)
{
	return t == JOP_RENAME || t == JOP_LINK;
}

bool journal_overflowed(struct journal *j)
{
	bool on;

	pthread_mutex_lock(&j->mu);
	on = j->overflow;
	pthread_mutex_unlock(&j->mu);
	return on;
}

/* Store-relative: no leading '/', no empty, "." or ".." component. */
bool journal_path_ok(const char *p)
{
	if (!p)
		return false;
	if (p[0] == '\0')
		return true;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

int64_t journal_append(struct journal *j, const struct journal_op *op)
{
	char dir[PATH_MAX];
	int64_t seq, wait = 0, m;
	int rc;

	if (!journal_path_ok(op->path) || !journal_op_name(op->type) ||
	    op->type >= JOP_MARK_DIR ||
	    (journal_op_has_path2(op->type) && !journal_path_ok(op->path2)))
		return -EINVAL;
	pthread_mutex_lock(&j->mu);
	/* The directories whose entries (or whose child's attributes) change.
	 * Their marks must be durable before this change can be confirmed. */
	journal_parent(op->path, dir, sizeof dir);
	m = journal_mark_dir_locked(j, dir);
	if (m < 0) {
		seq = m;
		goto out_unlock;
	}
	wait = m;
	if (journal_op_has_path2(op->type) && op->path2) {
		journal_parent(op->path2, dir, sizeof dir);
		m = journal_mark_dir_locked(j, dir);
		if (m < 0) {
			seq = m;
			goto out_unlock;
		}
		if (m > wait)
			wait = m;
	}
	if (op->ino && (op->type == JOP_CREATE || op->type == JOP_MKNOD ||
			op->type == JOP_SYMLINK || op->type == JOP_MKDIR)) {
		struct jinode *e = journal_inode_find(j, op->ino);

		/* A new inode has no entry yet: one under its number is of a
		 * file removed since (the store reuses inode numbers; a file
		 * recovered at mount is tracked by handle, and no FORGET need
		 * drop it). Its handle opens nothing, so the new file's data,
		 * added to it, was dropped as unlinked while sync said the
		 * peer had everything. */
		if (e && (e->fh || e->fd >= 0)) {
			log_debug("a new file reuses the number of a file the journal "
				  "tracked; dropping the old entry", "ino=%" PRIu64
				  " path=%s", op->ino, op->path);
			journal_inode_drop(j, e);
		}
		e = journal_inode_get(j, op->ino);
		if (e) {
			e->mark_epoch = j->epoch;
			e->mark_seq = 0;
		}
	}
	seq = journal_append_locked(j, op, false);
	if (seq > 0)
		journal_note_dirs_locked(j, op);
	if (seq < 0) {
		/* Whatever the reason (full, an op too large for a record, no
		 * memory), the op becomes NEEDS_SCAN and the journal goes to
		 * overflow: a later record must not move or remove the path
		 * before the sender scans it. */
		if (!j->overflow) {
			j->overflow = true;
			log_warn("journal cannot record an op; recording paths for rescan "
				 "until the peer catches up", "dir=%s path=%s err=%s "
				 "size_limit=%" PRIu64, j->dir, op->path, strerror((int)-seq),
				 j->size_limit);
		}
		if (op->type == JOP_LINK && op->path2)
			seq = journal_needs_scan_link_locked(j, op->path, op->path2);
		else
			seq = journal_needs_scan_locked(j, op->path);
		if (seq > 0 && op->type != JOP_LINK && journal_op_has_path2(op->type) &&
		    op->path2)
			seq = journal_needs_scan_locked(j, op->path2);
	}
	if (seq > 0 && wait > 0) {
		rc = journal_wait_durable_locked(j, (uint64_t)wait);
		if (rc < 0)
			seq = rc;
	}
out_unlock:
	pthread_mutex_unlock(&j->mu);
	return seq;
}

/* Same marks as journal_append, made durable before the store changes. */
int journal_prepare(struct journal *j, const struct journal_op *op)
{
	char dir[PATH_MAX];
	int64_t wait, m;
	int rc = 0;

	if (!op->path)
		return -EINVAL;
	pthread_mutex_lock(&j->mu);
	journal_parent(op->path, dir, sizeof dir);
	wait = journal_mark_dir_locked(j, dir);
	if (wait >= 0 && journal_op_has_path2(op->type) && op->path2) {
		journal_parent(op->path2, dir, sizeof dir);
		m = journal_mark_dir_locked(j, dir);
		wait = m < 0 || m > wait ? m : wait;
	}
	/* A directory about to move may hold covered directories: make what
	 * happened inside them durable first (see "New directories"). */
	if (wait >= 0 && op->type == JOP_RENAME && S_ISDIR(op->mode) &&
	    j->covered_dirs.n && j->covered_gen == j->dir_gen &&
	    j->head_seq > (uint64_t)wait)
		wait = (int64_t)j->head_seq;
	if (wait < 0)
		rc = (int)wait;
	else if (wait > 0)
		rc = journal_wait_durable_locked(j, (uint64_t)wait);
	pthread_mutex_unlock(&j->mu);
	return rc;
}

/*
 * Out of file descriptors (only without file handles: journal_fds_max
 * reached, or the process is out of them): the journal cannot keep one
 * for this inode, so it cannot follow the file across renames. It names the file by its
 * current path in a durable NEEDS_SCAN and enters overflow, so every later
 * op is a NEEDS_SCAN too until the epoch ends, and no later record can
 * move the file away from the name that will be scanned. mu held.
 */
static int journal_mark_by_path_locked(struct journal *j, struct jinode *e, int fd)
{
	char *path = NULL;
	int64_t seq;
	int rc;

	journal_inode_drop(j, e);
	rc = journal_fd_path(j, fd, &path);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	if (!j->overflow) {
		j->overflow = true;
		log_warn("journal is out of file descriptors for dirty files (the "
			 "store has no file handles); recording paths for rescan "
			 "until the peer catches up", "dir=%s path=%s fds=%zu",
			 j->dir, path, j->n_fds);
	}
	seq = journal_needs_scan_locked(j, path);
	free(path);
	if (seq < 0)
		return (int)seq;
	return journal_wait_durable_locked(j, (uint64_t)seq);
}

/*
 * The hot path. For an inode already covered in this epoch this is the
 * mutex, the hash lookup and the range merge; everything else (dup of the
 * fd, path lookup, MARK_FILE, waiting for it) happens once per inode and
 * epoch. The loop re-looks the inode up after waiting because forget or an
 * epoch end may have run meanwhile. With len 0 it only makes sure the mark
 * is durable: an fs that calls it so before its first write to a file
 * closes the crash window described at the top of this file.
 */
/* True if the file open on FD still has a name somewhere (any thread). */
static bool journal_fd_linked(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_nlink > 0;
}

static int journal_mark(struct journal *j, uint64_t ino, int fd,
			uint64_t off, uint64_t len, bool pin)
{
	struct jinode *e;
	int rc = 0;

	pthread_mutex_lock(&j->mu);
	for (;;) {
		e = journal_inode_find(j, ino);
		if (e && (e->fh || e->fd >= 0) && e->mark_epoch == j->epoch &&
		    e->mark_seq <= j->durable_seq)
			break;
		if (!e) {
			e = journal_inode_get(j, ino);
			if (!e) {
				rc = -ENOMEM;
				goto out_unlock;
			}
		}
		rc = journal_inode_track(j, e, fd);
		if (rc < 0) {
			if (rc == -EMFILE || rc == -ENFILE)
				rc = journal_mark_by_path_locked(j, e, fd);
			goto out_unlock;
		}
		if (e->mark_epoch != j->epoch) {
			struct journal_op op = { .type = JOP_MARK_FILE, .ino = ino };
			char *path = NULL;
			int64_t seq;

			rc = journal_fd_path(j, fd, &path);
			if (rc == -ENOENT && !journal_fd_linked(fd)) {
				/* Unlinked: nothing to replicate. */
				journal_inode_drop(j, e);
				rc = 0;
				goto out_unlock;
			}
			if (rc == -ENOENT) {
				/*
				 * The fd names a link removed since, and the file
				 * lives on under other names we cannot tell from
				 * here: a rescan of the store is its mark, sure to
				 * find it after a crash, and its data goes with
				 * the batch as for any file. Dropped, a write to a
				 * hard-linked file whose first name went never
				 * reached the peer.
				 */
				seq = journal_needs_scan_locked(j, "");
			} else if (rc < 0) {
				goto out_unlock;
			} else {
				op.path = path;
				journal_mark_time(&op);
				seq = journal_append_locked(j, &op, true);
				free(path);
			}
			if (seq < 0) {
				rc = (int)seq;
				goto out_unlock;
			}
			e->mark_epoch = j->epoch;
			e->mark_seq = (uint64_t)seq;
		}
		if (e->mark_seq > j->durable_seq) {
			rc = journal_wait_durable_locked(j, e->mark_seq);
			if (rc < 0)
				goto out_unlock;
		}
	}
	if (pin) {
		if (!e->pinned) {
			e->pinned = true;
			j->n_pins++;
		}
		jage_note_locked(j);
		goto out_unlock;
	}
	if (len == 0)
		goto out_unlock;	/* only the mark was asked for (see below) */
	if (e->pinned) {
		e->pinned = false;	/* its ranges keep the epoch now */
		j->n_pins--;
	}
	if (e->whole)
		goto out_dirty;
	rc = rangeset_add(&e->ranges, off, len);
	if (rc < 0 || e->ranges.n > JOURNAL_RANGES_MAX) {
		e->whole = true;
		rangeset_clear(&e->ranges);
		rc = 0;
	}
out_dirty:
	if (!e->on_dirty)
		journal_inode_dirty(j, e);
	jage_note_locked(j);
out_unlock:
	pthread_mutex_unlock(&j->mu);
	return rc;
}

int journal_mark_dirty(struct journal *j, uint64_t ino, int fd,
		       uint64_t off, uint64_t len)
{
	return journal_mark(j, ino, fd, off, len, false);
}

int journal_pin(struct journal *j, uint64_t ino, int fd)
{
	return journal_mark(j, ino, fd, 0, 0, true);
}

void journal_unpin(struct journal *j, uint64_t ino)
{
	struct jinode *e;

	pthread_mutex_lock(&j->mu);
	e = journal_inode_find(j, ino);
	if (e && e->pinned) {
		e->pinned = false;
		j->n_pins--;
	}
	pthread_mutex_unlock(&j->mu);
}

void journal_truncate(struct journal *j, uint64_t ino, uint64_t size)
{
	struct jinode *e;

	pthread_mutex_lock(&j->mu);
	e = journal_inode_find(j, ino);
	if (e)
		rangeset_truncate(&e->ranges, size);
	pthread_mutex_unlock(&j->mu);
}

/* True if E names a linked inode now: the store reuses the number of a
 * removed file, and the entry under it may be a new file's. */
static bool journal_inode_live(struct journal *j, const struct jinode *e)
{
	bool disconnected = false, live;
	struct stat st;
	int fd;

	if (e->fd >= 0)
		return fstat(e->fd, &st) == 0 && st.st_nlink > 0;
	if (!e->fh)
		return false;
	fd = jhandle_open(j->rootfd, e->fh, &disconnected);
	if (fd < 0)
		return false;
	live = fstat(fd, &st) == 0 && st.st_nlink > 0;
	close(fd);
	return live;
}

void journal_forget(struct journal *j, uint64_t ino)
{
	struct jinode *e;

	pthread_mutex_lock(&j->mu);
	e = journal_inode_find(j, ino);
	/* A FORGET of the removed file can come after a new file took its
	 * number and its entry: dropped, the new file's data was lost. */
	if (e && !journal_inode_live(j, e))
		journal_inode_drop(j, e);
	pthread_mutex_unlock(&j->mu);
}

int journal_commit(struct journal *j)
{
	int rc;

	pthread_mutex_lock(&j->mu);
	rc = journal_wait_durable_locked(j, j->head_seq);
	pthread_mutex_unlock(&j->mu);
	return rc;
}

/* ---- barriers ---- */

/*
 * A barrier owes the caller a seq whose ack implies every change made so
 * far is on the peer. If records or dirty data are not yet taken, the next
 * batch will end with a BATCH record at a seq > head_seq, so head_seq + 1 is
 * enough, provided that batch takes *all* dirty data: take_batch ignores
 * max_bytes while a barrier is owed. If everything is taken already, the
 * last batch's end covers it. A take caught between appending its BATCH
 * record and collecting the dirty files (it waits for the record to be
 * durable) already covers everything if nothing was appended since, so
 * its end is the answer. Peers ack batch ends (end_seq).
 */
uint64_t journal_barrier(struct journal *j)
{
	uint64_t s;

	pthread_mutex_lock(&j->mu);
	if (j->taking_end && j->taking_end == j->head_seq) {
		/* A take is waiting for its BATCH record to be durable; it will
		 * carry every record, and (seeing barrier_seq) all dirty data. */
		s = j->taking_end;
		if (s > j->barrier_seq)
			j->barrier_seq = s;
		if (!j->barrier_floor || s < j->barrier_floor)
			j->barrier_floor = s;
	} else if (j->head_seq > j->sent_seq || j->dirty_head || j->lost_paths.n ||
		   j->rescan_owed) {
		s = j->head_seq + 1;
		if (s > j->barrier_seq)
			j->barrier_seq = s;
		if (!j->barrier_floor || s < j->barrier_floor)
			j->barrier_floor = s;
		j->notified = false;	/* wake the sender even if it was woken */
		journal_notify_locked(j);
	} else {
		s = j->sent_seq > j->acked_seq ? j->sent_seq : j->acked_seq;
	}
	pthread_mutex_unlock(&j->mu);
	return s;
}

int journal_wait_acked(struct journal *j, uint64_t seq, int timeout_ms)
{
	struct timespec ts;
	int rc = 0;

	if (timeout_ms >= 0)
		journal_timeout_at(&ts, clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull);
	pthread_mutex_lock(&j->mu);
	while (j->acked_seq < seq && !j->closing) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&j->acked_cv, &j->mu);
		} else if (pthread_cond_timedwait(&j->acked_cv, &j->mu, &ts) == ETIMEDOUT) {
			rc = j->acked_seq >= seq ? 0 : -ETIMEDOUT;
			break;
		}
	}
	if (rc == 0 && j->acked_seq < seq)
		rc = -ESHUTDOWN;
	pthread_mutex_unlock(&j->mu);
	return rc;
}

void journal_get_stats(struct journal *j, struct journal_stats *st)
{
	uint64_t bytes = 0;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&j->mu);
	st->head_seq = j->head_seq;
	st->durable_seq = j->durable_seq;
	st->acked_seq = j->acked_seq;
	st->sent_seq = j->sent_seq;
	st->pending_ops = j->head_seq - j->acked_seq;
	for (struct jinode *e = j->dirty_head; e; e = e->dnext)
		bytes += e->ranges.bytes;
	for (size_t i = 0; i < j->n_inflight; i++)
		bytes += j->inflight[i].bytes;
	st->pending_bytes = bytes;
	st->dirty_files = j->n_dirty + j->lost_paths.n;
	st->unmarked_files = j->n_pins;
	st->needs_scan = j->needs_scan.n;
	st->disk_bytes = j->disk_bytes;
	st->segments = j->nsegs;
	st->epoch = j->epoch;
	st->store_syncs = j->n_store_syncs;
	st->acked_durable_seq = j->file_acked;
	st->oldest_change_ns = jage_oldest_locked(j);
	pthread_mutex_unlock(&j->mu);
}
