/*
 * tail — STATE/tail: a header line "twinfs tail 1 <folder>\n" and the
 * paths, each ending in a NUL (a path may hold any byte but NUL).
 * Blocking IO on the caller's thread; never touches the store.
 */
#include "netsync/roles/tail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "netsync/roles/state.h"

#define TAIL_MAGIC "twinfs tail 1 "

int tail_add(struct tail *t, const char *path)
{
	size_t n = strlen(path) + 1;

	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *p;

		while (cap < t->len + n)
			cap *= 2;
		p = realloc(t->paths, cap);
		if (!p)
			return -ENOMEM;
		t->paths = p;
		t->cap = cap;
	}
	memcpy(t->paths + t->len, path, n);
	t->len += n;
	t->n++;
	return 0;
}

int tail_add_moved(struct tail *t, const char *path)
{
	char *p = malloc(strlen(path) + 2);
	int rc;

	if (!p)
		return -ENOMEM;
	p[0] = '/';
	strcpy(p + 1, path);
	rc = tail_add(t, p);
	free(p);
	if (rc == 0)
		t->n--;	/* a mark, not a path */
	return rc;
}

bool tail_moved(const char *entry)
{
	return entry[0] == '/';
}

int tail_save(const char *state, const struct tail *t)
{
	char head[160];
	size_t hl = (size_t)snprintf(head, sizeof(head), TAIL_MAGIC "%s\n", t->id);
	char *buf = malloc(hl + t->len + 1);
	int rc;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, hl);
	if (t->len)
		memcpy(buf + hl, t->paths, t->len);
	rc = state_write_atomic(state, "tail", buf, hl + t->len);
	free(buf);
	return rc;
}

int tail_load(const char *state, struct tail *t)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf, *nl;
	ssize_t n;
	int fd, rc = 1;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/tail", state);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return -EIO;
	}
	buf[n] = '\0';
	nl = memchr(buf, '\n', (size_t)n);
	if (!nl || strncmp(buf, TAIL_MAGIC, strlen(TAIL_MAGIC)) != 0 ||
	    (size_t)(nl - buf) - strlen(TAIL_MAGIC) >= sizeof(t->id) ||
	    (nl + 1 < buf + n && buf[n - 1] != '\0')) {
		free(buf);
		return -EBADMSG;
	}
	memcpy(t->id, buf + strlen(TAIL_MAGIC), (size_t)(nl - buf) - strlen(TAIL_MAGIC));
	for (char *p = nl + 1; p < buf + n; p += strlen(p) + 1) {
		rc = tail_add(t, p);
		if (rc < 0)
			break;
		if (tail_moved(p))
			t->n--;
		rc = 1;
	}
	free(buf);
	return rc;
}

int tail_remove(const char *state)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/tail", state);
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return fsutil_sync_dir(state);
}

void tail_free(struct tail *t)
{
	free(t->paths);
	memset(t, 0, sizeof(*t));
}
