/*
 * fsutil — fsync of directories (common/fsutil.h). Stateless; any thread.
 */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int fsutil_sync_dirfd(int fd)
{
	return fsync(fd) < 0 ? -errno : 0;
}

int fsutil_sync_dir(const char *path)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = fsutil_sync_dirfd(fd);
	close(fd);
	return rc;
}

int fsutil_open_noatime(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	return fd < 0 ? -errno : fd;
}
