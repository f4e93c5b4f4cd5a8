/*
 * fsutil — making directory entries durable: after a create, rename or
 * unlink, the directory holding the name must be fsynced too, or a crash
 * can forget the name while keeping the data; which instance of a file
 * system is mounted (what a page cache held survives only within one);
 * and reading a file without moving its atime. Any thread; blocks on disk.
 */
#ifndef TWINFS_FSUTIL_H
#define TWINFS_FSUTIL_H

#include <stddef.h>

/* fsync of the directory open on FD (any O_RDONLY or O_DIRECTORY fd, not
 * O_PATH). 0 or -errno. */
int fsutil_sync_dirfd(int fd);
/* Opens the directory PATH, fsyncs it, closes it. 0 or -errno. */
int fsutil_sync_dir(const char *path);

/* "boot <boot id> mnt <unique mount id>\n" for the file system FD is on:
 * it changes when that file system is mounted again (a reboot, a power
 * cut, an unmount), after which only what was synced is on it. mnt is 0
 * where the kernel has no unique mount ids (before 6.8: the boot id
 * alone). 0 or -errno. */
int fsutil_instance(int fd, char *buf, size_t len);

/* openat(DIRFD, NAME, FLAGS | O_NOATIME), or without O_NOATIME where it
 * is not allowed (not the owner, no CAP_FOWNER). For reads that only
 * compare content (resyncs, hash lists): a moved atime would be sent
 * back to the peer as a change of the file. The fd or -errno. */
int fsutil_open_noatime(int dirfd, const char *name, int flags);

#endif
