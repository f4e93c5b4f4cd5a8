/*
 * sentmap — the sender's record of what the peer holds of the large
 * files it was sent (see sentmap.h). Owns only its own memory.
 *
 * Why it exists. A new file opened write-only is written by the kernel
 * through FUSE passthrough, so we never learn which ranges changed: each
 * time such a file changes and pauses, fs marks it from offset 0 to its
 * end, and the sender reads it all again. Without this map all of it went
 * on the wire again (a 1 GiB download that stalls now and then was re-sent
 * at each stall). The sender still reads and hashes every block (once:
 * the same hash goes into the DATA frame when the block is sent), and now
 * skips the blocks whose length and hash equal what it sent there before.
 *
 * What an entry claims: "we sent this peer bytes [off, off + len) of
 * this path with this hash, and nothing sent since changed them there".
 * The peer changes its store only as we tell it, in the order we send,
 * so the claim holds as long as every frame that could change those
 * bytes on the peer updates or drops the entry:
 *   - DATA at a block-aligned offset replaces the block's entry
 *     (sentmap_note); DATA at any other offset drops the whole file;
 *   - every journal operation put on the wire, and every entry a walk
 *     sends (its CREATE makes the peer's copy anew), drops the paths it
 *     names and everything below them: truncate, rename over, unlink and
 *     re-create, link, a directory renamed away (the paths below it now
 *     name other files), NEEDS_SCAN;
 *   - the ATTR that ends a file's send sets its size: entries reaching
 *     past it are dropped (sentmap_trim);
 *   - a baseline (PRUNE may remove anything) and a peer with another node
 *     id or generation drop everything;
 *   - when a connection ends, the peer may lose (or hold torn) what it had
 *     not made durable, and batches go out again from its durable point,
 *     which its next HELLO gives: the blocks sent in later batches are
 *     dropped (sentmap_keep). A block last sent in a batch up to that
 *     point is on the peer's disk: any later frame touching those bytes
 *     had replaced or dropped the entry when it was sent.
 * A file with several hard links is not followed (the sender forgets it):
 * its data can change on the peer through another name. Blocks sent but
 * not yet acknowledged count as held: the peer applies in order, and if
 * the connection drops before their ack they are dropped before anything
 * is sent again. A 64-bit hash can collide: 2^-64 per changed block, the
 * same odds as the check the peer makes on every block.
 */
#include "netsync/primary/sentmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

/* Blocks followed per file: 4 Mi blocks, 4 TiB with 1 MiB blocks. */
#define SENTMAP_MAX_BLOCKS (1u << 22)

struct sm_block {
	uint64_t xxh3;
	uint64_t seq;	/* end seq of the batch that carried it */
	uint32_t len;	/* 0: not known */
};

struct sm_file {
	char *path;	/* NULL: free slot */
	struct sm_block *b;
	size_t n, cap;
	uint64_t used;	/* LRU tick */
};

struct sentmap {
	uint32_t bs;
	uint64_t tick;
	struct sm_file f[SENTMAP_FILES];
};

struct sentmap *sentmap_new(uint32_t block_size)
{
	struct sentmap *m;

	if (!block_size)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m)
		m->bs = block_size;
	return m;
}

static void sm_drop(struct sm_file *f)
{
	free(f->path);
	free(f->b);
	memset(f, 0, sizeof(*f));
}

void sentmap_clear(struct sentmap *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < SENTMAP_FILES; i++)
		if (m->f[i].path)
			sm_drop(&m->f[i]);
}

void sentmap_free(struct sentmap *m)
{
	sentmap_clear(m);
	free(m);
}

static struct sm_file *sm_find(struct sentmap *m, const char *path)
{
	for (unsigned i = 0; i < SENTMAP_FILES; i++)
		if (m->f[i].path && strcmp(m->f[i].path, path) == 0)
			return &m->f[i];
	return NULL;
}

void sentmap_forget(struct sentmap *m, const char *path)
{
	size_t len;

	if (!m || !path)
		return;
	len = strlen(path);
	for (unsigned i = 0; i < SENTMAP_FILES; i++) {
		const char *p = m->f[i].path;

		if (p && (len == 0 || (strncmp(p, path, len) == 0 &&
				       (p[len] == '\0' || p[len] == '/'))))
			sm_drop(&m->f[i]);
	}
}

bool sentmap_holds(struct sentmap *m, const char *path, uint64_t off,
		   uint32_t len, uint64_t xxh3)
{
	struct sm_file *f;
	uint64_t i;

	if (!m || !len || off % m->bs)
		return false;
	f = sm_find(m, path);
	i = off / m->bs;
	if (!f || i >= f->n || f->b[i].len != len || f->b[i].xxh3 != xxh3)
		return false;
	f->used = ++m->tick;	/* a file skipped whole is in use too */
	return true;
}

/* The slot for PATH, a free one, or the least recently used one. */
static struct sm_file *sm_slot(struct sentmap *m, const char *path)
{
	struct sm_file *f = sm_find(m, path), *lru = NULL;

	if (f)
		return f;
	for (unsigned i = 0; i < SENTMAP_FILES; i++) {
		if (!m->f[i].path)
			return &m->f[i];
		if (!lru || m->f[i].used < lru->used)
			lru = &m->f[i];
	}
	sm_drop(lru);
	return lru;
}

int sentmap_note(struct sentmap *m, const char *path, uint64_t off, uint32_t len,
		 uint64_t xxh3, uint64_t seq)
{
	struct sm_file *f;
	uint64_t i;

	if (!m)
		return 0;
	i = off / m->bs;
	if (off % m->bs || len > m->bs || i >= SENTMAP_MAX_BLOCKS) {
		sentmap_forget(m, path);
		return 0;
	}
	f = sm_slot(m, path);
	if (!f->path) {
		f->path = strdup(path);
		if (!f->path)
			return -ENOMEM;
	}
	if (i >= f->cap) {
		size_t old = f->cap;

		if (ARRAY_GROW(f->b, f->cap, i + 1, 16) < 0) {
			sm_drop(f);
			return -ENOMEM;
		}
		memset(f->b + old, 0, (f->cap - old) * sizeof(*f->b));
	}
	if (i >= f->n)
		f->n = i + 1;
	f->b[i].xxh3 = xxh3;
	f->b[i].seq = seq;
	f->b[i].len = len;
	f->used = ++m->tick;
	return 0;
}

void sentmap_keep(struct sentmap *m, uint64_t upto)
{
	for (unsigned i = 0; m && i < SENTMAP_FILES; i++) {
		struct sm_file *f = &m->f[i];

		for (size_t k = 0; f->path && k < f->n; k++)
			if (f->b[k].seq > upto)
				f->b[k].len = 0;
	}
}

void sentmap_trim(struct sentmap *m, const char *path, uint64_t size)
{
	struct sm_file *f;

	if (!m || !(f = sm_find(m, path)))
		return;
	while (f->n > 0) {
		const struct sm_block *b = &f->b[f->n - 1];

		if (b->len && (uint64_t)(f->n - 1) * m->bs + b->len <= size)
			break;
		f->n--;
	}
	memset(f->b + f->n, 0, (f->cap - f->n) * sizeof(*f->b));
}

unsigned sentmap_files(const struct sentmap *m)
{
	unsigned n = 0;

	for (unsigned i = 0; m && i < SENTMAP_FILES; i++)
		n += m->f[i].path != NULL;
	return n;
}
