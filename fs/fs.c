/*
 * fs — the mounted filesystem's lifecycle: checks, session options, the
 * kernel feature negotiation (init), the one fuse_lowlevel_ops table, the
 * readiness probe and the multithreaded loop. fs_run() runs in the mount
 * process's main thread; the handlers live in entry.c, attr.c, file.c and
 * dir.c. It never touches the journal except through record.c.
 *
 * Speed: when root mounts on a kernel with FUSE passthrough, reads and
 * writes of new files go from the kernel to the store files directly
 * (fs/backing.c; the writeback cache is then off, as the kernel requires).
 * The store is changed only through this mount, so the kernel may
 * cache everything for long: entries, negative entries and attributes for
 * a day, file pages across opens (keep_cache), directory listings
 * (cache_readdir), and, without passthrough, dirty pages (writeback
 * cache, flushed in 1 MiB writes). readdirplus fills the attribute cache in the same round trip as
 * the listing, parallel dirops let lookups and creates in one directory
 * run at once, and clone_fd gives every worker its own /dev/fuse queue.
 * POSIX ACLs are enforced and cached by the kernel (FUSE_CAP_POSIX_ACL),
 * so `ls -l` does not cost an ACL round trip per file. Splice is offered
 * to libfuse (not with the io_uring rings, fs/ring.c; for replies only
 * when the kernel takes FUSE_HANDLE_KILLPRIV_V2, see fs_init), but reads the
 * daemon serves are answered from a reused buffer (fs/file.c), which
 * costs far less CPU than libfuse's splice or per-request buffers.
 * Known difference: the kernel applies the umask before a create reaches
 * us even when the parent has a default ACL (which should replace it).
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/backing.h"
#include "fs/cred.h"
#include "fs/fs_internal.h"
#include "fs/fuse314.h"
#include "fs/record.h"
#include "fs/ring.h"

#define FS_CACHE_TIMEOUT 86400.0
#define FS_MAX_WRITE (1u << 20)
#define FS_DEFAULT_THREADS 16

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	unsigned int want = FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_PARALLEL_DIROPS |
			    FUSE_CAP_READDIRPLUS | FUSE_CAP_ASYNC_READ |
			    FUSE_CAP_ASYNC_DIO | FUSE_CAP_CACHE_SYMLINKS |
			    FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
			    FUSE_CAP_SPLICE_READ | FUSE_CAP_POSIX_ACL;

	/* Passthrough excludes the writeback cache (fs/backing.c). */
	if (backing_negotiate(fs))
		want &= ~FUSE_CAP_WRITEBACK_CACHE;
	fuse314_init(fs, conn);
	conn->want |= conn->capable & want;
	/* Set-id bits and capabilities are ours to clear (fs_kill_suidgid;
	 * the store clears capabilities on every write by itself), so the
	 * kernel need not ask for security.capability before every write.
	 * The kernel flags the requests that must clear set-id bits in
	 * their arguments, which we read in the /dev/fuse read hook: libfuse
	 * must not splice requests past it. */
	fs->kp2_on = fs->kp2_offered;
	if (fs->kp2_on)
		conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
	/* Ring replies must come to the writev hook (fs/ring.c), and libfuse
	 * would splice read data to /dev/fuse past it (it also asks for
	 * splice reads by default). */
	fs->ring_on = fs->ring_want && fs->ring_offered;
	if (fs->ring_on)
		conn->want &= ~(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
				FUSE_CAP_SPLICE_READ);
	/* A listing of a directory the kernel has not seen is read with
	 * attributes at once: `ls -l` and `find` need them anyway. */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* O_TRUNC arrives as a setattr, which is journalled. */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	fs->writeback = conn->want & FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = FS_MAX_WRITE;
	conn->max_readahead = FS_MAX_WRITE;
	conn->time_gran = 1;
	log_info("kernel connection negotiated", "capable=0x%x want=0x%x "
		 "writeback=%d passthrough=%d uring=%d killpriv_v2=%d max_write=%u",
		 conn->capable, conn->want, fs->writeback, fs->pt_on,
		 fs->ring_on, fs->kp2_on, conn->max_write);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.readlink = fs_readlink,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.open = fs_open,
	.read = fs_read,
	.write_buf = fs_write_buf,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
	.access = fs_access,
	.create = fs_create,
	.fallocate = fs_fallocate,
	.copy_file_range = fs_copy_file_range,
	.lseek = fs_lseek,
};

static void fs_forget_gone(void *arg, struct inode *i)
{
	record_forget(arg, i);
}

/* Returns -EBUSY if PATH (a realpath) is already a mount point. */
static int fs_check_not_mounted(const char *path)
{
	char line[8192], mnt[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		/* mountinfo escapes space, tab, newline and backslash as
		 * octal; paths with them simply never match here. */
		if (strcmp(mnt, path) == 0) {
			rc = -EBUSY;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Checks the store and mountpoint and fills fs->store. Logs what failed. */
static int fs_check_paths(const struct fs_opts *o, struct fs *fs,
			  char *mnt_real)
{
	struct stat st;
	size_t n;
	int rc;

	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		rc = -errno;
		log_error("cannot use /dev/fuse; load the fuse module "
			  "(modprobe fuse) or install fuse3", "err=\"%s\"",
			  strerror(-rc));
		return rc == -ENOENT ? -ENODEV : rc;
	}
	fs->store = realpath(o->store, NULL);
	if (!fs->store || stat(fs->store, &st) < 0) {
		rc = -errno;
		log_error("store directory not found; create it first",
			  "store=%s err=\"%s\"", o->store, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_error("store is not a directory", "store=%s", o->store);
		return -ENOTDIR;
	}
	if (!realpath(o->mountpoint, mnt_real) || stat(mnt_real, &st) < 0) {
		rc = -errno;
		log_error("mountpoint not found; create the directory first",
			  "mountpoint=%s err=\"%s\"", o->mountpoint,
			  strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_error("mountpoint is not a directory",
			  "mountpoint=%s", o->mountpoint);
		return -ENOTDIR;
	}
	n = strlen(fs->store);
	if (strncmp(mnt_real, fs->store, n) == 0 &&
	    (mnt_real[n] == '/' || mnt_real[n] == '\0')) {
		log_error("mountpoint is inside the store; choose a "
			  "mountpoint outside it", "store=%s mountpoint=%s",
			  fs->store, mnt_real);
		return -EINVAL;
	}
	rc = fs_check_not_mounted(mnt_real);
	if (rc < 0) {
		log_error("mountpoint is busy: something is already mounted "
			  "there; unmount it first (fusermount3 -u)",
			  "mountpoint=%s", mnt_real);
		return rc;
	}
	fs->store_len = n;
	return 0;
}

/*
 * Every inode the kernel holds costs us an O_PATH fd (the journal keeps
 * file handles, not fds, for dirty files), and the kernel keeps inodes as
 * long as its cache does: a tree of 10,000 files needs 10,000+ fds. Raise
 * the soft limit to the hard one, as passthrough_hp does; fs/evict.c keeps
 * the table within its share of whatever that gives.
 */
static void fs_raise_nofile(void)
{
	struct rlimit rl, want;
	char buf[32];
	int fd;
	ssize_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	want = rl;
	if (geteuid() == 0) {
		/* Root may raise the hard limit too, up to fs.nr_open, if it
		 * holds CAP_SYS_RESOURCE (containers often do not). */
		fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if ((rlim_t)strtoull(buf, NULL, 10) > want.rlim_max)
				want.rlim_max = (rlim_t)strtoull(buf, NULL, 10);
		}
	}
	want.rlim_cur = want.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &want) < 0) {
		want = rl;
		want.rlim_cur = want.rlim_max;
		setrlimit(RLIMIT_NOFILE, &want);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536)
		log_warn("open-file limit is low: the mount keeps one fd per "
			 "cached inode and asks the kernel to drop older names "
			 "past its budget, so a larger working set is looked up "
			 "again and again (raise LimitNOFILE or ulimit -Hn)",
			 "nofile=%llu inode_budget=%zu",
			 (unsigned long long)rl.rlim_cur,
			 evict_budget((unsigned long long)rl.rlim_cur));
}

/* Builds the -o option list: the defaults, then the user's. */
static int fs_session_args(const struct fs_opts *o, const struct fs *fs,
			   struct fuse_args *args)
{
	char *opt = NULL;
	int rc = -ENOMEM;

	if (fuse_opt_add_arg(args, "twinfs") < 0)
		return rc;
	if (o->debug && fuse_opt_add_arg(args, "-d") < 0)
		return rc;
	/* Mounted by root, the folder behaves as a local one would: device
	 * nodes open and set-id bits apply (libfuse would mount nodev,nosuid;
	 * -o nodev,nosuid, which come after these, restore that). */
	if (asprintf(&opt, "fsname=twinfs:%s,subtype=twinfs,default_permissions%s",
		     fs->store, geteuid() == 0 ? ",allow_other,dev,suid" : "") < 0)
		return rc;
	if (fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, opt) < 0)
		goto out_free;
	if (o->fuse_options && *o->fuse_options &&
	    (fuse_opt_add_arg(args, "-o") < 0 ||
	     fuse_opt_add_arg(args, o->fuse_options) < 0))
		goto out_free;
	rc = 0;
out_free:
	free(opt);
	return rc;
}

/* Writes VALUE to /sys/class/bdi/MAJ:MIN/NAME; logs and ignores failure. */
static void fs_bdi_set(dev_t dev, const char *name, const char *value)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/%s", major(dev),
		 minor(dev), name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, value, strlen(value)) < 0)
		log_info("could not tune the mount's writeback", "path=%s "
			 "err=\"%s\"", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * Readahead of the mount goes to 1 MiB, one FUSE read of maximum size, so
 * a cold sequential read costs one round trip per MiB (the kernel's
 * default is 128 KiB). The kernel's strict 1% dirty budget for FUSE
 * mounts is kept on purpose: it makes a large copy stream to us while
 * it runs, instead of all at close. Root only (sysfs).
 */
static void fs_tune_bdi(dev_t dev)
{
	if (geteuid() != 0)
		return;
	fs_bdi_set(dev, "read_ahead_kb", "1024");
}

struct fs_ready {
	const struct fs_opts *o;
	struct fuse_session *se;
	const char *mountpoint;
	pthread_t main_thread;
	int rc;
};

/* Readiness probe thread: the mount is usable once a stat through it
 * comes back; then replication may start and the parent may exit. */
static void *fs_ready_thread(void *arg)
{
	struct fs_ready *r = arg;
	struct stat st;
	struct statfs sf;

	if (stat(r->mountpoint, &st) < 0) {
		r->rc = -errno;
		log_error("mount did not answer its first stat",
			  "mountpoint=%s err=\"%s\"", r->mountpoint,
			  strerror(errno));
	} else {
		fs_tune_bdi(st.st_dev);
		if (r->o->on_ready)
			r->rc = r->o->on_ready(r->o->on_ready_arg);
	}
	if (r->o->ready_fd >= 0) {
		ssize_t w = write(r->o->ready_fd, &r->rc, sizeof(r->rc));

		(void)w;
		close(r->o->ready_fd);
	}
	if (r->rc < 0) {
		/* Unmount: the loop's main thread takes the signal and stops
		 * the workers; statfs is never cached, so one request
		 * reaches a worker too. */
		fuse_session_exit(r->se);
		pthread_kill(r->main_thread, SIGTERM);
		statfs(r->mountpoint, &sf);
	}
	return NULL;
}

int fs_check_options(const char *fuse_options)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fs_opts o = { .fuse_options = fuse_options };
	struct fs fs = { .store = "/" };
	struct fuse_session *se;
	int rc;

	rc = fs_session_args(&o, &fs, &args);
	if (rc == 0) {
		/* parses the options and allocates; opens and mounts nothing */
		se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), NULL);
		if (se)
			fuse_session_destroy(se);
		else
			rc = -EINVAL;
	}
	fuse_opt_free_args(&args);
	return rc;
}

int fs_run(const struct fs_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg = NULL;
	struct fs fs = { .timeout = FS_CACHE_TIMEOUT };
	struct fs_ready ready = { .o = o };
	char mnt[PATH_MAX];
	pthread_t tid;
	bool probing = false;
	sigset_t all, old;
	int root_fd, rc;

	pthread_mutex_init(&fs.ptw_mu, NULL);
	fs.journal = o->journal;
	fs.peer_begin = o->peer_begin;
	fs.peer_end = o->peer_end;
	fs.peer_arg = o->peer_arg;
	fs.main_thread = pthread_self();
	/* Sync mode waits for the peer inside requests (fs/ring.c). */
	fs.ring_want = o->uring && !o->peer_begin && ring_kernel_enable();
	rc = fs_check_paths(o, &fs, mnt);
	if (rc < 0)
		goto out_ready;
	root_fd = open(fs.store, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		rc = -errno;
		log_error("cannot open the store", "store=%s err=\"%s\"",
			  fs.store, strerror(-rc));
		goto out_ready;
	}
	rc = inode_table_new(root_fd, &fs.itab);
	if (rc < 0) {
		close(root_fd);
		goto out_ready;
	}
	inode_set_gone_fn(fs.itab, fs_forget_gone, &fs);
	/* Modes come from the kernel with the caller's umask applied. */
	umask(0);
	fs_raise_nofile();
	rc = cred_init();
	if (rc < 0)
		goto out_table;
	rc = fs_session_args(o, &fs, &args);
	if (rc < 0)
		goto out_args;
	fs.se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), &fs);
	if (!fs.se) {
		rc = -EINVAL;
		log_error("cannot start the FUSE session; check the -o options",
			  "options=\"%s\"", o->fuse_options ? o->fuse_options : "");
		goto out_args;
	}
	if (fuse_set_signal_handlers(fs.se) < 0) {
		rc = -EINVAL;
		goto out_session;
	}
	if (fuse_session_mount(fs.se, mnt) < 0) {
		rc = -EIO;
		log_error("mount failed (see the message above); is the "
			  "mountpoint busy or not permitted?", "mountpoint=%s", mnt);
		goto out_signals;
	}
	fs.pt_want = o->passthrough;
	rc = fuse314_setup(&fs);
	if (rc < 0) {
		log_error("cannot hook the FUSE session", "err=\"%s\"",
			  strerror(-rc));
		goto out_unmount;
	}
	rc = evict_start(fs.se, fs.itab, &fs.evict);
	if (rc < 0) {
		log_error("cannot start the inode evictor", "err=\"%s\"",
			  strerror(-rc));
		goto out_unmount;
	}
	log_info("mounted", "store=%s mountpoint=%s", fs.store, mnt);
	record_set_scan(&fs, true);

	ready.se = fs.se;
	ready.mountpoint = mnt;
	ready.main_thread = pthread_self();
	/* Signals go to this thread (libfuse blocks them in workers). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&tid, NULL, fs_ready_thread, &ready);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0)
		goto out_unmount;
	probing = true;

	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		rc = -ENOMEM;
		goto out_join;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, o->threads > 0 ? (unsigned)o->threads :
					   FS_DEFAULT_THREADS);
	fuse_loop_cfg_set_idle_threads(cfg, 8);
	rc = fuse_session_loop_mt(fs.se, cfg);
	/* libfuse returns the signal number when one ended the loop. */
	rc = rc < 0 ? rc : 0;
	fuse_loop_cfg_destroy(cfg);
out_join:
	/* The probe thread may still be in its stat: unmounting first makes
	 * it fail with ENOTCONN instead of waiting forever. */
	fuse_session_unmount(fs.se);
	pthread_join(tid, NULL);
	if (rc == 0 && ready.rc < 0)
		rc = ready.rc;
	log_info("unmounted", "mountpoint=%s", mnt);
	goto out_signals;
out_unmount:
	fuse_session_unmount(fs.se);
out_signals:
	ring_stop(&fs);
	/* Writers still open when the session ended (a lazy unmount): what
	 * they wrote goes to the peer with the rest at primary_stop. */
	fs_scan_writers(&fs, true);
	record_set_scan(&fs, false);
	/* After the unmount: a name invalidation it was making now fails. */
	evict_stop(fs.evict);
	fs.evict = NULL;
	fuse_remove_signal_handlers(fs.se);
out_session:
	fuse_session_destroy(fs.se);
out_args:
	fuse_opt_free_args(&args);
out_table:
	inode_table_free(fs.itab);
out_ready:
	pthread_mutex_destroy(&fs.ptw_mu);
	/* The probe thread reports readiness; if we never got that far the
	 * parent hears the failure from here. */
	if (o->ready_fd >= 0 && !probing) {
		ssize_t w = write(o->ready_fd, &rc, sizeof(rc));

		(void)w;
		close(o->ready_fd);
	}
	free(fs.store);
	return rc;
}
