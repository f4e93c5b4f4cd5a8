/*
 * jhandle — kernel file handles (name_to_handle_at / open_by_handle_at)
 * for the journal's dirty inodes: a handle names an inode without holding
 * it open, so the journal can remember any number of dirty files while
 * using file descriptors only for the batch being sent.
 * Used by journal.c, jbatch.c and their tests only.
 */
#ifndef TWINFS_JHANDLE_H
#define TWINFS_JHANDLE_H

#include <stdbool.h>

struct file_handle;

/* What the store's filesystem (and our privileges) allow. */
struct jhandle_caps {
	bool usable;		/* handles can be made and opened again */
	bool connectable;	/* AT_HANDLE_CONNECTABLE (Linux >= 6.13) */
	int mount_id;		/* the store root's mount */
	int err;		/* why not usable (-errno), 0 if usable */
};

/* Probes the store root (rootfd: an O_RDONLY fd on it; open_by_handle_at
 * refuses O_PATH mount fds). Never fails: the
 * answer is in caps. */
void jhandle_probe(int rootfd, struct jhandle_caps *caps);

/* A malloc'd handle for the inode behind fd (any fd on it), or NULL and
 * *err: -EOPNOTSUPP / -EOVERFLOW (this inode cannot have one: keep an fd
 * instead), -EXDEV (it is on another mount than the store root), -errno. */
struct file_handle *jhandle_from_fd(const struct jhandle_caps *caps, int fd, int *err);
/* The same for a path (not following a final symlink). */
struct file_handle *jhandle_from_path(const struct jhandle_caps *caps, const char *path,
				      int *err);
/* A copy of h (malloc'd), or NULL. */
struct file_handle *jhandle_dup(const struct file_handle *h);

/* Opens the inode (O_PATH | O_CLOEXEC). Returns an fd, or -ESTALE when
 * the inode is gone, -EMFILE/-ENFILE when out of fds, -errno.
 * *disconnected is set when the inode exists but has no path the kernel
 * can name under the store root (its dentry was evicted after a move to
 * another directory): the fd is valid, its /proc/self/fd link is not. */
int jhandle_open(int rootfd, const struct file_handle *h, bool *disconnected);

#endif
