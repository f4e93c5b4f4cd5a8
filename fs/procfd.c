/*
 * procfd — an inode held O_PATH, reached through /proc/self/fd with one
 * name lookup (procfd.h). Owns the dirfd of /proc/self/fd, opened once on
 * first use in the mount's process and kept for its life. Any thread.
 */
#include "fs/procfd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs/kabi.h"

static pthread_once_t procfd_once = PTHREAD_ONCE_INIT;
static int procfd_dir = -1;
/* Cleared when the kernel lacks the *xattrat calls (ENOSYS). */
static bool procfd_xattrat = KABI_HAVE_XATTRAT;

static void procfd_open(void)
{
	procfd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int procfd_at(int fd, char name[PROCFD_NAME_MAX])
{
	pthread_once(&procfd_once, procfd_open);
	if (procfd_dir < 0) {
		procfd_path(fd, name);
		return AT_FDCWD;
	}
	snprintf(name, PROCFD_NAME_MAX, "%d", fd);
	return procfd_dir;
}

void procfd_path(int fd, char path[PROCFD_NAME_MAX])
{
	snprintf(path, PROCFD_NAME_MAX, "/proc/self/fd/%d", fd);
}

/* True if the *xattrat call just made returned ENOSYS: the kernel lacks
 * them, so every later call takes the path. */
static bool procfd_nosys(long r)
{
	if (r < 0 && errno == ENOSYS) {
		__atomic_store_n(&procfd_xattrat, false, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

static bool procfd_use_at(int fd, char name[PROCFD_NAME_MAX], int *dfd)
{
	*dfd = procfd_at(fd, name);
	return *dfd != AT_FDCWD && __atomic_load_n(&procfd_xattrat, __ATOMIC_RELAXED);
}

ssize_t procfd_getxattr(int fd, const char *name, void *value, size_t size)
{
	struct kabi_xattr_args a = { .value = (uintptr_t)value, .size = (uint32_t)size };
	char n[PROCFD_NAME_MAX];
	int dfd;
	long r;

	if (procfd_use_at(fd, n, &dfd)) {
		r = syscall(KABI_SYS_getxattrat, dfd, n, 0, name, &a, sizeof(a));
		if (!procfd_nosys(r))
			return r;
	}
	procfd_path(fd, n);
	return getxattr(n, name, value, size);
}

int procfd_setxattr(int fd, const char *name, const void *value, size_t size,
		    int flags)
{
	struct kabi_xattr_args a = { .value = (uintptr_t)value, .size = (uint32_t)size,
				     .flags = (uint32_t)flags };
	char n[PROCFD_NAME_MAX];
	int dfd;
	long r;

	if (procfd_use_at(fd, n, &dfd)) {
		r = syscall(KABI_SYS_setxattrat, dfd, n, 0, name, &a, sizeof(a));
		if (!procfd_nosys(r))
			return (int)r;
	}
	procfd_path(fd, n);
	return setxattr(n, name, value, size, flags);
}

ssize_t procfd_listxattr(int fd, char *list, size_t size)
{
	char n[PROCFD_NAME_MAX];
	int dfd;
	long r;

	if (procfd_use_at(fd, n, &dfd)) {
		r = syscall(KABI_SYS_listxattrat, dfd, n, 0, list, size);
		if (!procfd_nosys(r))
			return r;
	}
	procfd_path(fd, n);
	return listxattr(n, list, size);
}

int procfd_removexattr(int fd, const char *name)
{
	char n[PROCFD_NAME_MAX];
	int dfd;
	long r;

	if (procfd_use_at(fd, n, &dfd)) {
		r = syscall(KABI_SYS_removexattrat, dfd, n, 0, name);
		if (!procfd_nosys(r))
			return (int)r;
	}
	procfd_path(fd, n);
	return removexattr(n, name);
}
