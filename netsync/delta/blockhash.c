/*
 * blockhash — computes, assembles and compares per-block hash lists
 * (blockhash.h). A large file is read by two threads, each over its own
 * half with pread, so that hashing a 1 GiB file uses both cores; the
 * list is plain memory owned by the caller.
 */
#include "netsync/delta/blockhash.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#define BH_READ (1u << 20)	/* bytes per pread */

void blockhash_one(const void *p, size_t len, uint8_t out[16])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
	memcpy(out, c.digest, 16);
}

struct bh_part {
	int fd;
	const struct blockhash *b;
	uint32_t first, end;	/* blocks [first, end) */
	uint64_t read;
	int rc;
};

/* Hashes blocks [first, end) of P->fd into P->b->h. */
static void *bh_run(void *arg)
{
	struct bh_part *p = arg;
	uint32_t bs = p->b->block_size;
	uint32_t per = bs >= BH_READ ? 1 : BH_READ / bs;	/* blocks per read */
	size_t cap = (size_t)per * bs;
	uint8_t *buf = malloc(cap);

	if (!buf) {
		p->rc = -ENOMEM;
		return NULL;
	}
	for (uint32_t i = p->first; i < p->end && p->rc == 0;) {
		uint32_t k = p->end - i < per ? p->end - i : per;
		uint64_t off = (uint64_t)i * bs;
		size_t want = (size_t)k * bs, got = 0;

		if (off + want > p->b->size)
			want = (size_t)(p->b->size - off);
		while (got < want) {
			ssize_t n = pread(p->fd, buf + got, want - got, (off_t)(off + got));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				/* shrunk while read: the caller's later checks see it */
				p->rc = n < 0 ? -errno : -ESTALE;
				break;
			}
			got += (size_t)n;
		}
		p->read += got;
		for (uint32_t j = 0; j < k && p->rc == 0; j++) {
			size_t bl = (size_t)bs;

			if ((size_t)j * bs + bl > want)
				bl = want - (size_t)j * bs;
			blockhash_one(buf + (size_t)j * bs, bl, p->b->h + (size_t)(i + j) * 16);
		}
		i += k;
	}
	free(buf);
	return NULL;
}

int blockhash_fd(int fd, uint32_t bs, struct blockhash *out)
{
	struct bh_part parts[2];
	pthread_t thr;
	struct stat st;
	uint64_t blocks;
	bool two;

	memset(out, 0, sizeof(*out));
	if (!proto_block_size_ok(bs))
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	blocks = proto_blocks((uint64_t)st.st_size, bs);
	if (blocks > UINT32_MAX)
		return -EFBIG;
	out->size = (uint64_t)st.st_size;
	out->block_size = bs;
	out->n = (uint32_t)blocks;
	out->h = malloc(blocks ? blocks * 16 : 1);
	if (!out->h)
		return -ENOMEM;
	two = out->size >= BLOCKHASH_PARALLEL_MIN && out->n >= 2;
	parts[0] = (struct bh_part){ .fd = fd, .b = out, .first = 0,
				     .end = two ? out->n / 2 : out->n };
	parts[1] = (struct bh_part){ .fd = fd, .b = out, .first = parts[0].end, .end = out->n };
	if (two && pthread_create(&thr, NULL, bh_run, &parts[1]) != 0)
		two = false, parts[0].end = out->n;
	bh_run(&parts[0]);
	if (two)
		pthread_join(thr, NULL);
	out->bytes_read = parts[0].read + (two ? parts[1].read : 0);
	if (parts[0].rc < 0 || (two && parts[1].rc < 0)) {
		int rc = parts[0].rc < 0 ? parts[0].rc : parts[1].rc;

		blockhash_free(out);
		return rc;
	}
	return 0;
}

void blockhash_free(struct blockhash *b)
{
	free(b->h);
	memset(b, 0, sizeof(*b));
}

int blockhash_add_frame(struct blockhash *b, const char *path, uint32_t bs,
			const struct proto_hashes *m)
{
	uint64_t have = b->h ? (uint64_t)b->n : 0;
	uint8_t *h;

	if (strcmp(m->path, path) != 0 || m->block_size != bs)
		return -EBADMSG;
	if (m->err)
		return b->h ? -EBADMSG : -(int)(m->err > 4095 ? EIO : m->err);
	if (!b->h) {
		if (m->first != 0)
			return -EBADMSG;
		b->size = m->size;
		b->block_size = bs;
		b->n = 0;
	} else if (m->size != b->size || m->first != have) {
		return -EBADMSG;
	}
	/* grown by what arrives, never by what the peer claims the size is */
	h = realloc(b->h, (size_t)(have + m->count) * 16 + 1);
	if (!h)
		return -ENOMEM;
	b->h = h;
	/* proto_decode_hashes checked first + count within the file's blocks */
	if (m->count)
		memcpy(b->h + have * 16, m->hashes, (size_t)m->count * 16);
	b->n = (uint32_t)(have + m->count);
	return (m->flags & PROTO_HASHES_F_LAST) ? 1 : 0;
}

void blockhash_digest(const struct blockhash *b, uint8_t out[16])
{
	blockhash_one(b->h, (size_t)b->n * 16, out);
}

bool blockhash_same(const struct blockhash *a, const struct blockhash *b, uint32_t i)
{
	return i < a->n && i < b->n && a->block_size == b->block_size &&
	       memcmp(a->h + (size_t)i * 16, b->h + (size_t)i * 16, 16) == 0;
}
