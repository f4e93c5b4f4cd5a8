/*
 * procfd — reaching an inode we hold by an O_PATH fd through its
 * /proc/self/fd link, the one way such an fd reaches open(2), the xattr
 * calls, linkat(2) and readlink(2) (fgetxattr and the like refuse O_PATH
 * fds). A dirfd of /proc/self/fd is opened once, so each call looks up
 * the one name "N" instead of walking /proc/self/fd/N (four names and a
 * symlink: about a third of a getxattr's time in the store in this guest,
 * docs/benchmarks.md "Handlers: /proc/self/fd"). Any thread.
 */
#ifndef TWINFS_FS_PROCFD_H
#define TWINFS_FS_PROCFD_H

#include <stddef.h>
#include <sys/types.h>

/* Room for "/proc/self/fd/N" and for "N". */
#define PROCFD_NAME_MAX 32

/* Fills NAME for FD and returns the dirfd to use it with in an *at call:
 * the /proc/self/fd dirfd and "N", or AT_FDCWD and the whole path if that
 * folder could not be opened. The link is followed to the inode itself
 * (a symlink is not followed further). */
int procfd_at(int fd, char name[PROCFD_NAME_MAX]);

/* The whole path "/proc/self/fd/N", for the calls with no *at form. */
void procfd_path(int fd, char path[PROCFD_NAME_MAX]);

/* getxattr, setxattr, listxattr, removexattr of the inode FD holds, with
 * their results and errno (the *xattrat calls of kernel 6.13+ against the
 * dirfd; the path calls before). */
ssize_t procfd_getxattr(int fd, const char *name, void *value, size_t size);
int procfd_setxattr(int fd, const char *name, const void *value, size_t size,
		    int flags);
ssize_t procfd_listxattr(int fd, char *list, size_t size);
int procfd_removexattr(int fd, const char *name);

#endif
