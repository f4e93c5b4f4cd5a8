/*
 * hashcache — the digest cache (hashcache.h): an open-addressing table on
 * (dev, ino) in memory; on disk DIR/hashcache, a header (with the tree's
 * file system instance and whether that file system was synced after
 * every list in the file was made), the records back to back and an XXH64
 * of everything before it. Any thread (c->mu); the saves block on disk.
 */
#include "netsync/delta/hashcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "netsync/delta/blockhash.h"

#define HC_MAGIC 0x3348434657544e49ull	/* "INTWFCH3" little-endian (1 had
						 * whole-file digests, 2 no file
						 * system instance: ignored) */
#define HC_SYNCED 1u			/* header flag, see hashcache_open */
#define HC_FSID_LEN 96
#define HC_MAX_ENTRIES (4u << 20)
#define HC_MAX_BLOCKS (1u << 24)	/* per file kept (2^24 * 16 = 256 MiB) */

struct hc_ent {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint32_t bs, n;		/* block list, n == 0: none */
	uint8_t *blocks;
	uint64_t gen;		/* c->gen when the list was stored */
};

struct hashcache {
	pthread_mutex_t mu;
	char *path;
	int rootfd;		/* the tree's (borrowed), for syncfs */
	char fsid[HC_FSID_LEN];	/* its file system instance ("" unknown) */
	struct hc_ent *t;	/* cap slots, ino == 0 && dev == 0: free */
	size_t cap, n;
	bool dirty;		/* the table differs from the file */
	bool file_synced;	/* the file has HC_SYNCED */
	uint64_t gen;		/* moved by each hashcache_save_synced */
	uint64_t hits, lookups;
};

static int64_t hc_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static size_t hc_slot(const struct hashcache *c, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino * 0x9E3779B97F4A7C15ull) ^ (dev * 0xC2B2AE3D27D4EB4Full);
	size_t i = (size_t)(h >> 17) & (c->cap - 1);

	while ((c->t[i].dev || c->t[i].ino) && (c->t[i].dev != dev || c->t[i].ino != ino))
		i = (i + 1) & (c->cap - 1);
	return i;
}

static int hc_grow(struct hashcache *c)
{
	struct hc_ent *old = c->t;
	size_t ocap = c->cap;

	c->cap = ocap ? ocap * 2 : 1024;
	c->t = calloc(c->cap, sizeof(*c->t));
	if (!c->t) {
		c->t = old;
		c->cap = ocap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ocap; i++)
		if (old[i].dev || old[i].ino)
			c->t[hc_slot(c, old[i].dev, old[i].ino)] = old[i];
	free(old);
	return 0;
}

/* The entry for ST's key if it matches (size, mtime, ctime), else NULL. */
static struct hc_ent *hc_find(struct hashcache *c, const struct stat *st)
{
	struct hc_ent *e;

	if (!c->cap)
		return NULL;
	e = &c->t[hc_slot(c, st->st_dev, st->st_ino)];
	if ((!e->dev && !e->ino) || e->size != (uint64_t)st->st_size ||
	    e->mtime_ns != hc_ns(&st->st_mtim) || e->ctime_ns != hc_ns(&st->st_ctim))
		return NULL;
	return e;
}

/* The entry for ST, created or reset to ST's key. NULL when full. */
static struct hc_ent *hc_get(struct hashcache *c, const struct stat *st)
{
	struct hc_ent *e;

	if (c->n >= HC_MAX_ENTRIES || (!st->st_dev && !st->st_ino))
		return NULL;
	if ((c->n + 1) * 2 > c->cap && hc_grow(c) < 0)
		return NULL;
	e = &c->t[hc_slot(c, st->st_dev, st->st_ino)];
	if (!e->dev && !e->ino)
		c->n++;
	if (e->size != (uint64_t)st->st_size || e->mtime_ns != hc_ns(&st->st_mtim) ||
	    e->ctime_ns != hc_ns(&st->st_ctim) || e->dev != st->st_dev || e->ino != st->st_ino) {
		free(e->blocks);
		memset(e, 0, sizeof(*e));
		e->dev = st->st_dev;
		e->ino = st->st_ino;
		e->size = (uint64_t)st->st_size;
		e->mtime_ns = hc_ns(&st->st_mtim);
		e->ctime_ns = hc_ns(&st->st_ctim);
	}
	c->dirty = true;
	return e;
}

int hashcache_lookup_blocks(struct hashcache *c, const struct stat *st, uint32_t bs,
			    struct blockhash *out)
{
	struct hc_ent *e;
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	c->lookups++;
	e = hc_find(c, st);
	if (e && e->bs == bs && e->blocks) {
		memset(out, 0, sizeof(*out));
		out->h = malloc((size_t)e->n * 16);
		if (!out->h) {
			rc = -ENOMEM;
		} else {
			memcpy(out->h, e->blocks, (size_t)e->n * 16);
			out->n = e->n;
			out->size = e->size;
			out->block_size = bs;
			c->hits++;
			rc = 1;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* A key proves its content only once its ctime is older than the
 * timestamp granularity: before Linux 6.13 (multigrain timestamps) a write
 * in the same clock tick as the last change, and on a file system with
 * 1 s timestamps one in the same second, leaves ctime as it was, so the
 * list of a file changed just now is not kept (git's "racily clean"). */
#define HC_RACY_NS (2ll * 1000000000)

void hashcache_store_blocks(struct hashcache *c, const struct stat *st,
			    const struct blockhash *b)
{
	struct timespec now;
	struct hc_ent *e;
	uint8_t *copy;

	if (b->n == 0 || b->n > HC_MAX_BLOCKS || b->size != (uint64_t)st->st_size)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	if (hc_ns(&st->st_ctim) > hc_ns(&now) - HC_RACY_NS)
		return;
	copy = malloc((size_t)b->n * 16);
	if (!copy)
		return;
	memcpy(copy, b->h, (size_t)b->n * 16);
	pthread_mutex_lock(&c->mu);
	e = hc_get(c, st);
	if (e) {
		free(e->blocks);
		e->blocks = copy;
		e->bs = b->block_size;
		e->n = b->n;
		e->gen = c->gen;
		copy = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	free(copy);
}

void hashcache_stats(struct hashcache *c, uint64_t *entries, uint64_t *hits,
		     uint64_t *lookups)
{
	pthread_mutex_lock(&c->mu);
	*entries = c->n;
	*hits = c->hits;
	*lookups = c->lookups;
	pthread_mutex_unlock(&c->mu);
}

/* ---- the file ---- */

struct hc_rec {		/* on disk, little-endian (x86 and arm64 hosts) */
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint32_t bs, n;
};

struct hc_head {	/* on disk, first */
	uint64_t magic, flags;
	char fsid[HC_FSID_LEN];
	uint64_t count;
};

static void hc_clear(struct hashcache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->t[i].blocks);
	if (c->t)
		memset(c->t, 0, c->cap * sizeof(*c->t));
	c->n = 0;
}

/* The records of F into the table, summed into ST. 0, or -1 when damaged. */
static int hc_load_records(struct hashcache *c, FILE *f, uint64_t count, XXH64_state_t *st)
{
	for (uint64_t i = 0; i < count; i++) {
		struct hc_rec r;
		struct stat key = { 0 };
		struct hc_ent *e;
		uint8_t *blocks = NULL;

		if (fread(&r, sizeof(r), 1, f) != 1 || r.n > HC_MAX_BLOCKS)
			return -1;
		XXH64_update(st, &r, sizeof(r));
		if (r.n) {
			blocks = malloc((size_t)r.n * 16);
			if (!blocks || fread(blocks, 16, r.n, f) != r.n) {
				free(blocks);
				return -1;
			}
			XXH64_update(st, blocks, (size_t)r.n * 16);
		}
		key.st_dev = r.dev;
		key.st_ino = r.ino;
		key.st_size = (off_t)r.size;
		key.st_mtim.tv_sec = r.mtime_ns / 1000000000;
		key.st_mtim.tv_nsec = r.mtime_ns % 1000000000;
		key.st_ctim.tv_sec = r.ctime_ns / 1000000000;
		key.st_ctim.tv_nsec = r.ctime_ns % 1000000000;
		e = hc_get(c, &key);
		if (!e) {
			free(blocks);
			return -1;
		}
		e->bs = r.bs;
		e->n = r.n;
		e->blocks = blocks;
	}
	return 0;
}

/* Loads the file; *H its header (magic 0: none or damaged, the table
 * then empty: that only costs reading content again). */
static void hc_load(struct hashcache *c, struct hc_head *h)
{
	FILE *f = fopen(c->path, "rb");
	XXH64_state_t *st = NULL;
	uint64_t sum;

	memset(h, 0, sizeof(*h));
	if (!f)
		return;
	st = XXH64_createState();
	if (!st || fread(h, sizeof(*h), 1, f) != 1 || h->magic != HC_MAGIC ||
	    h->count > HC_MAX_ENTRIES)
		goto bad;
	XXH64_reset(st, 0);
	XXH64_update(st, h, sizeof(*h));
	if (hc_load_records(c, f, h->count, st) == 0 && fread(&sum, 8, 1, f) == 1 &&
	    sum == XXH64_digest(st))
		goto out;
bad:
	hc_clear(c);
	h->magic = 0;
out:
	XXH64_freeState(st);
	fclose(f);
}

/* Which lists of the file to believe. Content the page cache held when a
 * list was made may never have reached the disk, and a power cut can
 * then leave the file's key (whose ctime committed) over the old content:
 * a list that matches it would say the disk holds what it lost, and a
 * resync would skip blocks that differ. So the file is believed only
 * (1) in the file system instance it was written in (the page cache it
 * describes is still there), or (2) when the tree's file system was
 * synced after every list in it was made (hashcache_save_synced, at
 * exit). A file of kind (2) is believed once: it is removed here, as
 * this run will change the tree and can lose power before its own save. */
static void hc_load_checked(struct hashcache *c)
{
	struct hc_head h;
	char *slash;

	hc_load(c, &h);
	if (h.magic != HC_MAGIC)
		return;
	if (h.flags & HC_SYNCED) {
		if (unlink(c->path) < 0 && errno != ENOENT) {
			hc_clear(c);
			return;
		}
		slash = strrchr(c->path, '/');
		if (slash) {
			*slash = '\0';
			(void)fsutil_sync_dir(c->path);
			*slash = '/';
		}
		c->dirty = true;
		return;
	}
	h.fsid[HC_FSID_LEN - 1] = '\0';
	if (c->fsid[0] && strcmp(h.fsid, c->fsid) == 0) {
		c->dirty = false;
		return;
	}
	if (c->n)
		log_notice("hash cache set aside: the file system it describes was mounted again "
			   "since it was written, without a sync after it (a reboot or power cut "
			   "can have lost content its lists describe); resyncs read content again",
			   "file=%s lists=%zu", c->path, c->n);
	hc_clear(c);
	c->dirty = true;
}

int hashcache_open(const char *dir, int rootfd, struct hashcache **out)
{
	struct hashcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	if (asprintf(&c->path, "%s/hashcache", dir) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->rootfd = rootfd;
	if (fsutil_instance(rootfd, c->fsid, sizeof(c->fsid)) < 0)
		c->fsid[0] = '\0';	/* unknown: no file from an earlier run is believed */
	hc_load_checked(c);
	*out = c;
	return 0;
}

/* Writes the lists stored before generation CUT (all: UINT64_MAX) with
 * FLAGS: temp file, fsync, rename, fsync of the directory. Under c->mu.
 * 0 or -errno. */
static int hc_write(struct hashcache *c, uint64_t flags, uint64_t cut)
{
	char tmp[4096 + 16];
	XXH64_state_t *st;
	struct hc_head h = { .magic = HC_MAGIC, .flags = flags };
	uint64_t sum;
	FILE *f;
	int fd, rc = 0;

	memcpy(h.fsid, c->fsid, sizeof(h.fsid));
	for (size_t i = 0; i < c->cap; i++)
		if ((c->t[i].dev || c->t[i].ino) && c->t[i].gen < cut)
			h.count++;
	snprintf(tmp, sizeof(tmp), "%s.tmp", c->path);
	/* 0600 whatever the umask: the mount runs with umask 0 (fs/fs.c), and
	 * nothing in a state dir is open to other users. fchmod for a .tmp an
	 * older version left with a wider mode. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return rc;
	}
	f = fdopen(fd, "wb");
	st = XXH64_createState();
	if (!f || !st) {
		rc = -ENOMEM;
		if (!f)
			close(fd);
		goto out_close;
	}
	XXH64_reset(st, 0);
	fwrite(&h, sizeof(h), 1, f);
	XXH64_update(st, &h, sizeof(h));
	for (size_t i = 0; i < c->cap; i++) {
		const struct hc_ent *e = &c->t[i];
		struct hc_rec r;

		if ((!e->dev && !e->ino) || e->gen >= cut)
			continue;
		memset(&r, 0, sizeof(r));
		r.dev = e->dev;
		r.ino = e->ino;
		r.size = e->size;
		r.mtime_ns = e->mtime_ns;
		r.ctime_ns = e->ctime_ns;
		r.bs = e->bs;
		r.n = e->blocks ? e->n : 0;
		fwrite(&r, sizeof(r), 1, f);
		XXH64_update(st, &r, sizeof(r));
		if (r.n) {
			fwrite(e->blocks, 16, r.n, f);
			XXH64_update(st, e->blocks, (size_t)r.n * 16);
		}
	}
	sum = XXH64_digest(st);
	fwrite(&sum, 8, 1, f);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		rc = -errno;
out_close:
	if (f && fclose(f) != 0 && rc == 0)
		rc = -errno;
	XXH64_freeState(st);
	if (rc == 0 && rename(tmp, c->path) < 0)
		rc = -errno;
	if (rc == 0) {
		char *slash = strrchr(c->path, '/');

		if (slash) {
			*slash = '\0';
			rc = fsutil_sync_dir(c->path);
			*slash = '/';
		}
	} else {
		unlink(tmp);
	}
	if (rc == 0)
		c->file_synced = flags & HC_SYNCED;
	return rc;
}

int hashcache_save(struct hashcache *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (c->dirty) {
		rc = hc_write(c, 0, UINT64_MAX);
		if (rc == 0)
			c->dirty = false;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int hashcache_save_synced(struct hashcache *c)
{
	uint64_t cut;
	int rc;

	pthread_mutex_lock(&c->mu);
	if (!c->dirty && c->file_synced) {
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	cut = ++c->gen;		/* lists stored from now on are left out */
	pthread_mutex_unlock(&c->mu);
	if (syncfs(c->rootfd) < 0) {
		rc = -errno;
		(void)hashcache_save(c);
		return rc;
	}
	pthread_mutex_lock(&c->mu);
	rc = hc_write(c, HC_SYNCED, cut);
	if (rc == 0) {
		c->dirty = false;
		for (size_t i = 0; i < c->cap && !c->dirty; i++)
			if ((c->t[i].dev || c->t[i].ino) && c->t[i].gen >= cut)
				c->dirty = true;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void hashcache_close(struct hashcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->t[i].blocks);
	free(c->t);
	free(c->path);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
