/*
 * attr — FUSE handlers for attributes: getattr, setattr (mode, owner,
 * size, times), extended attributes, statfs and access. Runs in any FUSE
 * worker thread. Changes are applied to the store and recorded under the
 * journal's namespace lock; it never reads file data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/fuse314.h"
#include "fs/procfd.h"
#include "fs/record.h"

static int fs_stat_fd(int fd, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int fs_stat_inode(struct fs *fs, struct inode *i, struct stat *st)
{
	int fd = inode_fd_get(fs->itab, i), rc;

	if (fd < 0)
		return fd;
	rc = fs_stat_fd(fd, st);
	inode_fd_put(fs->itab, i, fd);
	return rc;
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct stat st;
	int rc;

	if (fi)
		rc = fstat(fs_file_of(fi)->fd, &st) < 0 ? -errno : 0;
	else
		rc = fs_stat_inode(fs, inode_get(fs->itab, ino), &st);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, (fs_fix_stat(&st), &st), fs->timeout);
}

/* Applies the changes of one setattr to the store; returns 0 or -errno,
 * and in *done the JATTR_* bits that were applied before any failure. */
static int fs_apply_setattr(struct inode *i, int ifd, int fd,
			    const struct stat *attr, int to_set, uint32_t *done)
{
	char proc[PROCFD_NAME_MAX];
	int r, pdir;

	*done = 0;
	pdir = procfd_at(ifd, proc);
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (i->type == S_IFLNK)
			return -EOPNOTSUPP;
		r = fd >= 0 ? fchmod(fd, attr->st_mode) :
			      fchmodat(pdir, proc, attr->st_mode, 0);
		if (r < 0)
			return -errno;
		*done |= JATTR_MODE;
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid = to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		if (fchownat(ifd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		*done |= (to_set & FUSE_SET_ATTR_UID ? JATTR_UID : 0) |
			 (to_set & FUSE_SET_ATTR_GID ? JATTR_GID : 0);
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (i->type != S_IFREG)
			return i->type == S_IFDIR ? -EISDIR : -EINVAL;
		if (fd < 0)
			procfd_path(ifd, proc);	/* truncate(2) has no *at form */
		r = fd >= 0 ? ftruncate(fd, attr->st_size) :
			      truncate(proc, attr->st_size);
		if (r < 0)
			return -errno;
		*done |= JATTR_SIZE;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2];

		tv[0].tv_sec = 0;
		tv[0].tv_nsec = UTIME_OMIT;
		tv[1] = tv[0];
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = fd >= 0 ? futimens(fd, tv) :
			      utimensat(ifd, "", tv,
					AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (r < 0)
			return -errno;
		*done |= (to_set & FUSE_SET_ATTR_ATIME ? JATTR_ATIME : 0) |
			 (to_set & FUSE_SET_ATTR_MTIME ? JATTR_MTIME : 0);
	}
	return 0;
}

/* Is REQ's caller in group GID? */
static bool fs_caller_in_group(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[64];
	int n;

	if (ctx->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, groups);
	for (int k = 0; k < n && k < 64; k++)
		if (groups[k] == gid)
			return true;
	return false;
}

/* ST's mode without the bits a write or truncate by REQ's caller, who
 * lacks CAP_FSETID, clears (setattr_should_drop_suidgid in the kernel):
 * set-user-ID always, set-group-ID if group-executable or if the caller
 * is not in the file's group. */
static mode_t fs_killed_mode(fuse_req_t req, const struct stat *st)
{
	mode_t kill = S_ISUID;

	if ((st->st_mode & S_ISGID) &&
	    ((st->st_mode & S_IXGRP) || !fs_caller_in_group(req, st->st_gid)))
		kill |= S_ISGID;
	return st->st_mode & ~kill;
}

/* Clears them through IFD (an O_PATH fd: by its /proc link) or FD.
 * Returns 1 if the mode changed, 0 if nothing was set, or -errno. */
static int fs_apply_kill(fuse_req_t req, int ifd, int fd, struct stat *st)
{
	char proc[PROCFD_NAME_MAX];
	mode_t m = fs_killed_mode(req, st) & 07777;

	if (!S_ISREG(st->st_mode) || m == (st->st_mode & 07777))
		return 0;
	if ((fd >= 0 ? fchmod(fd, m) : fchmodat(procfd_at(ifd, proc), proc, m, 0)) < 0)
		return -errno;
	st->st_mode = (st->st_mode & S_IFMT) | m;
	return 1;
}

/*
 * A chown with FUSE_HANDLE_KILLPRIV_V2: the kernel asks us to clear set-id
 * bits for every chown, whoever calls, and leaves the rule to us. The
 * store's own chown (we are root) already did the kernel's part of it
 * (chown_common: set-user-ID always, set-group-ID of a group-executable
 * file). What depends on the caller is left: set-group-ID of a file that
 * is not group-executable goes only if the caller is neither in the
 * file's group as it was before the chown (BEFORE) nor privileged
 * (setattr_should_drop_sgid; CAP_FSETID, taken here as uid 0). Applying
 * the write rule instead dropped it for root too, where a local folder
 * keeps it. Returns 1 if the mode changed, 0 if not, or -errno.
 */
static int fs_apply_chown_kill(fuse_req_t req, int ifd, int fd, const struct stat *before,
			       struct stat *st)
{
	char proc[PROCFD_NAME_MAX];
	mode_t m = st->st_mode & 07777;

	if (!S_ISREG(st->st_mode) || !(m & S_ISGID) || (m & S_IXGRP) ||
	    fuse_req_ctx(req)->uid == 0 || fs_caller_in_group(req, before->st_gid))
		return 0;
	m &= ~S_ISGID;
	if ((fd >= 0 ? fchmod(fd, m) : fchmodat(procfd_at(ifd, proc), proc, m, 0)) < 0)
		return -errno;
	st->st_mode = (st->st_mode & S_IFMT) | m;
	return 1;
}

int fs_kill_suidgid(fuse_req_t req, struct fs *fs, struct inode *i, int fd,
		    struct stat *st)
{
	struct record rec;
	int rc;

	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode) || fs_killed_mode(req, st) == st->st_mode)
		return 0;
	record_begin(fs, &rec, JOP_SETATTR, i, NULL, NULL, NULL);
	rc = fs_apply_kill(req, -1, fd, st);
	if (rc > 0) {
		rec.op.attr_mask = JATTR_MODE;
		rec.op.mode = st->st_mode;
		rec.op.uid = st->st_uid;
		rec.op.gid = st->st_gid;
	}
	record_end(fs, &rec, rc > 0);
	/* The kernel keeps the old mode cached (the write's reply carries
	 * no attributes). */
	if (rc > 0)
		fuse_lowlevel_notify_inval_inode(fs->se, inode_id(fs->itab, i), -1, 0);
	return rc < 0 ? rc : 0;
}

/*
 * Applies TO_SET of ATTR to inode I (FD: an open file of it, or -1) and
 * records what the store now holds, set-id bits cleared where the kernel
 * flags the request; *ST is the inode after. Returns 0 or -errno, and
 * in *DONE what changed (JATTR_*).
 */
static int fs_setattr_record(fuse_req_t req, struct fs *fs, struct inode *i,
			     int fd, const struct stat *attr, int to_set,
			     struct stat *st, uint32_t *done)
{
	struct record rec;
	struct journal_op *op = &rec.op;
	struct stat before;
	bool chown = to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
	int rc, r, ifd = inode_fd_get(fs->itab, i);

	*done = 0;
	if (ifd < 0)
		return ifd;
	record_begin(fs, &rec, JOP_SETATTR, i, NULL, NULL, NULL);
	rc = chown ? fs_stat_fd(ifd, &before) : 0;
	if (rc == 0)
		rc = fs_apply_setattr(i, ifd, fd, attr, to_set, done);
	r = fs_stat_fd(ifd, st);
	/* A truncate by a caller without CAP_FSETID, or a chown (the kernel
	 * says so) clears set-id bits; the store would not, as we are root.
	 * An explicit mode in the same request is the caller's choice. */
	if (rc == 0 && r == 0 && fs->kp2_on && fuse314_kill_suidgid() &&
	    !(to_set & FUSE_SET_ATTR_MODE)) {
		int k = chown ? fs_apply_chown_kill(req, ifd, fd, &before, st) :
				fs_apply_kill(req, ifd, fd, st);

		if (k > 0)
			*done |= JATTR_MODE;
		else if (k < 0)
			rc = k;
	}
	/* The store's chown (we are root) clears set-user-ID even when the
	 * owner stays the same (chown_common), and the peer skips a chown to
	 * the owner a file has: the mode it leaves goes explicitly. */
	if (rc == 0 && r == 0 && chown && (*done & (JATTR_UID | JATTR_GID)) &&
	    (before.st_mode & 07777) != (st->st_mode & 07777))
		*done |= JATTR_MODE;
	if (*done && r == 0) {
		/* Record the values the store now holds (UTIME_NOW and the
		 * kernel's setgid clearing resolved), so the peer gets the
		 * same attributes, not its own clock. */
		op->attr_mask = *done;
		/* A size change moves mtime too: say which, or a replay of
		 * this op on the peer (after newer data already went out)
		 * would leave the peer's own clock in mtime. */
		if (*done & JATTR_SIZE)
			op->attr_mask |= JATTR_MTIME;
		op->mode = st->st_mode;
		op->uid = st->st_uid;
		op->gid = st->st_gid;
		op->size = st->st_size;
		op->atime = st->st_atim;
		op->mtime = st->st_mtim;
		if (*done & JATTR_SIZE)
			record_truncate(fs, i, st->st_size);
	}
	record_end(fs, &rec, *done && r == 0);
	inode_fd_put(fs->itab, i, ifd);
	return rc < 0 ? rc : r;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct stat st;
	uint32_t done;
	int rc;

	rc = fs_setattr_record(req, fs, inode_get(fs->itab, ino),
			       fi ? fs_file_of(fi)->fd : -1, attr, to_set, &st,
			       &done);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, (fs_fix_stat(&st), &st), fs->timeout);
}

int fs_truncate_open(fuse_req_t req, struct fs *fs, struct inode *i,
		     struct stat *st)
{
	struct stat attr = { .st_size = 0 };
	uint32_t done;
	int rc;

	/* Through the inode, not the new fd: an O_RDONLY|O_TRUNC open
	 * truncates too, and its store fd cannot. */
	rc = fs_setattr_record(req, fs, i, -1, &attr, FUSE_SET_ATTR_SIZE, st,
			       &done);
	/* The open's reply carries no attributes, and the kernel forgets
	 * only the size and times it had: a mode we changed must go too. */
	if (rc == 0 && (done & JATTR_MODE))
		fuse_lowlevel_notify_inval_inode(fs->se, inode_id(fs->itab, i), -1, 0);
	return rc;
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	struct statvfs sv;

	struct inode *root = inode_root(fs->itab);
	int fd = inode_fd_get(fs->itab, root), rc = 0;

	if (fd < 0 || fstatvfs(fd, &sv) < 0)
		rc = fd < 0 ? -fd : errno;
	inode_fd_put(fs->itab, root, fd);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_statfs(req, &sv);
}

/* Only reached when the mount runs without default_permissions (the
 * kernel checks access itself otherwise): the classic owner/group/other
 * check against the caller, root passing all but execute of a file with
 * no x bit. */
void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;
	gid_t groups[64];
	mode_t bits;
	int rc, n;

	rc = fs_stat_inode(fs, inode_get(fs->itab, ino), &st);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (mask == F_OK) {
		fuse_reply_err(req, 0);
		return;
	}
	if (ctx->uid == 0) {
		rc = (mask & X_OK) && !S_ISDIR(st.st_mode) &&
		     !(st.st_mode & 0111) ? EACCES : 0;
		fuse_reply_err(req, rc);
		return;
	}
	if (ctx->uid == st.st_uid) {
		bits = (st.st_mode >> 6) & 7;
	} else {
		bits = st.st_mode & 7;
		if (ctx->gid == st.st_gid) {
			bits = (st.st_mode >> 3) & 7;
		} else {
			n = fuse_req_getgroups(req, 64, groups);
			for (int k = 0; k < n && k < 64; k++)
				if (groups[k] == st.st_gid)
					bits = (st.st_mode >> 3) & 7;
		}
	}
	fuse_reply_err(req, (mask & ~bits & 7) ? EACCES : 0);
}

/* Extended attributes go through the inode's /proc/self/fd link
 * (fs/procfd.c; O_PATH fds refuse the f*xattr calls). For a symlink that
 * link names the link itself, not its
 * target, so the kernel's own rules apply as on ext4: no user.* xattrs on
 * a symlink (EPERM), trusted.* and security.* allowed. */
/* The common start of setxattr and removexattr: refuses symlinks as ext4
 * does, drops the "created without capabilities" shortcut when
 * security.capability changes, and opens the journal record. Returns the
 * inode, or NULL after replying. */
static struct inode *fs_xattr_change_begin(fuse_req_t req, fuse_ino_t ino,
					   const char *name,
					   enum journal_op_type type,
					   struct record *rec, int *fd)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);

	*fd = inode_fd_get(fs->itab, i);
	if (*fd < 0) {
		fuse_reply_err(req, -*fd);
		return NULL;
	}
	if (strcmp(name, FS_XATTR_CAPS) == 0)
		__atomic_store_n(&i->no_caps, false, __ATOMIC_RELAXED);
	record_begin(fs, rec, type, i, NULL, NULL, NULL);
	rec->op.xname = name;
	return i;
}

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags)
{
	struct fs *fs = fs_of(req);
	struct record rec;
	struct inode *i;
	int rc = 0, fd;

	i = fs_xattr_change_begin(req, ino, name, JOP_SETXATTR, &rec, &fd);
	if (!i)
		return;
	rec.op.xvalue = value;
	rec.op.xsize = size;
	rec.op.flags = (uint32_t)flags;
	if (procfd_setxattr(fd, name, value, size, flags) < 0)
		rc = -errno;
	record_end(fs, &rec, rc == 0);
	inode_fd_put(fs->itab, i, fd);
	fuse_reply_err(req, -rc);
}

/* Replies to getxattr/listxattr from the store call's result N (errno
 * set when negative). BUF is NULL when the kernel asked for the size only
 * (size 0), in which case the call returned the size it needs. */
static void fs_reply_xattr_call(fuse_req_t req, ssize_t n, const char *buf)
{
	if (n < 0)
		fuse_reply_err(req, errno);
	else if (!buf)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	char *buf = NULL;
	ssize_t n;
	int fd, e;

	/* SELinux labels a FUSE mount as a whole (genfscon or context=),
	 * never per file, and a label is per-host policy that must not be
	 * replicated. Saying "not supported" (rather than "no such
	 * attribute") also lets `ls -l` stop asking for every file, which
	 * the kernel cannot cache for us: one round trip per file. */
	if (strcmp(name, "security.selinux") == 0) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	/*
	 * The kernel asks for security.capability before a write(2) to a
	 * file (file_remove_privs: a write must drop file capabilities):
	 * once per inode with FUSE_HANDLE_KILLPRIV_V2 (fs->kp2_on), before
	 * every write without it. The store lookup through /proc need not
	 * follow: a file this mount created has none, and only this mount
	 * can add one (fs_setxattr clears the mark first). A stale "none"
	 * would need a setxattr racing this getxattr, which has no defined
	 * order anyway.
	 */
	if (strcmp(name, FS_XATTR_CAPS) == 0 &&
	    __atomic_load_n(&i->no_caps, __ATOMIC_RELAXED)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = inode_fd_get(fs->itab, i);
	if (fd >= 0) {
		n = procfd_getxattr(fd, name, buf, size);
		e = errno;
		inode_fd_put(fs->itab, i, fd);
		errno = e;
	} else {
		n = -1;
		errno = -fd;
	}
	fs_reply_xattr_call(req, n, buf);
	free(buf);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	char *buf = NULL;
	ssize_t n;
	int fd, e;

	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = inode_fd_get(fs->itab, i);
	if (fd >= 0) {
		n = procfd_listxattr(fd, buf, size);
		e = errno;
		inode_fd_put(fs->itab, i, fd);
		errno = e;
	} else {
		n = -1;
		errno = -fd;
	}
	fs_reply_xattr_call(req, n, buf);
	free(buf);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs *fs = fs_of(req);
	struct record rec;
	struct inode *i;
	int rc = 0, fd;

	i = fs_xattr_change_begin(req, ino, name, JOP_REMOVEXATTR, &rec, &fd);
	if (!i)
		return;
	if (procfd_removexattr(fd, name) < 0)
		rc = -errno;
	record_end(fs, &rec, rc == 0);
	inode_fd_put(fs->itab, i, fd);
	fuse_reply_err(req, -rc);
}
