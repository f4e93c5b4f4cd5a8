/*
 * jhandle — the journal's kernel file handles (see jhandle.h). Stateless
 * helpers; any thread. Touches no journal state and no file data: it only
 * encodes handles and opens them O_PATH.
 *
 * Why handles. The fs keeps one O_PATH fd per inode the kernel caches;
 * the journal used to keep one more (a dup) per dirty file until the
 * sender took it, so a mount with no peer (nothing is ever taken) writing
 * 10,000 new files needed 20,000 fds and hit EMFILE in the fs's own
 * lookups. A handle (8-16 bytes on ext4/xfs/btrfs) names the inode with
 * no open file; open_by_handle_at gives an fd back only when the batch
 * that sends the file is taken. It needs CAP_DAC_READ_SEARCH (a root
 * mount has it) and a filesystem that exports handles; jhandle_probe
 * says whether both hold, and the journal falls back to fds otherwise.
 *
 * Connected paths. The journal names a dirty file by readlink of
 * /proc/self/fd/N at take time, which needs a dentry connected to the
 * store root. An fd from a plain handle may be "disconnected" when the
 * file's dentry was evicted (memory pressure): the kernel knows the inode,
 * not its name. Handles made with AT_HANDLE_CONNECTABLE (Linux 6.13) carry
 * the parent, and open_by_handle_at then either returns a connected fd
 * under the mount fd (reconnecting through the parent if needed) or
 * ESTALE; we then retry as a plain handle to tell "gone" (ESTALE again,
 * or nlink 0) from "exists, path unknown" (disconnected). Connectable
 * handles cannot be made with AT_EMPTY_PATH, so the fd is named through
 * its /proc/self/fd magic link, looked up as one name under a dirfd of
 * /proc/self/fd opened once (the same as fs/procfd.c does: the walk of
 * "/proc/self/fd/N" from the root costs several us more per new file,
 * docs/benchmarks.md "Handlers: /proc/self/fd").
 */
#include "journal/jhandle.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AT_HANDLE_CONNECTABLE
#define AT_HANDLE_CONNECTABLE 0x002	/* include/uapi/linux/fcntl.h, 6.13 */
#endif
/* Flags the kernel keeps in handle_type's upper bits (FILEID_USER_FLAGS). */
#define JHANDLE_TYPE_FLAGS 0xffff0000u

/* Encodes a handle for dirfd/path (connectable first when the kernel
 * has it: a dentry it cannot encode so falls back to a plain handle). */
static struct file_handle *jhandle_encode(const struct jhandle_caps *caps, int dirfd,
					  const char *path, int flags, bool connectable,
					  int *err)
{
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ), *out;
	int mnt = -1;

	if (!h) {
		*err = -ENOMEM;
		return NULL;
	}
	h->handle_bytes = MAX_HANDLE_SZ;
	if (connectable &&
	    name_to_handle_at(dirfd, path, h, &mnt, flags | AT_HANDLE_CONNECTABLE) == 0)
		goto out_ok;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(dirfd, path, h, &mnt, flags) < 0) {
		*err = errno == ENOTSUP ? -EOPNOTSUPP : -errno;
		free(h);
		return NULL;
	}
out_ok:
	if (caps->mount_id >= 0 && mnt != caps->mount_id) {
		*err = -EXDEV;
		free(h);
		return NULL;
	}
	out = realloc(h, sizeof(*h) + h->handle_bytes);
	return out ? out : h;
}

/* A dirfd of /proc/self/fd for the life of the process (-1: none; then
 * the full path is walked). */
static pthread_once_t jhandle_proc_once = PTHREAD_ONCE_INIT;
static int jhandle_proc_dir = -1;

static void jhandle_proc_open(void)
{
	jhandle_proc_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

struct file_handle *jhandle_from_fd(const struct jhandle_caps *caps, int fd, int *err)
{
	char link[64];

	if (!caps->usable) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	if (!caps->connectable)
		return jhandle_encode(caps, fd, "", AT_EMPTY_PATH, false, err);
	pthread_once(&jhandle_proc_once, jhandle_proc_open);
	if (jhandle_proc_dir < 0) {
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		return jhandle_encode(caps, AT_FDCWD, link, AT_SYMLINK_FOLLOW, true, err);
	}
	snprintf(link, sizeof link, "%d", fd);
	return jhandle_encode(caps, jhandle_proc_dir, link, AT_SYMLINK_FOLLOW, true, err);
}

struct file_handle *jhandle_from_path(const struct jhandle_caps *caps, const char *path,
				      int *err)
{
	if (!caps->usable) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	return jhandle_encode(caps, AT_FDCWD, path, 0, caps->connectable, err);
}

struct file_handle *jhandle_dup(const struct file_handle *h)
{
	size_t n = sizeof(*h) + h->handle_bytes;
	struct file_handle *c = malloc(n);

	if (c)
		memcpy(c, h, n);
	return c;
}

int jhandle_open(int rootfd, const struct file_handle *h, bool *disconnected)
{
	struct file_handle *plain;
	struct stat st;
	int fd, rc;

	*disconnected = false;
	fd = open_by_handle_at(rootfd, (struct file_handle *)h, O_PATH | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	rc = -errno;
	if (rc != -ESTALE || !((unsigned)h->handle_type & JHANDLE_TYPE_FLAGS))
		return rc;
	/* No connected path under the store: gone, or moved and evicted? */
	plain = jhandle_dup(h);
	if (!plain)
		return -ENOMEM;
	plain->handle_type = (int)((unsigned)plain->handle_type & ~JHANDLE_TYPE_FLAGS);
	fd = open_by_handle_at(rootfd, plain, O_PATH | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	free(plain);
	if (fd < 0)
		return rc;
	if (fstat(fd, &st) < 0 || (st.st_nlink == 0 && !S_ISDIR(st.st_mode))) {
		close(fd);
		return -ESTALE;
	}
	*disconnected = true;
	return fd;
}

void jhandle_probe(int rootfd, struct jhandle_caps *caps)
{
	struct file_handle *h;
	bool disc;
	int mnt = -1, fd;

	memset(caps, 0, sizeof(*caps));
	caps->mount_id = -1;
	h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	if (!h) {
		caps->err = -ENOMEM;
		return;
	}
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(rootfd, "", h, &mnt, AT_EMPTY_PATH) < 0) {
		caps->err = errno == ENOTSUP ? -EOPNOTSUPP : -errno;
		goto out_free;
	}
	caps->mount_id = mnt;
	/* Opening needs CAP_DAC_READ_SEARCH: try it on the root itself. */
	fd = open_by_handle_at(rootfd, h, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		caps->err = -errno;
		goto out_free;
	}
	close(fd);
	caps->usable = true;
	/* Connectable handles: the kernel refuses the flag before 6.13. */
	{
		char link[64];

		snprintf(link, sizeof link, "/proc/self/fd/%d", rootfd);
		h->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, link, h, &mnt,
				      AT_SYMLINK_FOLLOW | AT_HANDLE_CONNECTABLE) == 0) {
			caps->connectable = true;
			fd = jhandle_open(rootfd, h, &disc);
			if (fd >= 0)
				close(fd);
			else
				caps->connectable = false;
		}
	}
out_free:
	free(h);
}
