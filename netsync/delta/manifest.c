/*
 * manifest — sorted list of store entries and its file STATE/manifest.
 * File format (little-endian): "TWMF" u32 version, u64 root dev, u64 root
 * ino, u64 count; per entry u32 path length, path bytes, u64 ino, u64
 * size, i64 mtime ns, i64 ctime ns, u32 mode, u32 nlink; then XXH3-64 of
 * everything before it. Any mismatch reads as -EBADMSG. Called from the
 * mount's main thread only (before the FUSE session starts, after it ends).
 */
#include "netsync/delta/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#define MF_MAGIC "TWMF"
#define MF_VERSION 1u
#define MF_HEAD 32u
#define MF_FIXED 44u	/* per entry, after the path */

int manifest_path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x && *x == *y; x++, y++)
		;
	if (*x == *y)
		return 0;
	if (*x == '/')
		return *y ? -1 : 1;	/* "a/.." after "a", before "a-" */
	if (*y == '/')
		return *x ? 1 : -1;
	return *x < *y ? -1 : 1;
}

int manifest_add(struct manifest *m, const struct manifest_entry *e)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct manifest_entry *ne = realloc(m->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		m->e = ne;
		m->cap = cap;
	}
	m->e[m->n] = *e;
	m->e[m->n].path = strdup(e->path);
	if (!m->e[m->n].path)
		return -ENOMEM;
	m->n++;
	return 0;
}

static int mf_entry_cmp(const void *a, const void *b)
{
	return manifest_path_cmp(((const struct manifest_entry *)a)->path,
				 ((const struct manifest_entry *)b)->path);
}

void manifest_sort(struct manifest *m)
{
	if (m->n > 1)
		qsort(m->e, m->n, sizeof(m->e[0]), mf_entry_cmp);
}

const struct manifest_entry *manifest_find(const struct manifest *m, const char *path)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = manifest_path_cmp(m->e[mid].path, path);

		if (c == 0)
			return &m->e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void manifest_free(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	m->e = NULL;
	m->n = m->cap = 0;
}

/* ---- encoding ---- */

struct mf_buf {
	unsigned char *p;
	size_t len, cap;
};

static int mf_put(struct mf_buf *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
	return 0;
}

static void mf_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void mf_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t mf_get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t mf_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int mf_encode(const struct manifest *m, struct mf_buf *b)
{
	unsigned char h[MF_HEAD], f[MF_FIXED], l[4];
	int rc;

	memcpy(h, MF_MAGIC, 4);
	mf_le32(h + 4, MF_VERSION);
	mf_le64(h + 8, m->root_dev);
	mf_le64(h + 16, m->root_ino);
	mf_le64(h + 24, m->n);
	rc = mf_put(b, h, sizeof(h));
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		const struct manifest_entry *e = &m->e[i];
		size_t pl = strlen(e->path);

		mf_le32(l, (uint32_t)pl);
		mf_le64(f, e->ino);
		mf_le64(f + 8, e->size);
		mf_le64(f + 16, (uint64_t)e->mtime_ns);
		mf_le64(f + 24, (uint64_t)e->ctime_ns);
		mf_le32(f + 32, e->mode);
		mf_le32(f + 36, e->nlink);
		mf_le32(f + 40, 0);
		rc = mf_put(b, l, 4);
		if (rc == 0)
			rc = mf_put(b, e->path, pl);
		if (rc == 0)
			rc = mf_put(b, f, sizeof(f));
	}
	if (rc == 0) {
		unsigned char x[8];

		mf_le64(x, XXH3_64bits(b->p, b->len));
		rc = mf_put(b, x, 8);
	}
	return rc;
}

static int mf_write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int manifest_write(const char *state_dir, const struct manifest *m)
{
	struct mf_buf b = { 0 };
	char tmp[4096], dst[4096];
	int fd, dfd, rc;

	snprintf(tmp, sizeof(tmp), "%s/manifest.tmp", state_dir);
	snprintf(dst, sizeof(dst), "%s/manifest", state_dir);
	rc = mf_encode(m, &b);
	if (rc < 0)
		goto out_free;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	rc = mf_write_all(fd, b.p, b.len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && rename(tmp, dst) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		goto out_free;
	}
	dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0)
			rc = -errno;
		close(dfd);
	}
out_free:
	free(b.p);
	return rc;
}

static int mf_decode(const unsigned char *p, size_t len, struct manifest *m)
{
	size_t off = MF_HEAD;
	uint64_t n;
	int rc;

	if (len < MF_HEAD + 8 || memcmp(p, MF_MAGIC, 4) != 0 ||
	    mf_get32(p + 4) != MF_VERSION ||
	    XXH3_64bits(p, len - 8) != mf_get64(p + len - 8))
		return -EBADMSG;
	len -= 8;
	m->root_dev = mf_get64(p + 8);
	m->root_ino = mf_get64(p + 16);
	n = mf_get64(p + 24);
	for (uint64_t i = 0; i < n; i++) {
		struct manifest_entry e;
		uint32_t pl;
		char *path;

		if (off + 4 > len)
			return -EBADMSG;
		pl = mf_get32(p + off);
		off += 4;
		if (pl >= 4096 || off + pl + MF_FIXED > len)
			return -EBADMSG;
		path = strndup((const char *)p + off, pl);
		if (!path)
			return -ENOMEM;
		off += pl;
		e.path = path;
		e.ino = mf_get64(p + off);
		e.size = mf_get64(p + off + 8);
		e.mtime_ns = (int64_t)mf_get64(p + off + 16);
		e.ctime_ns = (int64_t)mf_get64(p + off + 24);
		e.mode = mf_get32(p + off + 32);
		e.nlink = mf_get32(p + off + 36);
		off += MF_FIXED;
		rc = manifest_add(m, &e);
		free(path);
		if (rc < 0)
			return rc;
	}
	return off == len ? 0 : -EBADMSG;
}

int manifest_read(const char *state_dir, struct manifest *m)
{
	char path[4096];
	unsigned char *buf = NULL;
	struct stat st;
	size_t got = 0;
	int fd, rc = 0;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s/manifest", state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EBADMSG;
			goto out_close;
		}
		got += (size_t)r;
	}
	rc = mf_decode(buf, got, m);
	if (rc == 0)
		manifest_sort(m);	/* written sorted; cheap if it still is */
out_close:
	close(fd);
	free(buf);
	if (rc < 0)
		manifest_free(m);
	return rc;
}

int manifest_remove(const char *state_dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/manifest", state_dir);
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
