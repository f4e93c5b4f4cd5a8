/*
 * nodeid — reads or creates STATE/node.id and STATE/generation. Owns only
 * those two files; never rewrites an existing one (a damaged identity is
 * an error for the operator, not something to paper over, because the
 * peer uses it to tell who is ahead). Start-up only, one thread.
 */
#include "netsync/nodeid.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"

/* Writes TEXT to STATE/NAME atomically. 0 or -errno (-EEXIST if it
 * appeared meanwhile, which callers treat as "read it"). */
static int nodeid_create(int dfd, const char *name, const char *text)
{
	char tmp[64];
	size_t len = strlen(text);
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		rc = errno ? -errno : -EIO;
		goto out_unlink;
	}
	close(fd);
	fd = -1;
	if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		goto out_unlink;
	}
	fsync(dfd);
	return 0;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	return rc;
}

static int nodeid_read(int dfd, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Reads NAME, creating it with DEFAULT_TEXT first if it does not exist. */
static int nodeid_get(int dfd, const char *name, const char *default_text,
		      char *buf, size_t len)
{
	int rc = nodeid_read(dfd, name, buf, len);

	if (rc != -ENOENT)
		return rc;
	rc = nodeid_create(dfd, name, default_text);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	return nodeid_read(dfd, name, buf, len);
}

int node_identity_load(const char *state_dir, struct node_identity *id)
{
	char buf[128], fresh[40];
	uint8_t rnd[16];
	unsigned v;
	int dfd, rc;

	memset(id, 0, sizeof(*id));
	dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		rc = -EIO;
		goto out_close;
	}
	for (int i = 0; i < 16; i++)
		snprintf(fresh + 2 * i, 3, "%02x", rnd[i]);
	fresh[32] = '\n';
	fresh[33] = '\0';
	rc = nodeid_get(dfd, "node.id", fresh, buf, sizeof(buf));
	if (rc < 0)
		goto out_close;
	for (int i = 0; i < 16; i++) {
		if (sscanf(buf + 2 * i, "%2x", &v) != 1) {
			log_error("damaged node id; restore it or remove it to make this "
				  "a new node", "file=%s/node.id", state_dir);
			rc = -EBADMSG;
			goto out_close;
		}
		id->node_id[i] = (uint8_t)v;
	}
	rc = nodeid_get(dfd, "generation", "1\n", buf, sizeof(buf));
	if (rc < 0)
		goto out_close;
	if (sscanf(buf, "%" SCNu64, &id->generation) != 1) {
		log_error("damaged generation file", "file=%s/generation", state_dir);
		rc = -EBADMSG;
		goto out_close;
	}
	if (gethostname(id->name, sizeof(id->name)) < 0)
		id->name[0] = '\0';
	id->name[sizeof(id->name) - 1] = '\0';
	rc = 0;
out_close:
	close(dfd);
	return rc;
}
