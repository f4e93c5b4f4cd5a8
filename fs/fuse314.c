/*
 * fuse314 — the transport hooks libfuse 3.14 needs for passthrough and
 * FUSE over io_uring (see fuse314.h; delete with libfuse >= 3.18). Owns
 * the session's custom /dev/fuse io: bk_read looks at the kernel's INIT
 * request, bk_writev patches the INIT reply and open replies and routes
 * ring replies. The layouts are the kernel's (fs/kabi.h); which opens use
 * passthrough is fs/backing.c's business, not this file's.
 */
#include "fs/fuse314.h"

#include <errno.h>
#include <stddef.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/kabi.h"
#include "fs/ring.h"
#include "fs/stats.h"

#define F314_LIB_PASSTHROUGH (FUSE_VERSION >= FUSE_MAKE_VERSION(3, 17))

/* Our mount's stacking depth: backing files must come from a filesystem
 * of lower depth, i.e. an ordinary one. A store on overlayfs (depth 1)
 * fails BACKING_OPEN with ELOOP and is served through us. */
#define F314_STACK_DEPTH 1

/* Backing id the next open reply of this thread carries (3.14). */
static __thread int f314_reply_id;
/* The request this thread serves asked for set-id bits to be cleared. */
static __thread bool f314_kill;

void fuse314_note_request(const void *buf, size_t len)
{
	const struct fuse_in_header *h = buf;
	const char *arg = (const char *)buf + sizeof(*h);
	uint32_t v;

	f314_kill = false;
	fs_stats_begin(buf, len);
	if (len < sizeof(*h))
		return;
	if (h->opcode == FUSE_WRITE &&
	    len >= sizeof(*h) + offsetof(struct fuse_write_in, write_flags) + 4) {
		memcpy(&v, arg + offsetof(struct fuse_write_in, write_flags), 4);
		f314_kill = v & KABI_FUSE_WRITE_KILL_SUIDGID;
	} else if (h->opcode == FUSE_SETATTR &&
		   len >= sizeof(*h) + offsetof(struct fuse_setattr_in, valid) + 4) {
		memcpy(&v, arg + offsetof(struct fuse_setattr_in, valid), 4);
		f314_kill = v & KABI_FATTR_KILL_SUIDGID;
	}
}

bool fuse314_kill_suidgid(void)
{
	return f314_kill;
}

static ssize_t f314_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs *fs = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *h = buf;
	struct kabi_fuse_init_in in;

	/* libfuse serves what it read in this thread (no splice reads while
	 * kp2_on, see fs_init). */
	if (n > 0)
		fuse314_note_request(buf, (size_t)n);
	if (!fs->init_replied && n >= (ssize_t)(sizeof(*h) + sizeof(in)) &&
	    h->opcode == FUSE_INIT) {
		memcpy(&in, (const char *)buf + sizeof(*h), sizeof(in));
		fs->pt_offered = (in.flags & KABI_FUSE_INIT_EXT) &&
				 (in.flags2 & KABI_FUSE_PASSTHROUGH_FLAGS2);
		fs->ring_offered = (in.flags & KABI_FUSE_INIT_EXT) &&
				   (in.flags2 & KABI_FUSE_OVER_IO_URING_FLAGS2);
		fs->kp2_offered = in.flags & KABI_FUSE_HANDLE_KILLPRIV_V2;
	}
	return n;
}

/* Adds passthrough and the stack depth (3.14), the io_uring transport
 * and FUSE_HANDLE_KILLPRIV_V2 (which libfuse 3.14 cannot ask for) to the
 * INIT reply (iov[1]) as negotiated in fs_init. Returns
 * true if the reply now asks for the rings (then *MAX_WRITE and
 * *MAX_PAGES are the reply's, which size the ring buffers). */
static bool f314_patch_init(struct fs *fs, struct iovec *iov, int count,
			    struct kabi_fuse_init_out *out, uint32_t *max_write,
			    uint32_t *max_pages)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	bool pt = fs->pt_negotiated && !F314_LIB_PASSTHROUGH;

	/* Up to max_stack_depth at least; libfuse 3.14 sends 64 bytes. */
	if ((!pt && !fs->ring_on && !fs->kp2_on) || count != 2 || h->error != 0 ||
	    iov[1].iov_len < offsetof(struct kabi_fuse_init_out, max_stack_depth) +
			     sizeof(out->max_stack_depth) ||
	    iov[1].iov_len > sizeof(*out))
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out, iov[1].iov_base, iov[1].iov_len);
	if (pt) {
		out->flags2 |= KABI_FUSE_PASSTHROUGH_FLAGS2;
		out->max_stack_depth = F314_STACK_DEPTH;
	}
	if (fs->ring_on)
		out->flags2 |= KABI_FUSE_OVER_IO_URING_FLAGS2;
	if (fs->kp2_on)
		out->flags |= KABI_FUSE_HANDLE_KILLPRIV_V2;
	*max_write = out->max_write;
	*max_pages = out->max_pages;
	iov[1].iov_base = out;
	return fs->ring_on;
}

/* Adds FOPEN_PASSTHROUGH and the id to the fuse_open_out that ends an
 * open or create reply. */
static void f314_patch_open(struct iovec *iov, int count, unsigned char *copy,
			    size_t cap)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	struct iovec *last = &iov[count - 1];
	struct kabi_fuse_open_out o;

	if (count < 2 || h->error != 0 || last->iov_len < sizeof(o) ||
	    last->iov_len > cap)
		return;
	memcpy(copy, last->iov_base, last->iov_len);
	memcpy(&o, copy + last->iov_len - sizeof(o), sizeof(o));
	o.open_flags |= KABI_FOPEN_PASSTHROUGH;
	o.backing_id = f314_reply_id;
	memcpy(copy + last->iov_len - sizeof(o), &o, sizeof(o));
	last->iov_base = copy;
}

static ssize_t f314_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs *fs = userdata;
	struct iovec v[4];
	unsigned char copy[256];
	struct kabi_fuse_init_out out;
	uint32_t max_write = 0, max_pages = 0;
	bool ring = false;
	ssize_t n;

	if (count > 0)
		fs_stats_end(iov[0].iov_base, iov[0].iov_len);

	if ((!fs->init_replied || f314_reply_id > 0) &&
	    count <= (int)(sizeof(v) / sizeof(v[0]))) {
		memcpy(v, iov, (size_t)count * sizeof(*v));
		if (!fs->init_replied) {
			ring = f314_patch_init(fs, v, count, &out, &max_write,
					       &max_pages);
			fs->init_replied = true;
		} else {
			f314_patch_open(v, count, copy, sizeof(copy));
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

static ssize_t f314_splice(int fdin, off_t *offin, int fdout, off_t *offout,
			   size_t len, unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int fuse314_setup(struct fs *fs)
{
	const struct fuse_custom_io io = {
		.read = f314_read,
		.writev = f314_writev,
		.splice_receive = f314_splice,
		.splice_send = f314_splice,
	};

	return fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
}

#if F314_LIB_PASSTHROUGH
void fuse314_init(struct fs *fs, struct fuse_conn_info *conn)
{
	/* The hook still saw the INIT request (for the rings), but the
	 * library reports the kernel's offer itself. */
	fs->pt_offered = fuse_get_feature_flag(conn, FUSE_CAP_PASSTHROUGH);
	if (fs->pt_negotiated) {
		fuse_set_feature_flag(conn, FUSE_CAP_PASSTHROUGH);
		conn->max_backing_stack_depth = F314_STACK_DEPTH;
	}
}

int fuse314_backing_open(struct fs *fs, fuse_req_t req, int fd)
{
	int id;

	(void)fs;
	errno = 0;
	id = fuse_passthrough_open(req, fd);
	return id > 0 ? id : -(errno ? errno : EIO);
}

void fuse314_backing_close(struct fs *fs, fuse_req_t req, int id)
{
	(void)fs;
	if (fuse_passthrough_close(req, id) < 0)
		log_warn("could not release a passthrough backing file",
			 "id=%d err=\"%s\"", id, strerror(errno));
}

int fuse314_reply_open(fuse_req_t req, const struct fuse_entry_param *e,
		       struct fuse_file_info *fi, int backing_id)
{
	fi->backing_id = backing_id > 0 ? backing_id : 0;
	return e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
}
#else
void fuse314_init(struct fs *fs, struct fuse_conn_info *conn)
{
	/* The INIT hook saw the offer and adds the flag to the reply. */
	(void)fs;
	(void)conn;
}

int fuse314_backing_open(struct fs *fs, fuse_req_t req, int fd)
{
	struct kabi_fuse_backing_map map = { .fd = fd };
	int id;

	(void)req;
	id = ioctl(fuse_session_fd(fs->se), KABI_FUSE_DEV_IOC_BACKING_OPEN, &map);
	return id < 0 ? -errno : id;
}

void fuse314_backing_close(struct fs *fs, fuse_req_t req, int id)
{
	uint32_t v = (uint32_t)id;

	(void)req;
	if (ioctl(fuse_session_fd(fs->se), KABI_FUSE_DEV_IOC_BACKING_CLOSE, &v) < 0)
		log_warn("could not release a passthrough backing file",
			 "id=%d err=\"%s\"", id, strerror(errno));
}

int fuse314_reply_open(fuse_req_t req, const struct fuse_entry_param *e,
		       struct fuse_file_info *fi, int backing_id)
{
	int rc;

	f314_reply_id = backing_id > 0 ? backing_id : 0;
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	f314_reply_id = 0;
	return rc;
}
#endif
