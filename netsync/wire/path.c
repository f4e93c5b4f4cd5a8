/*
 * path — the receiver's guard against paths that escape the store. Owns
 * the syntax rules and the one place where network-supplied paths become
 * file descriptors (openat2 with RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS;
 * glibc 2.36 has no wrapper, so it is a raw syscall). Callers then act on
 * the final component with *at() calls that do not follow it.
 */
#include "netsync/wire/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "netsync/wire/proto.h"

int path_check(const char *path, bool allow_root)
{
	size_t len = strlen(path);
	const char *p = path;

	if (len == 0)
		return allow_root ? 0 : -EINVAL;
	if (len > PROTO_PATH_MAX || path[0] == '/')
		return -EINVAL;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0 || n > PROTO_NAME_MAX)
			return -EINVAL;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		if (!slash)
			break;
		p = slash + 1;
		if (!*p)
			return -EINVAL;	/* trailing '/' */
	}
	return 0;
}

static int path_openat2(int dirfd, const char *path, struct open_how *how)
{
	long fd = syscall(SYS_openat2, dirfd, path, how, sizeof(*how));

	return fd < 0 ? -errno : (int)fd;
}

int path_resolve(int rootfd, const char *path, bool allow_root, struct path_ref *ref)
{
	char parent[PROTO_PATH_MAX + 1];
	const char *slash;
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int rc, fd;

	rc = path_check(path, allow_root);
	if (rc < 0)
		return rc;
	ref->dirfd = rootfd;
	ref->owned = false;
	if (!*path) {
		ref->name = ".";
		return 0;
	}
	slash = strrchr(path, '/');
	if (!slash) {
		ref->name = path;
		return 0;
	}
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	/* O_RDONLY so that the receiver can fsync the directory after changing
	 * its entries; O_PATH only where the directory is not readable */
	fd = path_openat2(rootfd, parent, &how);
	if (fd == -EACCES) {
		how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
		fd = path_openat2(rootfd, parent, &how);
	}
	if (fd < 0)
		return fd;
	ref->dirfd = fd;
	ref->owned = true;
	ref->name = slash + 1;
	return 0;
}

void path_put(struct path_ref *ref)
{
	if (ref->owned && ref->dirfd >= 0)
		close(ref->dirfd);
	ref->owned = false;
	ref->dirfd = -1;
}

int path_blocked_at(int rootfd, const char *path, char *out, size_t len)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char prefix[PROTO_PATH_MAX + 1];
	const char *slash = path;
	int fd;

	if (path_check(path, false) < 0)
		return -EINVAL;
	while ((slash = strchr(slash, '/')) != NULL) {
		size_t n = (size_t)(slash - path);

		memcpy(prefix, path, n);
		prefix[n] = '\0';
		fd = path_openat2(rootfd, prefix, &how);
		if (fd >= 0) {
			close(fd);
			slash++;
			continue;
		}
		if (fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP)
			return fd;
		if (n >= len)
			return -ENAMETOOLONG;
		memcpy(out, prefix, n + 1);
		return 1;
	}
	return 0;
}
