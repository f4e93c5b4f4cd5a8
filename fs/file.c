/*
 * file — FUSE handlers for open files: create, open, read, write, flush,
 * release, fsync, fallocate, copy_file_range, lseek. Runs in any FUSE
 * worker thread. Owns the store fds of open files (struct fs_file); data
 * goes straight between the kernel and the store file, and the journal
 * only hears which byte ranges changed (no journal IO per write).
 *
 * Durability and close: a close(2) on a local filesystem promises
 * nothing about durability, so in async mode flush is not even sent to
 * us (see fs_flush; a copy of 10,000 small files must not pay 10,000
 * journal commits, nor 10,000 round trips). When a
 * sync-mode hook is set, flush of a written file makes it durable
 * locally (journal commit, then fdatasync of the store file) and then
 * waits for the peer: the DRBD "protocol C" promise at close and fsync.
 * fsync always commits the journal before syncing the store, so after a
 * crash the journal names at least every file whose data was synced.
 *
 * Each store write is bracketed: record_write_begin makes the file's
 * durability mark durable before its first change of an epoch (so a crash
 * right after the write still finds the file marked; after that it is a
 * lock and a lookup), and record_write after the write merges the range
 * the sender must read.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "fs/backing.h"
#include "fs/cred.h"
#include "fs/fs_internal.h"
#include "fs/fuse314.h"
#include "fs/procfd.h"
#include "fs/record.h"
#include "fs/ring.h"

/*
 * Large writes start their disk IO at once (sync_file_range WRITE does not
 * wait). The kernel sends us a file's dirty pages in bulk (at close, or
 * when its writeback budget is full), so without this the store's disk
 * sits idle while we copy and only starts at the final sync; with it the
 * store is written while the copy is still arriving, as a native copy's
 * writeback would be. Small writes are left to the store's own writeback.
 */
#define FS_EARLY_WRITEBACK (256 * 1024)

/* Store open flags for a kernel open: with the writeback cache the kernel
 * may read pages of a file opened write-only and handles O_APPEND itself;
 * O_DIRECT is served by direct_io on our side (the kernel's buffers are
 * not aligned for the store), so the store fd is opened buffered. */
static int fs_store_flags(struct fs *fs, struct fuse_file_info *fi)
{
	int flags = fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT);

	if (fs->writeback) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	return flags | O_CLOEXEC;
}

static void fs_file_opts(struct fuse_file_info *fi)
{
	if (fi->flags & O_DIRECT)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;	/* only this mount changes the store */
}

/* When passthrough writers are marked: "Marking what passthrough writers
 * wrote", below. */
#define FS_PTW_RACY_S 0.05
#define FS_PTW_IDLE_S 2.0
#define FS_PTW_SPACING_S 1.0
#define FS_PTW_BUSY_S 10.0
#define FS_PTW_RESEND_BPS (64.0 * 1024 * 1024)

/* Passthrough or not (fs/backing.c). A passthrough file we may write to
 * is marked before its first write, as fs_write_buf would. */
static int fs_file_choose(struct fs *fs, fuse_req_t req, struct fs_file *f,
			  struct fuse_file_info *fi, bool fresh)
{
	int rc = backing_choose(fs, req, f, fi->flags, fresh);

	if (rc < 0)
		return rc;
	if (f->pt_write) {
		record_write_begin(fs, f->inode, f->fd);
		f->written = true;
		/* "Marking what passthrough writers wrote", below */
		f->next_scan = clock_mono_s() + FS_PTW_SPACING_S;
		f->next_full = clock_mono_s() + FS_PTW_BUSY_S;
		pthread_mutex_lock(&fs->ptw_mu);
		f->ptw_next = fs->ptw_head;
		if (fs->ptw_head)
			fs->ptw_head->ptw_prev = f;
		fs->ptw_head = f;
		pthread_mutex_unlock(&fs->ptw_mu);
	}
	return 0;
}

/* The inode stays attached while it has open files (fs/inode.c: an
 * unlinked one could not be reopened). */
static struct fs_file *fs_file_new(struct fs *fs, int fd, int flags, struct inode *i)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (f) {
		f->fd = fd;
		f->fd_rw = (flags & O_ACCMODE) == O_RDWR;
		f->inode = i;
		inode_open_pin(fs->itab, i, fd);
	}
	return f;
}

static void fs_file_free(struct fs *fs, fuse_req_t req, struct fs_file *f)
{
	if (f->pt_write) {
		record_unpin(fs, f->inode);	/* its release marked it */
		pthread_mutex_lock(&fs->ptw_mu);
		if (f->ptw_prev)
			f->ptw_prev->ptw_next = f->ptw_next;
		else
			fs->ptw_head = f->ptw_next;
		if (f->ptw_next)
			f->ptw_next->ptw_prev = f->ptw_prev;
		pthread_mutex_unlock(&fs->ptw_mu);
	}
	backing_release(fs, req, f);
	inode_open_unpin(fs->itab, f->inode);
	close(f->fd);
	free(f);
}

/*
 * Marking what passthrough writers wrote. A passthrough file with write
 * access is changed behind our back, in ways we cannot know, so the
 * journal gets its whole current content: at fsync, flush and release,
 * and, while it stays open, from fs_scan_writers. Without the scan a
 * file kept open (a shell redirect of a long-running program's output,
 * `tee`, an export written over hours) reached the peer only at its
 * close, and `twinfs sync` returned 0 while the peer had none of it.
 *
 * What the scan skips: a file whose ctime and size are what the last mark
 * saw has not been written since (passthrough writes update the store
 * file's ctime, and a ctime is never set from user space). One catch: a
 * coarse clock gives two writes in one tick the same ctime, so a mark
 * that saw a ctime from the last FS_PTW_RACY_S is "racy" and the next
 * scan marks again (multigrain timestamps, Linux 6.13+, make the second
 * write's ctime differ anyway on the filesystems that have them).
 *
 * Cost: the sender reads and hashes a whole-file mark whole (it puts on
 * the wire only the blocks the peer lacks, netsync/sentmap.c), so the
 * tick's scan (every second) marks a changed file once it has been idle
 * for FS_PTW_IDLE_S (a log between bursts, a program that wrote its
 * output and keeps it open), at most once per FS_PTW_SPACING_S; a file
 * written without pause (a big copy) only every FS_PTW_BUSY_S or size /
 * FS_PTW_RESEND_BPS, whichever is longer, which bounds the re-reading to
 * 64 MiB/s. A file written without pause is thus on the peer while it
 * is written, and its data still goes over once
 * (e2e_replication_open_writer). The lag shows in status
 * (unmarked_files).
 * Between two marks of a file, each tick pins its durability mark if it
 * was written since the last one (journal_pin): a mark counts for one
 * epoch, and once the peer has acked everything the epoch ends, so a
 * write after that, followed by a crash of this node, was forgotten by
 * the restarted journal (test: e2e_replication_open_writer_crash). The
 * pin makes the mark durable and holds the epoch open until the file's
 * ranges are marked (as above) or it is closed. A file not written
 * since its last mark costs an fstat per tick.
 * `twinfs sync` forces a scan (no spacing). fsync, flush and release
 * mark whatever the ctime says, as before: a write through a shared
 * mapping into a page already dirtied since the last mark changes no
 * ctime, so the tick's scan can miss it until then (msync is an fsync).
 * The forced scan therefore marks every open that can map the file
 * shared and writable (O_RDWR), changed or not: `twinfs sync` returned 0
 * while the peer lacked such a write (e2e_replication_open_writer). The
 * sender re-reads such a file whole at each `twinfs sync`, but puts only
 * the blocks the peer lacks on the wire (netsync/sentmap.c). Sync-mode
 * mounts do not give writers passthrough at all (fs/backing.c), since
 * their fsyncs would each re-send the whole file.
 */

/* Seconds since ST's ctime (wall clock, as the ctime). */
static double fs_ctime_age(const struct stat *st)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - st->st_ctim.tv_sec) +
	       (double)(now.tv_nsec - st->st_ctim.tv_nsec) / 1e9;
}

/* Was F written since its last mark (as far as ST, its fstat, tells)? */
static bool fs_file_changed(const struct fs_file *f, const struct stat *st)
{
	return f->mark_racy || st->st_size != f->mark_size ||
	       st->st_ctim.tv_sec != f->mark_ctime.tv_sec ||
	       st->st_ctim.tv_nsec != f->mark_ctime.tv_nsec;
}

/* Caller holds fs->ptw_mu. Marks F whole as ST (its fstat) shows it. */
static void fs_file_mark_all_locked(struct fs *fs, struct fs_file *f,
				    const struct stat *st)
{
	double spacing = (double)st->st_size / FS_PTW_RESEND_BPS;

	record_write(fs, f->inode, f->fd, 0, (uint64_t)st->st_size);
	if (st->st_size == 0)
		record_unpin(fs, f->inode);	/* no range to take the pin over */
	f->mark_ctime = st->st_ctim;
	f->mark_size = st->st_size;
	f->mark_racy = fs_ctime_age(st) < FS_PTW_RACY_S;
	f->next_scan = clock_mono_s() + FS_PTW_SPACING_S;
	f->next_full = clock_mono_s() + (spacing > FS_PTW_BUSY_S ? spacing :
					 FS_PTW_BUSY_S);
}

/* fsync, flush, release: whatever the ctime says (see above). */
static void fs_file_mark_all(struct fs *fs, struct fs_file *f)
{
	struct stat st;

	if (!f->pt_write)
		return;
	pthread_mutex_lock(&fs->ptw_mu);
	if (fstat(f->fd, &st) == 0)
		fs_file_mark_all_locked(fs, f, &st);
	pthread_mutex_unlock(&fs->ptw_mu);
}

void fs_scan_writers(void *arg, bool force)
{
	struct fs *fs = arg;
	double now = clock_mono_s();
	struct fs_file *f;

	pthread_mutex_lock(&fs->ptw_mu);
	for (f = fs->ptw_head; f; f = f->ptw_next) {
		struct stat st;

		if (fstat(f->fd, &st) < 0)
			continue;
		/* `twinfs sync`: an open that can map the file shared and
		 * writable may have changed it without a ctime (see above). */
		if (force && f->pt_map) {
			fs_file_mark_all_locked(fs, f, &st);
			continue;
		}
		if (!fs_file_changed(f, &st))
			continue;	/* not written since its last mark */
		if (force || now >= f->next_full ||
		    (now >= f->next_scan && fs_ctime_age(&st) >= FS_PTW_IDLE_S))
			fs_file_mark_all_locked(fs, f, &st);
		else	/* not due: pin its durability mark (cheap if pinned) */
			record_pin(fs, f->inode, f->fd);
	}
	pthread_mutex_unlock(&fs->ptw_mu);
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct inode *dir = inode_get(fs->itab, parent);
	struct record rec;
	struct fuse_entry_param e;
	struct cred_saved cs;
	struct fs_file *f = NULL;
	struct inode *inode;
	int base = fs_store_flags(fs, fi) & ~O_TRUNC;
	int flags = backing_store_flags(fs, fi->flags, base);
	bool created = true;
	int fd, rc = 0, dfd;

	dfd = inode_fd_get(fs->itab, dir);
	if (dfd < 0) {
		fuse_reply_err(req, -dfd);
		return;
	}
	record_begin(fs, &rec, JOP_CREATE, dir, name, NULL, NULL);
	cred_enter(req, &cs);
	/* open(2) takes its fd before it creates: EMFILE leaves no file. */
	fd = openat(dfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW,
		    mode & 07777);
	if (fd < 0 && errno == EEXIST && !(fi->flags & O_EXCL)) {
		/* Lost a race with another create of the same name: open
		 * the existing file as open(2) would (its O_TRUNC below). */
		created = false;
		fd = openat(dfd, name, flags);
		if (fd < 0 && errno == EACCES && flags != base) {
			flags = base;
			fd = openat(dfd, name, base);
		}
	}
	if (fd < 0)
		rc = -errno;
	cred_leave(&cs);
	inode_fd_put(fs->itab, dir, dfd);
	if (rc < 0)
		goto out_unlock;
	rc = fs_do_lookup(fs, dir, name, &e);
	if (rc < 0)
		goto out_close;
	f = fs_file_new(fs, fd, flags, inode_get(fs->itab, e.ino));
	if (!f) {
		rc = -ENOMEM;
		inode_unref(fs->itab, inode_get(fs->itab, e.ino), 1);
		goto out_close;
	}
	/* A file we just made has no file capabilities (nothing inherits
	 * them); see fs_getxattr for why that is worth remembering. */
	if (created) {
		__atomic_store_n(&f->inode->no_caps, true, __ATOMIC_RELAXED);
		record_seed(fs, &rec, f->inode);
		rec.made = &e.attr;
	}
	rec.op.mode = e.attr.st_mode;
	rec.op.uid = e.attr.st_uid;
	rec.op.gid = e.attr.st_gid;
	rec.op.ino = e.attr.st_ino;
	record_end(fs, &rec, created);
	if (!created && (fi->flags & O_TRUNC) && S_ISREG(e.attr.st_mode)) {
		rc = fs_truncate_open(req, fs, f->inode, &e.attr);
		if (rc < 0) {
			fuse_reply_err(req, -rc);
			goto out_forget;
		}
	}
	fi->fh = (uintptr_t)f;
	fs_file_opts(fi);
	rc = fs_file_choose(fs, req, f, fi, (created || e.attr.st_size == 0) &&
			    !(e.attr.st_mode & (S_ISUID | S_ISGID)));
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		goto out_forget;
	}
	if (backing_reply(req, fs, f, &e, fi) < 0)
		goto out_forget;	/* interrupted: the kernel has neither */
	return;
out_forget:
	/* The kernel never got the entry: drop fs_do_lookup's reference. */
	inode = f->inode;
	fs_file_free(fs, req, f);
	inode_unref(fs->itab, inode, 1);
	return;
out_close:
	close(fd);
out_unlock:
	/* A file we created stays in the store even if we fail to open it
	 * for the kernel: record it. */
	record_end(fs, &rec, created && fd >= 0);
	fuse_reply_err(req, -rc);
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	char proc[PROCFD_NAME_MAX];
	struct fs_file *f;
	struct stat st;
	int fd, base, flags, rc, e, pdir;
	bool fresh = false;

	/* O_TRUNC comes with the open (atomic_o_trunc, fs_init): the
	 * truncate is journalled below, as a setattr would be, before the
	 * passthrough choice, which then sees an empty file. O_NOFOLLOW
	 * was already honoured by the kernel on the user's path; on our
	 * /proc/self/fd magic link it would fail every open with ELOOP. */
	rc = inode_fd_get(fs->itab, i);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	pdir = procfd_at(rc, proc);
	base = fs_store_flags(fs, fi) & ~(O_TRUNC | O_NOFOLLOW);
	flags = backing_store_flags(fs, fi->flags, base);
	fd = openat(pdir, proc, flags);
	if (fd < 0 && flags != base && errno != EMFILE && errno != ENFILE) {
		flags = base;
		fd = openat(pdir, proc, base);	/* EROFS, ETXTBSY, immutable... */
	}
	e = errno;
	inode_fd_put(fs->itab, i, rc);
	if (fd < 0) {
		fuse_reply_err(req, e);
		return;
	}
	/* Kernel readahead arrives as parallel 1 MiB reads that several
	 * workers serve out of order, which keeps resetting the store
	 * file's own readahead window; the doubled window of SEQUENTIAL
	 * keeps the disk streaming (docs/benchmarks.md, "cold reads").
	 * Random readers are not hurt: the kernel still only reads ahead
	 * on sequential misses. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if ((fi->flags & O_TRUNC) && i->type == S_IFREG) {
		rc = fs_truncate_open(req, fs, i, &st);
		if (rc < 0) {
			close(fd);
			fuse_reply_err(req, -rc);
			return;
		}
	}
	f = fs_file_new(fs, fd, flags, i);
	if (!f) {
		close(fd);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)f;
	fs_file_opts(fi);
	/* Only a write-only open asks whether the file is empty. */
	if (__atomic_load_n(&fs->pt_on, __ATOMIC_RELAXED) &&
	    (fi->flags & O_ACCMODE) == O_WRONLY)
		fresh = fstat(fd, &st) == 0 && st.st_size == 0 &&
			!(st.st_mode & (S_ISUID | S_ISGID));
	rc = fs_file_choose(fs, req, f, fi, fresh);
	if (rc < 0) {
		fs_file_free(fs, req, f);
		fuse_reply_err(req, -rc);
		return;
	}
	if (backing_reply(req, fs, f, NULL, fi) < 0)
		fs_file_free(fs, req, f);
}

/*
 * Reads served by the daemon (no passthrough: a mount by a non-root user,
 * --no-passthrough, a file open for writing through us) are read into a
 * buffer that is then sent as is: on a ring, the ring's own reply buffer
 * (fs/ring.c), else one per worker thread, kept for its next reads.
 * Handing libfuse 3.14 the fd makes it malloc a fresh buffer per request
 * (or splice through a pipe), whose page faults dominate the daemon's CPU
 * (docs/benchmarks.md, "daemon-served reads").
 */
struct fs_rdbuf {
	size_t cap;
	char *p;
};

static pthread_key_t fs_rdbuf_key;
static pthread_once_t fs_rdbuf_once = PTHREAD_ONCE_INIT;

static void fs_rdbuf_free(void *arg)
{
	struct fs_rdbuf *b = arg;

	free(b->p);
	free(b);
}

static void fs_rdbuf_init(void)
{
	if (pthread_key_create(&fs_rdbuf_key, fs_rdbuf_free) != 0)
		log_error("cannot create the read buffer key", "err=none");
}

/* A page-aligned buffer (O_DIRECT) for SIZE bytes, or NULL. */
static char *fs_read_buf(size_t size)
{
	struct fs_rdbuf *b;
	size_t cap;
	char *p = ring_reply_buf(&cap);

	if (p && size <= cap)
		return p;
	pthread_once(&fs_rdbuf_once, fs_rdbuf_init);
	b = pthread_getspecific(fs_rdbuf_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(fs_rdbuf_key, b) != 0) {
			free(b);
			return NULL;
		}
	}
	if (b->cap < size) {
		cap = (size + 4095) & ~(size_t)4095;
		p = aligned_alloc(4096, cap);
		if (!p)
			return NULL;
		free(b->p);
		b->p = p;
		b->cap = cap;
	}
	return b->p;
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	char *rb = fs_read_buf(size);
	size_t got = 0;
	ssize_t n;

	if (!rb) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (got < size) {
		n = pread(fs_file_of(fi)->fd, rb + got, size - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fuse_reply_err(req, errno);
			return;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	fuse_reply_buf(req, rb, got);
}

void fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
		  off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_file *f = fs_file_of(fi);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	char caps[256];
	ssize_t n, ncaps = -1;

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = f->fd;
	out.buf[0].pos = off;
	/* A write by a caller without CAP_FSETID clears set-id bits first,
	 * as file_remove_privs does on a local filesystem (the store would
	 * not: we write as root). Capabilities the store clears itself. */
	if (fs->kp2_on && fuse314_kill_suidgid()) {
		struct stat st;
		int rc = fs_kill_suidgid(req, fs, f->inode, f->fd, &st);

		if (rc < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
	/* The page cache's delayed write (a mapping's dirty pages written
	 * back) is no write(2): a local filesystem keeps the file's
	 * capabilities through it, the store's pwrite would drop them. */
	if (fi->writepage && !__atomic_load_n(&f->inode->no_caps, __ATOMIC_RELAXED))
		ncaps = fgetxattr(f->fd, FS_XATTR_CAPS, caps, sizeof(caps));
	record_write_begin(fs, f->inode, f->fd);
	n = fuse_buf_copy(&out, in, 0);
	if (ncaps > 0 && fgetxattr(f->fd, FS_XATTR_CAPS, NULL, 0) < 0 && errno == ENODATA)
		(void)fsetxattr(f->fd, FS_XATTR_CAPS, caps, (size_t)ncaps, 0);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	f->written = true;
	record_write(fs, f->inode, f->fd, (uint64_t)off, (uint64_t)n);
	if (n >= FS_EARLY_WRITEBACK)
		sync_file_range(f->fd, off, n, SYNC_FILE_RANGE_WRITE);
	fuse_reply_write(req, (size_t)n);
}

/*
 * Makes F durable here and, in sync mode, on the peer. Async and
 * local-only: the journal's commit of the file's records (its marks name
 * what the peer must get), then the file's fsync. Sync mode: the barrier
 * first, then the local fsync while the peer's path is under way, as
 * DRBD's protocol C writes locally and remotely at once. No journal
 * commit of ours there: the sender commits the batch's BATCH record, and
 * every record before it, before it sends the batch, so the peer's ack
 * implies it, and our records join that one flush instead of taking one
 * of their own. If the peer does not ack in time, the commit is made
 * here after all. Measured, paired 4 KiB write+fsync calls:
 * docs/replication.md, "Sync mode latency". Returns the local result (0
 * or -errno); a peer failure is only logged (the mount degrades to async
 * on its own, see primary.h).
 */
static int fs_file_sync_both(struct fs *fs, struct fs_file *f, bool datasync)
{
	uint64_t ticket = 0;
	bool peer;
	int rc = 0, prc;

	fs_file_mark_all(fs, f);
	peer = fs->peer_begin && fs->peer_begin(fs->peer_arg, &ticket);
	if (!peer) {
		rc = record_commit(fs);
		if (rc < 0)
			return rc;
	}
	if ((datasync ? fdatasync(f->fd) : fsync(f->fd)) < 0)
		rc = -errno;
	if (!peer)
		return rc;
	prc = fs->peer_end(fs->peer_arg, ticket);
	/* -ESHUTDOWN: the journal closed under us (only at unmount, once
	 * no request is left); there is nothing left to commit to */
	if (prc < 0 && prc != -ESHUTDOWN) {
		log_warn("peer did not confirm in time; continuing as async",
			 "err=\"%s\"", strerror(-prc));
		prc = record_commit(fs);
		if (rc == 0)
			rc = prc;
	}
	return rc;
}

/* Sync mode at close: durable here and on the peer. */
static int fs_file_sync_peer(struct fs *fs, struct fs_file *f)
{
	f->written = false;
	return fs_file_sync_both(fs, f, true);
}

/*
 * Flush is one synchronous round trip in every close(2), and in async
 * mode it has nothing to do: close promises no durability, and with the
 * writeback cache the kernel writes the file's dirty pages (WRITE) and
 * reports their errors to close before it would send FLUSH. The
 * protocol's way to say "nothing to do, ever" is ENOSYS: the kernel then
 * treats every later flush as successful without asking us (fc->no_flush,
 * for the whole connection). Measured: 8 requests per small file copied
 * became 7. peer_begin is fixed for the life of the mount, so a sync-mode
 * mount keeps receiving flush. We take no POSIX or BSD locks (the kernel
 * keeps them), so no lock owner needs flush either.
 */
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_file *f = fs_file_of(fi);
	int rc = 0;

	if (!fs->peer_begin) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* A passthrough writer may have written since its last fsync without
	 * our knowing (that fsync cleared `written`), as at release. */
	if (f->written || f->pt_write)
		rc = fs_file_sync_peer(fs, f);
	fuse_reply_err(req, -rc);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_file *f = fs_file_of(fi);

	/* Pages written back after the last flush (writeback cache), or
	 * passthrough writes since then. */
	if ((f->written || f->pt_write) && fs->peer_begin)
		fs_file_sync_peer(fs, f);
	else
		fs_file_mark_all(fs, f);
	fs_file_free(fs, req, f);
	fuse_reply_err(req, 0);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_file *f = fs_file_of(fi);
	int rc;

	rc = fs_file_sync_both(fs, f, datasync);
	if (rc == 0)
		f->written = false;
	fuse_reply_err(req, -rc);
}

void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		  off_t length, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_file *f = fs_file_of(fi);

	record_write_begin(fs, f->inode, f->fd);
	if (fallocate(f->fd, mode, offset, length) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	f->written = true;
	record_write(fs, f->inode, f->fd, (uint64_t)offset, (uint64_t)length);
	fuse_reply_err(req, 0);
}

void fs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			off_t off_out, struct fuse_file_info *fi_out,
			size_t len, int flags)
{
	struct fs *fs = fs_of(req);
	struct fs_file *in = fs_file_of(fi_in), *out = fs_file_of(fi_out);
	loff_t from = off_in, to = off_out;
	ssize_t n;

	record_write_begin(fs, out->inode, out->fd);
	n = copy_file_range(in->fd, &from, out->fd, &to, len, (unsigned)flags);
	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	out->written = true;
	record_write(fs, out->inode, out->fd, (uint64_t)off_out, (uint64_t)n);
	fuse_reply_write(req, (size_t)n);
}

void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi)
{
	off_t res = lseek(fs_file_of(fi)->fd, off, whence);

	if (res < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}
