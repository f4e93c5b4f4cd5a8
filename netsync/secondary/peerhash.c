/*
 * peerhash — resolves, stats, hashes (or looks up) and encodes the answer
 * to one HASH_REQ (peerhash.h). Blocking reads on the caller's thread.
 */
#include "netsync/secondary/peerhash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "netsync/delta/blockhash.h"
#include "netsync/delta/hashcache.h"
#include "netsync/wire/path.h"

/* The regular file PATH, opened for reading; *ST its fstat. */
static int peerhash_open(int rootfd, const char *path, struct stat *st)
{
	struct path_ref ref;
	int fd, rc = path_resolve(rootfd, path, false, &ref);

	if (rc < 0)
		return rc;
	fd = fsutil_open_noatime(ref.dirfd, ref.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				 O_NOCTTY | O_CLOEXEC);
	rc = fd < 0 ? fd : 0;
	path_put(&ref);
	if (rc < 0)
		return rc;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EISDIR;
	}
	return fd;
}

static int peerhash_fd_blocks(int fd, struct stat *st, struct hashcache *cache, uint32_t bs,
			      bool fresh, struct blockhash *b, uint64_t *read)
{
	int rc;

	*read = 0;
	if (!fresh && cache && hashcache_lookup_blocks(cache, st, bs, b) == 1)
		return 0;
	rc = blockhash_fd(fd, bs, b);
	if (rc == 0) {
		struct stat after;

		*read = b->bytes_read;
		/* cached under the key from before the reading, and only if
		 * the file did not change while it was read: a write in
		 * between must not be cached under either key */
		if (cache && fstat(fd, &after) == 0 && after.st_size == st->st_size &&
		    (uint64_t)after.st_size == b->size &&
		    after.st_mtim.tv_sec == st->st_mtim.tv_sec &&
		    after.st_mtim.tv_nsec == st->st_mtim.tv_nsec &&
		    after.st_ctim.tv_sec == st->st_ctim.tv_sec &&
		    after.st_ctim.tv_nsec == st->st_ctim.tv_nsec)
			hashcache_store_blocks(cache, st, b);
	}
	return rc;
}

int peerhash_blocks(int rootfd, struct hashcache *cache, const char *path, uint32_t bs,
		    bool fresh, struct blockhash *b, uint64_t *read)
{
	struct stat st;
	int fd = peerhash_open(rootfd, path, &st), rc;

	*read = 0;
	if (fd < 0)
		return fd;
	rc = peerhash_fd_blocks(fd, &st, cache, bs, fresh, b, read);
	close(fd);
	return rc;
}

/* HASHES frames of B (or one with err RC) answering Q, appended to OUT. */
static int peerhash_encode(const struct proto_hash_req *q, const struct blockhash *b, int rc,
			   struct evbuffer *out)
{
	struct proto_hashes h = { .path = q->path, .block_size = q->block_size,
				  .flags = PROTO_HASHES_F_LAST };
	uint32_t sent = 0;

	if (rc < 0) {
		h.err = (uint32_t)(rc == -EXDEV || rc == -ELOOP ? EINVAL : -rc);
		return proto_encode_hashes(out, &h);
	}
	do {
		uint32_t k = b->n - sent > PROTO_HASHES_CHUNK ? PROTO_HASHES_CHUNK : b->n - sent;

		h.size = b->size;
		h.first = sent;
		h.count = k;
		h.hashes = b->h + (size_t)sent * 16;
		h.flags = sent + k == b->n ? PROTO_HASHES_F_LAST : 0;
		rc = proto_encode_hashes(out, &h);
		sent += k;
	} while (rc == 0 && sent < b->n);
	return rc;
}

int peerhash_begin(int rootfd, struct hashcache *cache, const struct proto_hash_req *q,
		   uint64_t inline_max, struct evbuffer *out, uint64_t *read, int *fd_out,
		   struct stat *st)
{
	struct blockhash b;
	int fd = peerhash_open(rootfd, q->path, st), rc;

	*read = 0;
	*fd_out = -1;
	if (fd >= 0 && (q->flags & PROTO_HASH_F_ONE_NAME) && st->st_nlink != 1) {
		close(fd);
		fd = -EMLINK;
	}
	if (fd >= 0 && cache && hashcache_lookup_blocks(cache, st, q->block_size, &b) == 1) {
		close(fd);
		rc = peerhash_encode(q, &b, 0, out);
		blockhash_free(&b);
		return rc < 0 ? rc : 1;
	}
	if (fd >= 0 && (uint64_t)st->st_size > inline_max) {
		*fd_out = fd;
		return 0;
	}
	if (fd < 0)
		return peerhash_encode(q, NULL, fd, out) < 0 ? -ENOMEM : 1;
	return peerhash_finish(fd, st, cache, q, out, read) < 0 ? -ENOMEM : 1;
}

int peerhash_finish(int fd, struct stat *st, struct hashcache *cache,
		    const struct proto_hash_req *q, struct evbuffer *out, uint64_t *read)
{
	struct blockhash b;
	int rc = peerhash_fd_blocks(fd, st, cache, q->block_size, true, &b, read), erc;

	close(fd);
	erc = peerhash_encode(q, &b, rc, out);
	if (rc == 0)
		blockhash_free(&b);
	return erc < 0 ? -ENOMEM : 0;
}

int peerhash_answer(int rootfd, struct hashcache *cache, const struct proto_hash_req *q,
		    struct evbuffer *out, uint64_t *read)
{
	struct stat st;
	int fd, rc = peerhash_begin(rootfd, cache, q, UINT64_MAX, out, read, &fd, &st);

	return rc < 0 ? rc : 0;
}
