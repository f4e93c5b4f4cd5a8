/*
 * fs_internal — what the fs/ files share: the mounted filesystem's state,
 * the open-file and open-directory handles, and the fs_<op> handlers that
 * fs.c lists in the one fuse_lowlevel_ops table. Not for other modules.
 */
#ifndef TWINFS_FS_INTERNAL_H
#define TWINFS_FS_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <errno.h>

#include "fs/evict.h"
#include "fs/fs.h"
#include "fs/inode.h"

struct fs {
	struct inode_table *itab;	/* thread-safe */
	struct journal *journal;	/* NULL: nothing recorded */
	/* Bumped by every applied rename, unlink and rmdir, under the
	 * journal's namespace lock: a cached record path (inode.rpath) from
	 * an older generation may name something else now. */
	uint64_t ns_gen;
	char *store;		/* realpath of the store; immutable */
	size_t store_len;
	double timeout;		/* entry/attr cache seconds; immutable */
	bool writeback;		/* kernel writeback cache negotiated (init) */
	/* Passthrough (fs/backing.c): wanted by the user, offered by the
	 * kernel (seen in its INIT request), negotiated in init (fixed for
	 * the connection), on (new backing files may be registered; turned
	 * off if the kernel refuses them). */
	bool pt_want, pt_offered, pt_negotiated, pt_on;
	bool init_replied;	/* the INIT reply went out (devio hook) */
	/* FUSE over io_uring (fs/ring.c): wanted (asked for and not sync
	 * mode), offered by the kernel (INIT request), on (asked for in our
	 * INIT reply), and the rings once started. */
	bool ring_want, ring_offered, ring_on;
	uint32_t ring_poll_us;	/* fs_opts.uring_poll_us; immutable */
	/* FUSE_HANDLE_KILLPRIV_V2 (fs/fuse314.c): offered by the kernel,
	 * and on (asked for): then the kernel asks for security.capability
	 * once per inode, not before every write, and we clear set-id bits
	 * where it flags a request (fs_kill_suidgid). */
	bool kp2_offered, kp2_on;
	/* What the kernel's INIT request offered (flags, flags2), for the
	 * log: which features this kernel has that we do not ask for. */
	uint32_t init_flags, init_flags2;
	struct ring *ring;
	pthread_t main_thread;	/* runs fs_run; a SIGTERM there unmounts */
	bool (*peer_begin)(void *arg, uint64_t *ticket);	/* fs_opts */
	int (*peer_end)(void *arg, uint64_t ticket);
	void *peer_arg;
	struct fuse_session *se;
	struct evict *evict;	/* NULL until the session is mounted */
	/* Open passthrough files with write access (fs_file.pt_write), for
	 * the scan that marks what they wrote (fs_scan_writers). The mutex
	 * also guards their mark_* fields. */
	pthread_mutex_t ptw_mu;
	struct fs_file *ptw_head;
};

/* An open file (fi->fh). */
struct fs_file {
	int fd;			/* store fd opened with the request's flags */
	bool fd_rw;		/* ... and those were O_RDWR (fs/backing.c) */
	struct inode *inode;
	bool written;		/* set by a worker, read at flush/release; a
				 * stale read only delays peer_begin to release */
	int backing;		/* passthrough backing id, 0: through us */
	bool counted;		/* in its inode's n_pt or n_cached */
	bool pt_write;		/* passthrough with write access: we never see
				 * its writes, so the whole file is marked
				 * dirty at flush, fsync, release and by
				 * fs_scan_writers while it stays open */
	bool pt_map;		/* pt_write opened O_RDWR: it can be mapped
				 * shared and writable */
	/* pt_write only, under fs.ptw_mu: the list, and what the last
	 * whole-file mark saw (ctime, size; racy: the ctime was so recent
	 * that a write in the same clock tick could still follow unseen),
	 * and when the tick's scan may mark it again: once idle, or anyway
	 * (CLOCK_MONOTONIC s). */
	struct fs_file *ptw_prev, *ptw_next;
	struct timespec mark_ctime;
	off_t mark_size;
	bool mark_racy;
	double next_scan, next_full;
};

/* An open directory (fi->fh). Readdir calls on one handle are serialised
 * by the kernel (it holds the file's position lock). */
struct fs_dir {
	DIR *dp;
	off_t offset;		/* telldir cookie of the next entry */
	struct dirent *entry;	/* read but not yet returned */
};

static inline struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct fs_file *fs_file_of(struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)fi->fh;
}

/* st_blksize we report, which programs size their IO by (cp, most
 * stdio): 128 KiB, coreutils' own minimum, so they cross the kernel
 * boundary in large steps (4 KiB would cost a syscall per page). Not the
 * largest FUSE write (1 MiB): writes reach us through the writeback cache
 * or not at all (passthrough), so a write(2)'s size sets no request size,
 * and a 1 MiB buffer falls out of the CPU cache (docs/benchmarks.md,
 * "st_blksize"). */
#define FS_IO_SIZE (128 << 10)

static inline void fs_fix_stat(struct stat *st)
{
	st->st_blksize = FS_IO_SIZE;
}

/* The xattr holding file capabilities (XATTR_NAME_CAPS). */
#define FS_XATTR_CAPS "security.capability"

/* Clears the set-id bits of inode I through FD (any fd on it) that a
 * write by REQ's caller clears on a local filesystem, records the change
 * and drops the kernel's cached attributes: for the requests the kernel
 * flags (fuse314_kill_suidgid: a caller without CAP_FSETID). *ST is
 * updated. Returns 0 or -errno. */
int fs_kill_suidgid(fuse_req_t req, struct fs *fs, struct inode *i, int fd,
		    struct stat *st);

/* open(2) with O_TRUNC of an existing file (the kernel sends the flag
 * with the open: FUSE_CAP_ATOMIC_O_TRUNC, fs_init): truncates inode I to
 * size 0 and records it as the setattr the kernel would otherwise have
 * sent first, set-id bits cleared where the kernel flags the open
 * (FUSE_OPEN_KILL_SUIDGID). *ST is the inode after. Returns 0 or -errno. */
int fs_truncate_open(fuse_req_t req, struct fs *fs, struct inode *i,
		     struct stat *st);


/* Looks NAME up under PARENT: fills *e (attrs, timeouts, node id) and
 * adds one lookup reference. Returns 0 or -errno. Any worker thread. */
int fs_do_lookup(struct fs *fs, struct inode *parent, const char *name,
		 struct fuse_entry_param *e);

/* entry.c: names */
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);
void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);

/* attr.c: attributes, xattrs, statfs, access */
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi);
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_access(fuse_req_t req, fuse_ino_t ino, int mask);
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* file.c: open files and their data */
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		  off_t off, struct fuse_file_info *fi);
/* Marks dirty every open passthrough writer changed since its last mark
 * (file.c, "Marking what passthrough writers wrote"); without FORCE, only
 * those whose spacing allows. A journal_scan_fn; any thread. */
void fs_scan_writers(void *arg, bool force);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		  off_t length, struct fuse_file_info *fi);
void fs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			off_t off_out, struct fuse_file_info *fi_out,
			size_t len, int flags);
void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi);

/* dir.c: directory handles */
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);

#endif
