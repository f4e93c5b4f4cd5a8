/*
 * dir — FUSE handlers for open directories: opendir, readdir,
 * readdirplus, releasedir, fsyncdir. Runs in any FUSE worker thread.
 * Owns the DIR streams of open directories; readdirplus adds lookup
 * references exactly for the entries it returns to the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_internal.h"
#include "fs/record.h"

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct inode *i = inode_get(fs->itab, ino);
	struct fs_dir *d;
	int fd, rc;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = inode_fd_get(fs->itab, i);
	if (rc < 0) {
		rc = -rc;
		goto out_free;
	}
	fd = openat(rc, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	inode_fd_put(fs->itab, i, rc);
	if (fd < 0) {
		rc = errno;
		goto out_free;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		rc = errno;
		close(fd);
		goto out_free;
	}
	fi->fh = (uintptr_t)d;
	/* The kernel may keep directory listings between opens: only this
	 * mount changes the store, and it drops the cache on every change. */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
	return;
out_free:
	free(d);
	fuse_reply_err(req, rc);
}

static bool fs_is_dot(const char *name)
{
	return name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static void fs_do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t offset, struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fs_of(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	struct inode *dir = inode_get(fs->itab, ino);
	char *buf, *p;
	size_t rem = size;
	int err = 0;

	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p = buf;
	if (offset != d->offset) {
		seekdir(d->dp, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	for (;;) {
		struct fuse_entry_param e;
		const char *name;
		size_t used;
		off_t next;

		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				err = errno;
				break;
			}
		}
		name = d->entry->d_name;
		next = d->entry->d_off;
		if (!plus) {
			struct stat st = {
				.st_ino = d->entry->d_ino,
				.st_mode = (mode_t)d->entry->d_type << 12,
			};

			used = fuse_add_direntry(req, p, rem, name, &st, next);
			if (used > rem)
				break;
		} else if (fs_is_dot(name) || evict_over(fs->evict)) {
			/* No node id: the kernel takes the name without
			 * attributes and looks it up if it is used. Also
			 * once the inode table is over its fd budget, so
			 * that a listing does not pile up inodes faster
			 * than fs/evict.c can drop them. */
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = d->entry->d_ino;
			e.attr.st_mode = (mode_t)d->entry->d_type << 12;
			used = fuse_add_direntry_plus(req, p, rem, name, &e, next);
			if (used > rem)
				break;
		} else {
			int rc = fs_do_lookup(fs, dir, name, &e);

			if (rc == -ENOENT) {
				/* Removed since readdir saw it: skip. */
				d->entry = NULL;
				d->offset = next;
				continue;
			}
			if (rc < 0) {
				err = -rc;
				break;
			}
			used = fuse_add_direntry_plus(req, p, rem, name, &e, next);
			if (used > rem) {
				/* Did not fit: the kernel never sees this
				 * entry, so take back the reference. */
				inode_unref(fs->itab, inode_get(fs->itab, e.ino), 1);
				break;
			}
		}
		p += used;
		rem -= used;
		d->entry = NULL;
		d->offset = next;
	}
	/* An error after some entries: return those; the next call
	 * repeats the failing step and reports it. */
	if (err && rem == size)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size - rem);
	free(buf);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	fs_do_readdir(req, ino, size, off, fi, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	fs_do_readdir(req, ino, size, off, fi, true);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;

	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	int rc;

	rc = record_commit(fs);
	if (rc == 0 && (datasync ? fdatasync(dirfd(d->dp)) :
				   fsync(dirfd(d->dp))) < 0)
		rc = -errno;
	fuse_reply_err(req, -rc);
}
