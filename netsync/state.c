/*
 * state — reads and atomically rewrites the few small files in a node's
 * state directory. Owns the on-disk format of node.id, generation and
 * applied; must not touch the journal's files (STATE/journal/) or the
 * control socket. Blocking IO; callers decide the thread.
 */
#include "netsync/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int state_dir_prepare(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

int state_write_atomic(const char *dir, const char *name, const void *buf, size_t len)
{
	char tmp[4096], dst[4096];
	int fd, dfd, rc = 0;
	size_t off = 0;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= (int)sizeof(tmp) ||
	    snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, (const char *)buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out_unlink;
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0) {
		rc = -errno;
		goto out_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, dst) < 0) {
		rc = -errno;
		goto out_unlink;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		rc = -errno;
	close(dfd);
	return rc;

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

/* Reads STATE/NAME (at most len-1 bytes) as a NUL-terminated string. */
static int state_read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

static int state_hex_decode(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EBADMSG;
		out[i] = (uint8_t)v;
	}
	return 0;
}

int state_node_load(const char *dir, struct state_node *n)
{
	char buf[128];
	char *end;
	int rc;

	rc = state_read(dir, "node.id", buf, sizeof(buf));
	if (rc == -ENOENT) {
		if (getrandom(n->id, sizeof(n->id), 0) != (ssize_t)sizeof(n->id))
			return -EIO;
		for (size_t i = 0; i < 16; i++)
			snprintf(n->id_hex + 2 * i, 3, "%02x", n->id[i]);
		snprintf(buf, sizeof(buf), "%s\n", n->id_hex);
		rc = state_write_atomic(dir, "node.id", buf, strlen(buf));
		if (rc < 0)
			return rc;
	} else if (rc < 0) {
		return rc;
	} else {
		if (strlen(buf) < 32 || strspn(buf, "0123456789abcdef") != 32)
			return -EBADMSG;
		if (state_hex_decode(buf, n->id, 16) < 0)
			return -EBADMSG;
		memcpy(n->id_hex, buf, 32);
		n->id_hex[32] = '\0';
	}

	rc = state_read(dir, "generation", buf, sizeof(buf));
	if (rc == -ENOENT) {
		n->generation = 1;
		return state_write_atomic(dir, "generation", "1\n", 2);
	}
	if (rc < 0)
		return rc;
	errno = 0;
	n->generation = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EBADMSG;
	return 0;
}

int state_applied_read(const char *dir, uint64_t *seq, bool *dirty)
{
	char buf[128];
	unsigned long long s;
	int d, rc;

	rc = state_read(dir, "applied", buf, sizeof(buf));
	if (rc == -ENOENT) {
		*seq = 0;
		*dirty = false;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (sscanf(buf, "seq %llu\ndirty %d", &s, &d) != 2 || (d != 0 && d != 1))
		return -EBADMSG;
	*seq = s;
	*dirty = d;
	return 0;
}

int state_applied_write(const char *dir, uint64_t seq, bool dirty)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "seq %" PRIu64 "\ndirty %d\n", seq, dirty ? 1 : 0);

	return state_write_atomic(dir, "applied", buf, (size_t)n);
}
