/*
 * backing — FUSE passthrough policy (kernel 6.9+): which opens the kernel
 * serves from the store file itself (no READ or WRITE request, no copy
 * through /dev/fuse, no page cache of the mount in between), and the
 * per-inode open counts that keep that choice consistent. Any worker
 * thread; one mutex. The transport (negotiation, backing ioctls, replies
 * with a backing id) is fs/fuse314.c; the journal is file.c's (it marks
 * what passthrough writes may have changed).
 *
 * Which opens: passthrough cannot be combined with the writeback cache
 * and hides the writes from us, so the journal cannot record their
 * ranges. Reads lose nothing. For writes, a file that is new or empty
 * when opened write-only (cp, tar, rsync's temporary file, an editor's
 * save) is rewritten whole anyway: marking the whole file dirty when it
 * is closed sends exactly what ranges would have. Writes into existing
 * data (databases, images, logs appended to) keep going through us, so
 * the peer gets only the changed ranges. While such a file stays open,
 * fs_scan_writers marks it again whenever it changed (fs/file.c).
 * A file with set-id bits is written through us as well: an unprivileged
 * write must clear them (fs_kill_suidgid), and a passthrough write would
 * reach the store with our root credentials, which clear nothing.
 * Sync mode gives no writer passthrough: each fsync of a file written
 * that way must send the whole file again, and a bulk copy only starts
 * for the peer at the file's close (docs/benchmarks.md, "sync mode and
 * passthrough").
 * The kernel refuses to mix both kinds of open on one inode, so the first
 * open decides for every open that overlaps it; our counts lag the
 * kernel's (release reaches us after the kernel dropped the file), which
 * only ever errs towards keeping the first choice.
 */
#include "fs/backing.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/fuse314.h"

static pthread_mutex_t bk_mu = PTHREAD_MUTEX_INITIALIZER;

bool backing_negotiate(struct fs *fs)
{
	/* Registering a backing file needs CAP_SYS_ADMIN. */
	fs->pt_on = fs->pt_want && fs->pt_offered && geteuid() == 0;
	fs->pt_negotiated = fs->pt_on;
	return fs->pt_on;
}

/* The policy in the essay above, for an inode with no open file. */
static bool bk_wanted(const struct fs *fs, int flags, bool fresh)
{
	int acc = flags & O_ACCMODE;

	if (flags & O_DIRECT)
		return false;	/* direct_io through us, as before */
	if (acc == O_RDONLY)
		return true;
	if (fs->peer_begin)
		return false;	/* sync mode: see the essay */
	return acc == O_WRONLY && !(flags & O_APPEND) && fresh;
}

int backing_store_flags(struct fs *fs, int app_flags, int store_flags)
{
	if (!__atomic_load_n(&fs->pt_on, __ATOMIC_RELAXED) || (app_flags & O_DIRECT))
		return store_flags;
	return (store_flags & ~(O_ACCMODE | O_APPEND)) | O_RDWR;
}

int backing_choose(struct fs *fs, fuse_req_t req, struct fs_file *f, int flags,
		   bool fresh)
{
	struct inode *i = f->inode;
	int id;
	bool pt;

	f->backing = 0;
	f->pt_write = false;
	f->pt_map = false;
	if (!fs->pt_negotiated)
		return 0;
	pthread_mutex_lock(&bk_mu);
	if (i->n_pt > 0 && !i->backing_rw && (flags & O_ACCMODE) != O_RDONLY) {
		/* Open for passthrough reads from a read-only store fd (the
		 * store file could not be opened read-write); the kernel
		 * would refuse an ordinary open of it now. */
		pthread_mutex_unlock(&bk_mu);
		return -ETXTBSY;
	}
	if (i->n_pt > 0)
		pt = true;	/* even if pt_on was turned off since */
	else
		pt = __atomic_load_n(&fs->pt_on, __ATOMIC_RELAXED) &&
		     i->n_cached == 0 && bk_wanted(fs, flags, fresh);
	if (pt && i->n_pt == 0) {
		id = fuse314_backing_open(fs, req, f->fd);
		if (id < 0) {
			pt = false;
			/* These hold for every file of this store (ELOOP: the
			 * store itself is stacked, e.g. on overlayfs). */
			if (id == -EPERM || id == -EOPNOTSUPP || id == -ENOTTY ||
			    id == -ELOOP) {
				__atomic_store_n(&fs->pt_on, false, __ATOMIC_RELAXED);
				log_warn("the kernel refused FUSE passthrough; "
					 "serving all IO through the daemon",
					 "err=\"%s\"", strerror(-id));
			} else {
				log_info("passthrough not used for a file",
					 "ino=%llu err=\"%s\"",
					 (unsigned long long)i->ino, strerror(-id));
			}
		} else {
			i->backing = id;
			i->backing_rw = f->fd_rw;
		}
	}
	if (pt) {
		i->n_pt++;
		f->backing = i->backing;
		f->pt_write = (flags & O_ACCMODE) != O_RDONLY;
		f->pt_map = (flags & O_ACCMODE) == O_RDWR;
	} else {
		i->n_cached++;
	}
	f->counted = true;
	pthread_mutex_unlock(&bk_mu);
	return 0;
}

void backing_release(struct fs *fs, fuse_req_t req, struct fs_file *f)
{
	struct inode *i = f->inode;

	if (!f->counted)
		return;
	pthread_mutex_lock(&bk_mu);
	if (f->backing) {
		if (--i->n_pt == 0) {
			fuse314_backing_close(fs, req, i->backing);
			i->backing = 0;
		}
	} else {
		i->n_cached--;
	}
	f->counted = false;
	pthread_mutex_unlock(&bk_mu);
}

int backing_reply(fuse_req_t req, struct fs *fs, struct fs_file *f,
		  const struct fuse_entry_param *e, struct fuse_file_info *fi)
{
	int rc;

	if (f->backing) {
		/* FOPEN_DIRECT_IO would override passthrough. Without
		 * KEEP_CACHE the kernel drops the inode's cached pages at this
		 * open, and while any passthrough open exists nothing can
		 * cache new ones, so no page goes stale behind the writes
		 * that go around the page cache. */
		fi->direct_io = 0;
		fi->keep_cache = 0;
	}
	rc = fuse314_reply_open(req, e, fi, f->backing);
	if (rc < 0)
		backing_release(fs, req, f);
	return rc;
}
