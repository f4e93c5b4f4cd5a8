/*
 * storeops — the store calls the receiver applies that need no receiver
 * state: a mode or an mtime set on any file type without following or
 * opening it, a name or a whole subtree removed, the xattr keep-list of a
 * re-sent path, a regular file opened for writing and nothing else. Each acts on a name beneath a directory fd the caller
 * resolved (netsync/wire/path.h); blocking calls on serve's loop thread.
 */
#include "netsync/secondary/storeops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/xattrname.h"

/* chmod of NAME without following it (a symlink has no mode to set). */
int storeops_chmod(int dirfd, const char *name, mode_t mode)
{
	char proc[64];
	struct stat st;
	int fd, rc = 0;

	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	if (S_ISLNK(st.st_mode))
		goto out_close;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, mode & 07777) < 0)
		rc = -errno;
out_close:
	close(fd);
	return rc;
}

/* Removes whatever NAME is, for replacing it with what the primary has
 * there now (another type): a directory goes with its whole subtree, which
 * only a diverged peer can still hold (a repair, a replayed batch). */
int storeops_remove(int dirfd, const char *name)
{
	if (unlinkat(dirfd, name, 0) == 0)
		return 0;
	if (errno == EISDIR && unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return 0;
	if (errno == ENOTEMPTY || errno == EEXIST)
		return storeops_remove_tree(dirfd, name, STOREOPS_TREE_DEPTH);
	return errno == ENOENT ? 0 : -errno;
}

/*
 * Results (journal/op.h): after an op is applied, the entries and
 * directories it changed get the mtimes the primary's store had right
 * after it. In op order, so a later op of the batch on the same directory
 * sets it again with its own later value; entries before directories,
 * since setting an entry's times does not touch its directory.
 * NAME NULL: DIRFD itself (O_RDONLY, or O_PATH for an unreadable
 * directory, which futimens refuses; its /proc link then names it).
 */
int storeops_set_mtime(int dirfd, const char *name, const struct timespec *mt)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, *mt };
	char proc[64];
	int rc;

	if (name)
		rc = utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
	else if ((rc = futimens(dirfd, ts)) < 0 && errno == EBADF) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
		rc = utimensat(AT_FDCWD, proc, ts, 0);
	}
	/* gone already: a later op of the stream removed it */
	return rc < 0 && errno != ENOENT ? -errno : 0;
}

/* True if NAME is one of the NUL-terminated names in LIST[0, LEN). */
bool storeops_in_list(const char *list, size_t len, const char *name)
{
	for (size_t i = 0; i < len; i += strlen(list + i) + 1)
		if (strcmp(list + i, name) == 0)
			return true;
	return false;
}

/*
 * REMOVEXATTR without a name: the xattrs the entry has on the primary
 * (the replicated ones, common/xattrname.h) are the NUL-terminated names
 * in xvalue; every other replicated one goes. The sender sends
 * it, then a SETXATTR per name, with the re-sent state of a path, so
 * that the path's xattrs are the primary's whatever the peer held (a
 * replay after a crash may have left another inode's under that name).
 * FD >= 0: the entry is open there; else P names it without following.
 */
int storeops_xattr_keep(int fd, const char *p, const struct journal_op *op)
{
	char *names;
	ssize_t n;
	int rc = 0;

	n = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(p, NULL, 0);
	if (n <= 0)
		return n < 0 && errno != ENOTSUP ? -errno : 0;
	names = malloc((size_t)n);
	if (!names)
		return -ENOMEM;
	n = fd >= 0 ? flistxattr(fd, names, (size_t)n) : llistxattr(p, names, (size_t)n);
	for (ssize_t i = 0; n > 0 && i < n && rc == 0; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;

		if (!xattrname_replicated(name) || storeops_in_list(op->xvalue, op->xsize, name))
			continue;
		if ((fd >= 0 ? fremovexattr(fd, name) : lremovexattr(p, name)) < 0 &&
		    errno != ENODATA)
			rc = -errno;
	}
	if (n < 0)
		rc = -errno;
	free(names);
	return rc;
}

/* Removes NAME in DIRFD, a whole subtree if it is a directory (DEPTH
 * levels at most). Returns 0 or -errno; ENOENT counts as done. */
int storeops_remove_tree(int dirfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -errno;
	if (depth <= 0)
		return -ELOOP;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rc = storeops_remove_tree(fd, de->d_name, depth - 1);
	}
	closedir(d);
	if (rc < 0)
		return rc;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* True if NAME in DIRFD is a non-directory with other names. */
bool storeops_is_shared(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	       st.st_nlink > 1;
}

/* True if NAME in DIRFD is a whiteout (a 0:0 character device). */
bool storeops_is_whiteout(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == 0;
}

/*
 * A replayed RENAME_WHITEOUT that was applied already leaves a whiteout at
 * the source and the moved entry at the target. A whiteout at the source
 * is not enough to tell: a whiteout may itself be renamed (f was renamed
 * away with RENAME_WHITEOUT, then f's whiteout renamed over d1/d), and
 * skipping that rename left a file at d1/d where the primary has a
 * whiteout. So the target must also carry the moved entry's mtime (the
 * op's results), when the op has it.
 */
bool storeops_whiteout_done(int fdir, const char *fname, int tdir, const char *tname,
			       const struct journal_op *op)
{
	struct stat st;

	if (!storeops_is_whiteout(fdir, fname) ||
	    fstatat(tdir, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (!(op->res_mask & JRES_BIT(JRES_PATH2)))
		return true;
	return st.st_mtim.tv_sec == op->res_mtime[JRES_PATH2].tv_sec &&
	       st.st_mtim.tv_nsec == op->res_mtime[JRES_PATH2].tv_nsec;
}

/* A time the file has already (UTIME_NOW and UTIME_OMIT never are). */
bool storeops_ts_same(const struct timespec *have, const struct timespec *want)
{
	return want->tv_nsec != UTIME_NOW && want->tv_nsec != UTIME_OMIT &&
	       have->tv_sec == want->tv_sec && have->tv_nsec == want->tv_nsec;
}

bool storeops_exists(int dirfd, const char *name, struct stat *st)
{
	return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * Opens NAME in DIRFD for writing as a regular file (O_CREAT with MODE
 * when missing), never opening anything else: a fifo there would block
 * the loop for good (no reader), a device open has side effects. Returns
 * the fd, -ELOOP for a symlink and -EISDIR for anything else that is not
 * a regular file in the way (the caller may remove either), or -errno.
 */
int storeops_open_reg(int dirfd, const char *name, mode_t mode, bool *made)
{
	struct stat st;
	int fd;

	/* a new file (the common case of a copy): made here, so a regular
	 * file, and nothing else to check (O_EXCL follows no symlink) */
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	*made = fd >= 0;
	if (fd >= 0)
		return fd;
	if (errno != EEXIST)
		return errno == ENXIO ? -EISDIR : -errno;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return S_ISLNK(st.st_mode) ? -ELOOP : -EISDIR;
	/* O_NONBLOCK: should a fifo appear in between, the open fails
	 * (ENXIO) or returns at once, and the fstat below refuses it */
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC, mode);
	if (fd < 0)
		return errno == ENXIO ? -EISDIR : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	/* O_NONBLOCK means nothing to a regular file; dropped anyway */
	(void)fcntl(fd, F_SETFL, 0);
	return fd;
}
