/*
 * fsutil — fsync of directories, file system instances, reads without
 * atime (common/fsutil.h). Stateless; any thread.
 */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U	/* Linux 6.8 */
#endif

int fsutil_instance(int fd, char *buf, size_t len)
{
	char boot[64] = "";
	struct statx stx;
	unsigned long long mnt = 0;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f)
		return -errno;
	if (!fgets(boot, sizeof boot, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	boot[strcspn(boot, "\n")] = '\0';
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID_UNIQUE))
		mnt = stx.stx_mnt_id;
	snprintf(buf, len, "boot %s mnt %llu\n", boot, mnt);
	return 0;
}

int fsutil_open_noatime(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	return fd < 0 ? -errno : fd;
}
