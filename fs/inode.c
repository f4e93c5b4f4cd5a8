/*
 * inode — the table of store inodes known to the kernel, keyed by
 * (st_dev, st_ino), each with an O_PATH fd and a lookup count.
 * Runs in every FUSE worker thread; one mutex guards the table. It owns
 * the O_PATH fds and never opens or reads file data.
 *
 * Why O_PATH fds instead of paths: a file keeps its identity across
 * renames (ours, or a rename of any parent) and after its last unlink, so
 * every operation on a node id reaches the right store inode without a
 * path walk. While the fd is open the filesystem cannot reuse the inode
 * number, so (dev, ino) is a stable key for as long as the entry exists.
 */
#include "fs/inode.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct inode_table {
	pthread_mutex_t lock;
	struct inode root;
	struct inode **buckets;	/* lock */
	size_t n_buckets;	/* lock; a power of two */
	size_t count;		/* lock; entries besides the root */
	struct inode lru;	/* lock; list head: lru.lru_next is the most
				 * recently used, lru.lru_prev the least */
	void (*gone_fn)(void *arg, struct inode *i);
	void *gone_arg;
	void (*pressure_fn)(void *arg);
	void *pressure_arg;
	size_t pressure_limit;	/* 0: no pressure_fn */
};

static size_t inode_hash(dev_t dev, ino_t ino, size_t n)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (n - 1);
}

int inode_table_new(int root_fd, struct inode_table **out)
{
	struct inode_table *t;
	struct stat st;
	int rc;

	if (fstat(root_fd, &st) < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n_buckets = 4096;
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	if (!t->buckets) {
		rc = -ENOMEM;
		goto out_free;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->lru.lru_next = t->lru.lru_prev = &t->lru;
	t->root.fd = root_fd;
	t->root.dev = st.st_dev;
	t->root.ino = st.st_ino;
	t->root.type = st.st_mode & S_IFMT;
	t->root.nlookup = 2;
	*out = t;
	return 0;
out_free:
	free(t);
	return rc;
}

void inode_table_free(struct inode_table *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < t->n_buckets; b++) {
		struct inode *i = t->buckets[b], *next;

		for (; i; i = next) {
			next = i->next;
			close(i->fd);
			free(i->name);
			free(i->rpath);
			free(i);
		}
	}
	close(t->root.fd);
	free(t->root.rpath);
	pthread_mutex_destroy(&t->lock);
	free(t->buckets);
	free(t);
}

struct inode *inode_root(struct inode_table *t)
{
	return &t->root;
}

struct inode *inode_get(struct inode_table *t, fuse_ino_t id)
{
	if (id == FUSE_ROOT_ID)
		return &t->root;
	return (struct inode *)(uintptr_t)id;
}

fuse_ino_t inode_id(struct inode_table *t, struct inode *i)
{
	if (i == &t->root)
		return FUSE_ROOT_ID;
	return (fuse_ino_t)(uintptr_t)i;
}

/* Doubles the bucket array; caller holds the lock. Failure is harmless
 * (chains just get longer). */
static void inode_grow(struct inode_table *t)
{
	size_t n = t->n_buckets * 2;
	struct inode **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return;
	for (size_t b = 0; b < t->n_buckets; b++) {
		struct inode *i = t->buckets[b], *next;

		for (; i; i = next) {
			size_t h = inode_hash(i->dev, i->ino, n);

			next = i->next;
			i->next = nb[h];
			nb[h] = i;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->n_buckets = n;
}

/* Caller holds the lock. */
static void inode_lru_unlink(struct inode *i)
{
	i->lru_prev->lru_next = i->lru_next;
	i->lru_next->lru_prev = i->lru_prev;
}

static void inode_lru_front(struct inode_table *t, struct inode *i)
{
	i->lru_prev = &t->lru;
	i->lru_next = t->lru.lru_next;
	t->lru.lru_next->lru_prev = i;
	t->lru.lru_next = i;
}

/* Remembers NAME in PARENT as I's name; caller holds the lock. A failed
 * allocation keeps the old name (eviction is only a cache hint). */
static void inode_note_name(struct inode *i, const struct inode *parent,
			    const char *name)
{
	char *copy;

	if (!name)
		return;
	if (i->name && i->pdev == parent->dev && i->pino == parent->ino &&
	    strcmp(i->name, name) == 0)
		return;
	copy = strdup(name);
	if (!copy)
		return;
	free(i->name);
	i->name = copy;
	i->pdev = parent->dev;
	i->pino = parent->ino;
}

/* The entry for (DEV, INO), the root included; caller holds the lock. */
static struct inode *inode_find(struct inode_table *t, dev_t dev, ino_t ino)
{
	struct inode *i;

	if (dev == t->root.dev && ino == t->root.ino)
		return &t->root;
	for (i = t->buckets[inode_hash(dev, ino, t->n_buckets)]; i; i = i->next)
		if (i->ino == ino && i->dev == dev)
			return i;
	return NULL;
}

struct inode *inode_ref(struct inode_table *t, int fd, const struct stat *st,
			const struct inode *parent, const char *name, int *err)
{
	struct inode *i, *fresh;
	size_t h;
	bool over;

	if (st->st_dev == t->root.dev && st->st_ino == t->root.ino) {
		pthread_mutex_lock(&t->lock);
		t->root.nlookup++;
		pthread_mutex_unlock(&t->lock);
		close(fd);
		return &t->root;
	}
	/* Allocate outside the lock; most lookups of a new name need it. */
	fresh = calloc(1, sizeof(*fresh));
	pthread_mutex_lock(&t->lock);
	h = inode_hash(st->st_dev, st->st_ino, t->n_buckets);
	for (i = t->buckets[h]; i; i = i->next)
		if (i->ino == st->st_ino && i->dev == st->st_dev)
			break;
	if (i) {
		i->nlookup++;
		inode_note_name(i, parent, name);
		inode_lru_unlink(i);
		inode_lru_front(t, i);
		pthread_mutex_unlock(&t->lock);
		free(fresh);
		close(fd);
		return i;
	}
	if (!fresh) {
		pthread_mutex_unlock(&t->lock);
		close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	fresh->fd = fd;
	fresh->dev = st->st_dev;
	fresh->ino = st->st_ino;
	fresh->type = st->st_mode & S_IFMT;
	fresh->nlookup = 1;
	fresh->next = t->buckets[h];
	t->buckets[h] = fresh;
	inode_note_name(fresh, parent, name);
	inode_lru_front(t, fresh);
	if (++t->count > t->n_buckets)
		inode_grow(t);
	over = t->pressure_limit && t->count > t->pressure_limit;
	pthread_mutex_unlock(&t->lock);
	if (over)
		t->pressure_fn(t->pressure_arg);
	return fresh;
}

void inode_unref(struct inode_table *t, struct inode *i, uint64_t n)
{
	struct inode **pp;

	pthread_mutex_lock(&t->lock);
	i->nlookup = i->nlookup > n ? i->nlookup - n : 0;
	if (i->nlookup > 0 || i == &t->root) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	pp = &t->buckets[inode_hash(i->dev, i->ino, t->n_buckets)];
	while (*pp && *pp != i)
		pp = &(*pp)->next;
	if (*pp)
		*pp = i->next;
	inode_lru_unlink(i);
	t->count--;
	pthread_mutex_unlock(&t->lock);
	if (t->gone_fn)
		t->gone_fn(t->gone_arg, i);
	close(i->fd);
	free(i->name);
	free(i->rpath);
	free(i);
}

void inode_renamed(struct inode_table *t, const struct stat *st,
		   const struct inode *parent, const char *name)
{
	struct inode *i;

	pthread_mutex_lock(&t->lock);
	i = inode_find(t, st->st_dev, st->st_ino);
	if (i && i != &t->root)
		inode_note_name(i, parent, name);
	pthread_mutex_unlock(&t->lock);
}

size_t inode_pick_victims(struct inode_table *t, struct inode_victim *out,
			  size_t max)
{
	struct inode *i, *prev, *p;
	size_t n = 0, seen = 0, count;

	pthread_mutex_lock(&t->lock);
	count = t->count;
	for (i = t->lru.lru_prev; i != &t->lru && n < max && seen < count;
	     i = prev) {
		prev = i->lru_prev;
		seen++;
		if (i->type == S_IFDIR || !i->name ||
		    strlen(i->name) >= sizeof(out[n].name))
			continue;
		p = inode_find(t, i->pdev, i->pino);
		if (!p)
			continue;
		out[n].parent = inode_id(t, p);
		strcpy(out[n].name, i->name);
		n++;
		inode_lru_unlink(i);
		inode_lru_front(t, i);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

void inode_set_gone_fn(struct inode_table *t,
		       void (*fn)(void *arg, struct inode *i), void *arg)
{
	t->gone_fn = fn;
	t->gone_arg = arg;
}

void inode_set_pressure_fn(struct inode_table *t, void (*fn)(void *arg),
			   void *arg, size_t limit)
{
	pthread_mutex_lock(&t->lock);
	t->pressure_fn = fn;
	t->pressure_arg = arg;
	t->pressure_limit = fn ? limit : 0;
	pthread_mutex_unlock(&t->lock);
}

size_t inode_count(struct inode_table *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
