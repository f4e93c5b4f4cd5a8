/*
 * state — reads and atomically rewrites the few small files in a node's
 * state directory. Owns the on-disk format of node.id, generation and
 * applied; must not touch the journal's files (STATE/journal/) or the
 * control socket. Blocking IO; callers decide the thread.
 */
#include "netsync/roles/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/fsutil.h"

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
	int fd, rc = 0;
	size_t off = 0;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= (int)sizeof(tmp) ||
	    snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
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
	return fsutil_sync_dir(dir);

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
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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

/*
 * STATE/applied is rewritten after every batch the secondary makes durable,
 * so it must be cheap: one pwrite + fdatasync in place, not a temp file,
 * rename and two fsyncs. Two fixed-size slots, 4 KiB apart (never in the
 * same page or sector), take turns; each carries a generation counter and
 * an XXH64 of its text, so a write torn by a power cut leaves the other
 * slot, the previous state, readable. The reader takes the valid slot with
 * the higher generation. Slots are text, so `cat` shows them.
 */
#define APPLIED_SLOT_OFF 4096
#define APPLIED_FMT "twinfs applied seq=%020" PRIu64 " dirty=%d gen=%020" PRIu64
#define APPLIED_SLOT_LEN 128	/* formatted line + " check=%016x\n", padded */

struct state_applied {
	int fd;
	uint64_t gen;
	pthread_mutex_t mu;
};

static void applied_format(char *slot, uint64_t seq, bool dirty, uint64_t gen)
{
	int n = snprintf(slot, APPLIED_SLOT_LEN, APPLIED_FMT, seq, dirty ? 1 : 0, gen);

	n += snprintf(slot + n, APPLIED_SLOT_LEN - (size_t)n, " check=%016llx\n",
		      (unsigned long long)XXH64(slot, (size_t)n, 0));
	memset(slot + n, ' ', APPLIED_SLOT_LEN - 1 - (size_t)n);
	slot[APPLIED_SLOT_LEN - 1] = '\n';
}

/* Parses one slot; 0 or -EBADMSG (torn, empty or foreign). */
static int applied_parse(const char *slot, uint64_t *seq, bool *dirty, uint64_t *gen)
{
	char line[APPLIED_SLOT_LEN + 1];
	unsigned long long s, g, c;
	const char *chk;
	int d;

	memcpy(line, slot, APPLIED_SLOT_LEN);
	line[APPLIED_SLOT_LEN] = '\0';
	chk = strstr(line, " check=");
	if (!chk || sscanf(line, "twinfs applied seq=%llu dirty=%d gen=%llu", &s, &d, &g) != 3 ||
	    sscanf(chk, " check=%llx", &c) != 1 || (d != 0 && d != 1))
		return -EBADMSG;
	if (XXH64(line, (size_t)(chk - line), 0) != c)
		return -EBADMSG;
	*seq = s;
	*dirty = d;
	*gen = g;
	return 0;
}

int state_applied_open(const char *dir, struct state_applied **out, uint64_t *seq,
		       bool *dirty)
{
	char path[4096], buf[APPLIED_SLOT_OFF + APPLIED_SLOT_LEN];
	struct state_applied *a;
	uint64_t s[2] = { 0, 0 }, g[2] = { 0, 0 };
	bool d[2] = { false, false };
	int ok[2], rc, best;
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/applied", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, F_OK) < 0) {
		if (errno != ENOENT)
			return -errno;
		/* a new node: seq 0, clean, created atomically */
		memset(buf, ' ', sizeof(buf));
		buf[APPLIED_SLOT_OFF - 1] = '\n';
		applied_format(buf, 0, false, 1);
		applied_format(buf + APPLIED_SLOT_OFF, 0, false, 0);
		rc = state_write_atomic(dir, "applied", buf, sizeof(buf));
		if (rc < 0)
			return rc;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (a->fd < 0) {
		rc = -errno;
		goto out_free;
	}
	n = pread(a->fd, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(buf)) {
		rc = n < 0 ? -errno : -EBADMSG;
		goto out_close;
	}
	ok[0] = applied_parse(buf, &s[0], &d[0], &g[0]) == 0;
	ok[1] = applied_parse(buf + APPLIED_SLOT_OFF, &s[1], &d[1], &g[1]) == 0;
	if (!ok[0] && !ok[1]) {
		rc = -EBADMSG;
		goto out_close;
	}
	best = !ok[0] || (ok[1] && g[1] > g[0]);
	*seq = s[best];
	*dirty = d[best];
	a->gen = g[best];
	pthread_mutex_init(&a->mu, NULL);
	*out = a;
	return 0;

out_close:
	close(a->fd);
out_free:
	free(a);
	return rc;
}

int state_applied_put(struct state_applied *a, uint64_t seq, bool dirty)
{
	char slot[APPLIED_SLOT_LEN];
	uint64_t gen;
	int rc = 0;

	pthread_mutex_lock(&a->mu);
	gen = a->gen + 1;
	applied_format(slot, seq, dirty, gen);
	if (pwrite(a->fd, slot, sizeof(slot), (gen & 1) ? 0 : APPLIED_SLOT_OFF) !=
	    (ssize_t)sizeof(slot))
		rc = errno ? -errno : -EIO;
	else if (fdatasync(a->fd) < 0)
		rc = -errno;
	if (rc == 0)
		a->gen = gen;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

void state_applied_close(struct state_applied *a)
{
	if (!a)
		return;
	close(a->fd);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

int state_applied_read(const char *dir, uint64_t *seq, bool *dirty)
{
	struct state_applied *a;
	int rc = state_applied_open(dir, &a, seq, dirty);

	if (rc == 0)
		state_applied_close(a);
	return rc;
}

int state_applied_write(const char *dir, uint64_t seq, bool dirty)
{
	struct state_applied *a;
	uint64_t s;
	bool d;
	int rc = state_applied_open(dir, &a, &s, &d);

	if (rc < 0)
		return rc;
	rc = state_applied_put(a, seq, dirty);
	state_applied_close(a);
	return rc;
}
