/*
 * entry — FUSE handlers for names: lookup/forget and the namespace
 * operations (mkdir, mknod, symlink, link, unlink, rmdir, rename,
 * readlink). Runs in any FUSE worker thread. Each change is applied to the
 * store and then recorded, both under the journal's namespace lock; it
 * never reads or writes file data.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/cred.h"
#include "fs/fs_internal.h"
#include "fs/procfd.h"
#include "fs/record.h"

int fs_do_lookup(struct fs *fs, struct inode *parent, const char *name,
		 struct fuse_entry_param *e)
{
	struct inode *i;
	int fd, pfd, rc = 0;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = fs->timeout;
	e->entry_timeout = fs->timeout;
	pfd = inode_fd_get(fs->itab, parent);
	if (pfd < 0)
		return pfd;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			close(fd);
			goto out_put;
		}
		fs_fix_stat(&e->attr);
		i = inode_ref(fs->itab, fd, &e->attr, parent, name, &rc);
	} else if (errno == EMFILE || errno == ENFILE) {
		/* Descriptors taken by open files: the entry is made without
		 * an fd (fs/inode.c), so that a name just made through us is
		 * never reported as a failure. */
		if (fstatat(pfd, name, &e->attr, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			goto out_put;
		}
		fs_fix_stat(&e->attr);
		i = inode_ref_at(fs->itab, pfd, &e->attr, parent, name, &rc);
	} else {
		rc = -errno;
		goto out_put;
	}
	if (i)
		e->ino = inode_id(fs->itab, i);
out_put:
	inode_fd_put(fs->itab, parent, pfd);
	return rc;
}

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc;

	rc = fs_do_lookup(fs, inode_get(fs->itab, parent), name, &e);
	if (rc == 0 && !S_ISDIR(e.attr.st_mode) && e.attr.st_nlink > 1)
		record_seen(fs, inode_get(fs->itab, parent), name,
			    inode_get(fs->itab, e.ino));
	if (rc == -ENOENT) {
		/* Negative entry, cached as long as positive ones: only this
		 * mount changes the store, and the kernel drops the negative
		 * dentry when it creates the name through us. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fs_of(req);

	inode_unref(fs->itab, inode_get(fs->itab, ino), nlookup);
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets)
{
	struct fs *fs = fs_of(req);

	for (size_t k = 0; k < count; k++)
		inode_unref(fs->itab, inode_get(fs->itab, forgets[k].ino),
			    forgets[k].nlookup);
	fuse_reply_none(req);
}

/* Creates a directory, node or symlink NAME in PARENT as the caller,
 * records it and replies with the new entry. */
static void fs_make(fuse_req_t req, fuse_ino_t parent, const char *name,
		    enum journal_op_type type, mode_t mode, dev_t rdev,
		    const char *link)
{
	struct fs *fs = fs_of(req);
	struct inode *dir = inode_get(fs->itab, parent);
	struct fuse_entry_param e;
	struct record rec;
	struct cred_saved cs;
	int rc = 0, r, dfd;

	/* Every fd the op needs is in hand before the store changes. */
	dfd = inode_fd_get(fs->itab, dir);
	if (dfd < 0) {
		fuse_reply_err(req, -dfd);
		return;
	}
	record_begin(fs, &rec, type, dir, name, NULL, NULL);
	cred_enter(req, &cs);
	switch (type) {
	case JOP_MKDIR:
		r = mkdirat(dfd, name, mode);
		break;
	case JOP_SYMLINK:
		r = symlinkat(link, dfd, name);
		break;
	default:
		r = mknodat(dfd, name, mode, rdev);
		break;
	}
	if (r < 0)
		rc = -errno;
	cred_leave(&cs);
	if (rc < 0)
		goto out_unlock;
	rc = fs_do_lookup(fs, dir, name, &e);
	if (rc < 0)
		goto out_unlock;
	record_seed(fs, &rec, inode_get(fs->itab, e.ino));
	rec.made = &e.attr;
	rec.op.mode = e.attr.st_mode;
	rec.op.uid = e.attr.st_uid;
	rec.op.gid = e.attr.st_gid;
	rec.op.rdev = e.attr.st_rdev;
	rec.op.ino = e.attr.st_ino;
	rec.op.path2 = link;
out_unlock:
	/* A made node whose lookup failed is still in the store: record it. */
	record_end(fs, &rec, r == 0);
	inode_fd_put(fs->itab, dir, dfd);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fs_make(req, parent, name, JOP_MKDIR, mode, 0, NULL);
}

void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev)
{
	/* A regular file made by mknod(2) is a create without an open. */
	fs_make(req, parent, name, S_ISREG(mode) ? JOP_CREATE : JOP_MKNOD,
		mode, rdev, NULL);
}

void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name)
{
	fs_make(req, parent, name, JOP_SYMLINK, S_IFLNK | 0777, 0, link);
}

void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	struct inode *dir = inode_get(fs->itab, newparent);
	struct fuse_entry_param e;
	struct record rec;
	char proc[PROCFD_NAME_MAX];
	bool linked = false;
	int rc = 0, fd, dfd;

	fd = inode_fd_get(fs->itab, i);
	dfd = fd < 0 ? fd : inode_fd_get(fs->itab, dir);
	if (dfd < 0) {
		inode_fd_put(fs->itab, i, fd);
		fuse_reply_err(req, -dfd);
		return;
	}
	record_begin(fs, &rec, JOP_LINK, i, NULL, dir, newname);
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link works for
	 * any owner of the fd, and lands on the inode itself (a symlink is
	 * not followed further). */
	if (linkat(procfd_at(fd, proc), proc, dfd, newname, AT_SYMLINK_FOLLOW) < 0) {
		rc = -errno;
		goto out_unlock;
	}
	linked = true;
	record_seed_path2(fs, &rec, i);
	record_alias_note(fs, dir, newname, i->dev, i->ino);
	rc = fs_do_lookup(fs, dir, newname, &e);
out_unlock:
	record_end(fs, &rec, linked);
	inode_fd_put(fs->itab, dir, dfd);
	inode_fd_put(fs->itab, i, fd);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void fs_remove(fuse_req_t req, fuse_ino_t parent, const char *name,
		      enum journal_op_type type)
{
	struct fs *fs = fs_of(req);
	struct inode *dir = inode_get(fs->itab, parent);
	struct record rec;
	int rc = 0, dfd = inode_fd_get(fs->itab, dir);

	if (dfd < 0) {
		fuse_reply_err(req, -dfd);
		return;
	}
	record_begin(fs, &rec, type, dir, name, NULL, NULL);
	if (unlinkat(dfd, name, type == JOP_RMDIR ? AT_REMOVEDIR : 0) < 0)
		rc = -errno;
	record_end(fs, &rec, rc == 0);
	inode_fd_put(fs->itab, dir, dfd);
	fuse_reply_err(req, -rc);
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_remove(req, parent, name, JOP_UNLINK);
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_remove(req, parent, name, JOP_RMDIR);
}

/*
 * A hard-linked non-directory just moved to DIR/NAME (DIRFD: DIR's fd,
 * borrowed by the caller; path2 of the
 * record, or its path for the other side of an exchange): its fd may have
 * been opened through a name removed since, so its /proc link cannot name
 * it; the new name is kept for its later records (record_alias_note).
 * That holds for a file with one link left whose other names are gone
 * too (ln a b; rm a; mv b c: its fd may name "a (deleted)"), which the
 * table knows from before. Under the ns lock, between the rename and its
 * record. Directories and files that never had another name need
 * nothing: their fd follows the move.
 */
static void fs_rename_seed(struct fs *fs, struct inode *dir, int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    (st.st_nlink > 1 || record_alias_known(st.st_dev, st.st_ino)))
		record_alias_note(fs, dir, name, st.st_dev, st.st_ino);
}

/*
 * A RENAME_WHITEOUT that fails can still change its source folder: ext4
 * makes the whiteout before it finds the rename impossible (a non-empty
 * folder in the way: ENOTEMPTY), and the folder keeps the mtime that gave
 * it, as it does outside the mount. Nothing is recorded for a failed call,
 * so the peer's folder kept the old mtime while both stores had nothing
 * pending (difftest seed 616). The folder's new mtime goes to the peer as
 * a SETATTR, and the kernel's cached attributes of it are dropped.
 */
static void fs_rename_failed_dir(struct fs *fs, struct inode *dir, int dirfd,
				 const struct stat *before)
{
	struct record rec;
	struct stat st;

	if (fstat(dirfd, &st) < 0 || (st.st_mtim.tv_sec == before->st_mtim.tv_sec &&
				       st.st_mtim.tv_nsec == before->st_mtim.tv_nsec))
		return;
	record_begin(fs, &rec, JOP_SETATTR, dir, NULL, NULL, NULL);
	rec.op.attr_mask = JATTR_MTIME;
	rec.op.mode = st.st_mode;
	rec.op.uid = st.st_uid;
	rec.op.gid = st.st_gid;
	rec.op.atime = st.st_atim;
	rec.op.mtime = st.st_mtim;
	record_end(fs, &rec, true);
	fuse_lowlevel_notify_inval_inode(fs->se, inode_id(fs->itab, dir), -1, 0);
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs *fs = fs_of(req);
	struct inode *from = inode_get(fs->itab, parent);
	struct inode *to = inode_get(fs->itab, newparent);
	struct record rec;
	struct stat before;
	bool whiteout = false;
	int rc = 0, ffd, tfd;

	ffd = inode_fd_get(fs->itab, from);
	tfd = ffd < 0 ? ffd : inode_fd_get(fs->itab, to);
	if (tfd < 0) {
		inode_fd_put(fs->itab, from, ffd);
		fuse_reply_err(req, -tfd);
		return;
	}
	if (flags & RENAME_WHITEOUT)
		whiteout = fstat(ffd, &before) == 0;
	record_begin(fs, &rec, JOP_RENAME, from, name, to, newname);
	rec.op.flags = flags;
	if (renameat2(ffd, name, tfd, newname, flags) < 0)
		rc = -errno;
	if (rc == 0)
		fs_rename_seed(fs, to, tfd, newname);
	if (rc == 0 && (flags & RENAME_EXCHANGE))
		fs_rename_seed(fs, from, ffd, name);
	if (rc == 0) {
		struct stat st;

		/* Keep the names fs/evict.c invalidates and fs/inode.c
		 * reopens by current, before another rename can run. */
		if (fstatat(tfd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0)
			inode_renamed(fs->itab, &st, to, newname);
		if ((flags & RENAME_EXCHANGE) &&
		    fstatat(ffd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			inode_renamed(fs->itab, &st, from, name);
	}
	record_end(fs, &rec, rc == 0);
	if (rc < 0 && whiteout)
		fs_rename_failed_dir(fs, from, ffd, &before);
	inode_fd_put(fs->itab, to, tfd);
	inode_fd_put(fs->itab, from, ffd);
	fuse_reply_err(req, -rc);
}

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	char buf[PATH_MAX + 1];
	ssize_t n;
	int fd = inode_fd_get(fs->itab, i);

	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	n = readlinkat(fd, "", buf, sizeof(buf));
	if (n < 0)
		n = -errno;
	inode_fd_put(fs->itab, i, fd);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	if ((size_t)n >= sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}
