/*
 * backing — FUSE passthrough (kernel 6.9+): for an open we mark
 * "passthrough", the kernel reads and writes the store file itself; no
 * READ or WRITE request, no copy through /dev/fuse, no page cache of the
 * mount in between. Any worker thread. Owns the /dev/fuse io hooks, the
 * backing ids and the per-inode open counts (one mutex); never touches
 * the journal (file.c marks what passthrough writes may have changed).
 *
 * Why hooks: libfuse 3.14 (Debian 12) predates passthrough. Its session
 * lets us supply the read and writev it uses on /dev/fuse, so we see the
 * kernel's INIT request (did it offer FUSE_PASSTHROUGH?), add the flag
 * and a stack depth to libfuse's INIT reply, and add FOPEN_PASSTHROUGH
 * and the backing id to the open and create replies libfuse builds —
 * the layouts are the kernel ABI (include/uapi/linux/fuse.h, 7.40).
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
 * Sync mode gives no writer passthrough: each fsync of a file written
 * that way must send the whole file, so appending 4 KiB + fsync 2,000
 * times to a new file sent 7.8 GB and took 41.7 s (fsync median 20.6 ms
 * and growing with the file); through us it sent 8 MiB in 5.3 s (2.4 ms).
 * A bulk copy into a sync-mode mount was faster through us as well:
 * `dd` of 512 MiB with conv=fsync 1.93 s against 3.36 s, 1,000 small
 * files 3.80 s against 4.67 s (one run each), since with passthrough the
 * data only starts for the peer at the file's close.
 * The kernel refuses to mix both kinds of open on one inode, so the first
 * open decides for every open that overlaps it; our counts lag the
 * kernel's (release reaches us after the kernel dropped the file), which
 * only ever errs towards keeping the first choice.
 */
#include "fs/backing.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/ring.h"

/* Kernel ABI newer than Debian 12's headers. */
#define BK_FUSE_PASSTHROUGH_FLAGS2 (1u << (37 - 32))	/* FUSE_PASSTHROUGH */
#define BK_FOPEN_PASSTHROUGH (1u << 7)
#define BK_INIT_OUT_FLAGS2 32		/* offsetof(fuse_init_out, flags2) */
#define BK_INIT_OUT_STACK_DEPTH 36	/* ... max_stack_depth */
#define BK_INIT_IN_FLAGS2 16		/* offsetof(fuse_init_in, flags2) */
#define BK_INIT_OUT_MAX_WRITE 20	/* ... fuse_init_out.max_write */
#define BK_INIT_OUT_MAX_PAGES 28	/* ... max_pages */
/* Our mount's stacking depth: backing files must come from a filesystem
 * of lower depth, i.e. an ordinary one. A store on overlayfs (depth 1)
 * fails BACKING_OPEN with ELOOP and is served through us. */
#define BK_STACK_DEPTH 1

struct bk_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define BK_IOC_BACKING_OPEN _IOW(229, 1, struct bk_backing_map)
#define BK_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

static pthread_mutex_t bk_mu = PTHREAD_MUTEX_INITIALIZER;

/* Backing id the next reply of this thread carries (backing_reply). */
static __thread int bk_reply_id;

static ssize_t bk_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs *fs = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *h = buf;
	uint32_t flags, flags2;

	if (!fs->init_replied && n >= (ssize_t)(sizeof(*h) + BK_INIT_IN_FLAGS2 + 4) &&
	    h->opcode == FUSE_INIT) {
		memcpy(&flags, (char *)buf + sizeof(*h) + 12, 4);
		memcpy(&flags2, (char *)buf + sizeof(*h) + BK_INIT_IN_FLAGS2, 4);
		fs->pt_offered = (flags & FUSE_INIT_EXT) &&
				 (flags2 & BK_FUSE_PASSTHROUGH_FLAGS2);
		fs->ring_offered = (flags & FUSE_INIT_EXT) &&
				   (flags2 & RING_INIT_FLAGS2);
	}
	return n;
}

/* Adds passthrough and the stack depth, and the io_uring transport, to
 * the INIT reply (iov[1]) as negotiated in fs_init. Returns true if the
 * reply now asks for the rings (then *MAX_WRITE and *MAX_PAGES are the
 * reply's, which size the ring buffers). */
static bool bk_patch_init(struct fs *fs, struct iovec *iov, int count,
			  unsigned char *copy, size_t cap, uint32_t *max_write,
			  uint32_t *max_pages)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	uint32_t flags2, depth = BK_STACK_DEPTH;
	uint16_t pages;

	if ((!fs->pt_negotiated && !fs->ring_on) || count != 2 || h->error != 0 ||
	    iov[1].iov_len < BK_INIT_OUT_STACK_DEPTH + 4 || iov[1].iov_len > cap)
		return false;
	memcpy(copy, iov[1].iov_base, iov[1].iov_len);
	memcpy(&flags2, copy + BK_INIT_OUT_FLAGS2, 4);
	if (fs->pt_negotiated) {
		flags2 |= BK_FUSE_PASSTHROUGH_FLAGS2;
		memcpy(copy + BK_INIT_OUT_STACK_DEPTH, &depth, 4);
	}
	if (fs->ring_on)
		flags2 |= RING_INIT_FLAGS2;
	memcpy(copy + BK_INIT_OUT_FLAGS2, &flags2, 4);
	memcpy(max_write, copy + BK_INIT_OUT_MAX_WRITE, 4);
	memcpy(&pages, copy + BK_INIT_OUT_MAX_PAGES, 2);
	*max_pages = pages;
	iov[1].iov_base = copy;
	return fs->ring_on;
}

/* Adds FOPEN_PASSTHROUGH and the id to the fuse_open_out that ends an
 * open or create reply. */
static void bk_patch_open(struct iovec *iov, int count, unsigned char *copy,
			  size_t cap)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	struct iovec *last = &iov[count - 1];
	struct fuse_open_out o;

	if (count < 2 || h->error != 0 || last->iov_len < sizeof(o) ||
	    last->iov_len > cap)
		return;
	memcpy(copy, last->iov_base, last->iov_len);
	memcpy(&o, copy + last->iov_len - sizeof(o), sizeof(o));
	o.open_flags |= BK_FOPEN_PASSTHROUGH;
	o.padding = (uint32_t)bk_reply_id;	/* backing_id */
	memcpy(copy + last->iov_len - sizeof(o), &o, sizeof(o));
	last->iov_base = copy;
}

static ssize_t bk_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs *fs = userdata;
	struct iovec v[4];
	unsigned char copy[256];
	uint32_t max_write = 0, max_pages = 0;
	bool ring = false;
	ssize_t n;

	if ((!fs->init_replied || bk_reply_id > 0) &&
	    count <= (int)(sizeof(v) / sizeof(v[0]))) {
		memcpy(v, iov, (size_t)count * sizeof(*v));
		if (!fs->init_replied) {
			ring = bk_patch_init(fs, v, count, copy, sizeof(copy),
					     &max_write, &max_pages);
			fs->init_replied = true;
		} else {
			bk_patch_open(v, count, copy, sizeof(copy));
		}
		iov = v;
	}
	n = ring_reply(iov, count);
	if (n != -ENOENT)
		return n;
	n = writev(fd, iov, count);
	/* The kernel has processed the INIT reply when the write returns:
	 * the rings may register now. */
	if (ring && n >= 0)
		ring_start(fs, max_write, max_pages);
	return n;
}

static ssize_t bk_splice(int fdin, off_t *offin, int fdout, off_t *offout,
			 size_t len, unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int backing_setup(struct fs *fs, bool want)
{
	const struct fuse_custom_io io = {
		.read = bk_read,
		.writev = bk_writev,
		.splice_receive = bk_splice,
		.splice_send = bk_splice,
	};

	fs->pt_want = want;
	return fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
}

bool backing_negotiate(struct fs *fs)
{
	/* Registering a backing file needs CAP_SYS_ADMIN. */
	fs->pt_on = fs->pt_want && fs->pt_offered && geteuid() == 0;
	fs->pt_negotiated = fs->pt_on;
	return fs->pt_on;
}

/* Registers the store file open on FD with the kernel. Returns the id or
 * -errno. */
static int bk_register(struct fs *fs, int fd)
{
	struct bk_backing_map map = { .fd = fd };
	int id = ioctl(fuse_session_fd(fs->se), BK_IOC_BACKING_OPEN, &map);

	return id < 0 ? -errno : id;
}

static void bk_unregister(struct fs *fs, int id)
{
	uint32_t v = (uint32_t)id;

	if (ioctl(fuse_session_fd(fs->se), BK_IOC_BACKING_CLOSE, &v) < 0)
		log_warn("could not release a passthrough backing file",
			 "id=%d err=\"%s\"", id, strerror(errno));
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

int backing_choose(struct fs *fs, struct fs_file *f, int flags, bool fresh)
{
	struct inode *i = f->inode;
	int fl, id;
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
		id = bk_register(fs, f->fd);
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
			fl = fcntl(f->fd, F_GETFL);
			i->backing_rw = fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
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

void backing_release(struct fs *fs, struct fs_file *f)
{
	struct inode *i = f->inode;

	if (!f->counted)
		return;
	pthread_mutex_lock(&bk_mu);
	if (f->backing) {
		if (--i->n_pt == 0) {
			bk_unregister(fs, i->backing);
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
	bk_reply_id = f->backing;
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	bk_reply_id = 0;
	if (rc < 0)
		backing_release(fs, f);
	return rc;
}
