/*
 * versions — ENTRY + DATA of one path, or of a folder's files (versions.h).
 * Blocks are read into malloc'd buffers handed to the output by
 * reference and freed when written. Serve's loop thread only.
 */
#include "netsync/secondary/versions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/xattrname.h"
#include "netsync/delta/inventory.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

static void versions_free_block(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

/* The replicated xattrs (user.*, trusted.*) of FD as OP SETXATTR frames
 * named AS, after its ENTRY: the version goes whole. 0 or -errno. */
static int versions_xattrs(struct evbuffer *out, int fd, const char *as)
{
	char names[4096], val[65536];
	ssize_t n = flistxattr(fd, names, sizeof(names));
	int rc = 0;

	for (ssize_t off = 0; n > 0 && off < n && rc == 0;
	     off += (ssize_t)strlen(names + off) + 1) {
		struct journal_op op = { .type = JOP_SETXATTR, .path = as, .xname = names + off };
		ssize_t v;

		if (!xattrname_replicated(op.xname))
			continue;
		v = fgetxattr(fd, op.xname, val, sizeof(val));
		if (v < 0)
			continue;
		op.xvalue = val;
		op.xsize = (size_t)v;
		rc = proto_encode_op(out, 0, &op);
	}
	return rc;
}

long long versions_send(struct evbuffer *out, int rootfd, const char *path, const char *as)
{
	struct inventory inv = { 0 };
	struct proto_entry gone = { .path = as }, e;
	struct path_ref ref;
	long long sent = 0;
	int fd, rc;

	rc = inventory_add_path(&inv, rootfd, path, false);	/* the content follows */
	if (rc == -ELOOP)
		rc = 0;	/* through a symlink here: no such path in this store
			 * (as divergence_read lists it), so its version is "gone" */
	if (rc < 0)
		return rc;
	e = rc == 1 ? inv.e[0] : gone;
	e.path = as;
	rc = proto_encode_entry(out, &e);
	if (rc < 0 || !(S_ISREG(e.mode) || S_ISDIR(e.mode)))
		goto out;
	rc = path_resolve(rootfd, path, false, &ref);
	if (rc < 0)
		goto out;
	fd = openat(ref.dirfd, ref.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
		    (S_ISDIR(e.mode) ? O_DIRECTORY : 0));
	path_put(&ref);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = versions_xattrs(out, fd, as);
	if (rc < 0 || S_ISDIR(e.mode)) {
		close(fd);
		goto out;
	}
	for (;;) {
		char *b = malloc(PROTO_BLOCK_SIZE);
		ssize_t n;

		if (!b) {
			rc = -ENOMEM;
			break;
		}
		n = pread(fd, b, PROTO_BLOCK_SIZE, sent);
		if (n <= 0) {
			free(b);
			rc = n < 0 ? -errno : 0;
			break;
		}
		rc = proto_encode_data(out, as, (uint64_t)sent, b, (uint32_t)n,
				       versions_free_block, NULL, NULL);
		if (rc < 0) {
			free(b);
			break;
		}
		sent += n;
	}
	close(fd);
out:
	inventory_free(&inv);
	return rc < 0 ? rc : sent;
}

static int versions_walk(struct evbuffer *out, int rootfd, int dirfd, const char *rel, int depth,
			 bool dirs)
{
	struct dirent *de;
	int n = 0, fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		char path[PROTO_PATH_MAX + 1];
		struct stat st;
		long long rc;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "",
			     de->d_name) >= (int)sizeof(path) ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub < 0 || depth > 256) {
				if (sub >= 0)
					close(sub);
				continue;
			}
			rc = dirs ? versions_send(out, rootfd, path, path) : 0;
			if (rc >= 0)
				rc = versions_walk(out, rootfd, sub, path, depth + 1, dirs);
			close(sub);
		} else {
			rc = versions_send(out, rootfd, path, path);
			if (rc >= 0)
				rc = 1;
		}
		if (rc < 0) {
			closedir(d);
			return (int)rc;
		}
		n += (int)rc;
	}
	closedir(d);
	return n;
}

int versions_send_tree(struct evbuffer *out, int dirfd)
{
	return versions_walk(out, dirfd, dirfd, "", 0, false);
}

long long versions_send_path(struct evbuffer *out, int rootfd, const char *path)
{
	long long rc = versions_send(out, rootfd, path, path);
	struct path_ref ref;
	int fd;

	if (rc < 0 || path_resolve(rootfd, path, false, &ref) < 0)
		return rc;
	fd = openat(ref.dirfd, ref.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	path_put(&ref);
	if (fd < 0)
		return rc;	/* not a folder: sent whole above */
	rc = versions_walk(out, rootfd, fd, path, 1, true);
	close(fd);
	return rc;
}
