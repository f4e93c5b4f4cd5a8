/*
 * storeops — the store calls the receiver applies that need no receiver
 * state: a mode or an mtime set on any file type without following or
 * opening it, a name or a whole subtree removed, the xattr keep-list of a
 * re-sent path. Each acts on a name beneath a directory fd the caller
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
 * (user.* and trusted.*, the ones replicated) are the NUL-terminated names
 * in xvalue; every other one of those namespaces goes. The sender sends
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

		if ((strncmp(name, "user.", 5) != 0 && strncmp(name, "trusted.", 8) != 0) ||
		    storeops_in_list(op->xvalue, op->xsize, name))
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
