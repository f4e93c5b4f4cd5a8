/*
 * inode — the table of store inodes known to the kernel, keyed by
 * (st_dev, st_ino), each with a lookup count and a cached O_PATH fd.
 * Runs in every FUSE worker thread; one mutex guards the table. It owns
 * the O_PATH fds and never opens or reads file data.
 *
 * Why O_PATH fds instead of paths: a file keeps its identity across
 * renames (ours, or a rename of any parent) and after its last unlink, so
 * every operation on a node id reaches the right store inode without a
 * path walk. While the fd is open the filesystem cannot reuse the inode
 * number, so (dev, ino) is a stable key.
 *
 * Why a hard cap on them: the kernel decides when it forgets inodes, so
 * under a namespace storm the table grows faster than fs/evict.c can ask
 * it to shrink, and one fd per entry ran the daemon out of descriptors
 * (EMFILE in applications, after the change had been made). So the fds
 * are a cache: past the cap, the least recently borrowed idle fd is
 * closed (its entry "detached", after saving a file handle) and the entry
 * is reopened when next borrowed: by its last name under the nearest
 * attached ancestor (a connected path, which fs/record.c resolves), else
 * by file handle (root only). Nobody ever waits for the kernel to forget
 * anything, so no request can wait on eviction. An entry with open files
 * or borrowers is never detached. A detached entry's inode number may be
 * reused once the file is deleted: a lookup that finds a detached entry
 * compares file handles, and a mismatch retires the old entry (stale).
 */
#include "fs/inode.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

/* Longest chain of detached ancestors walked by name (deeper: handle). */
#define INODE_WALK_MAX 64
/* Attached entries looked at from the cold end for one to detach. */
#define INODE_DETACH_SCAN 64
#define INODE_OPEN_FLAGS (O_PATH | O_NOFOLLOW | O_CLOEXEC)

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
	struct inode fdl;	/* lock; attached entries, fdl.fd_next the most
				 * recently borrowed */
	size_t attached;	/* lock; entries on fdl */
	size_t fd_cap;		/* lock; 0: none */
	int mount_fd;		/* for open_by_handle_at, -1: not allowed;
				 * immutable */
	bool capped;		/* lock; the cap was reached (logged once) */
};

static size_t inode_hash(dev_t dev, ino_t ino, size_t n)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (n - 1);
}

/* FD's file handle (malloc'd), or NULL (ENOMEM, EOPNOTSUPP...). */
static struct file_handle *inode_handle(int dirfd, const char *name, int flags)
{
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	int mnt;

	if (!h)
		return NULL;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(dirfd, name, h, &mnt, flags) < 0) {
		free(h);
		return NULL;
	}
	return h;
}

static bool inode_handle_eq(const struct file_handle *a,
			    const struct file_handle *b)
{
	return a->handle_type == b->handle_type &&
	       a->handle_bytes == b->handle_bytes &&
	       memcmp(a->f_handle, b->f_handle, a->handle_bytes) == 0;
}

/* An fd open_by_handle_at accepts for the store's filesystem (not
 * O_PATH), if a detached entry can be reopened by its handle at all
 * (CAP_DAC_READ_SEARCH); else -1. */
static int inode_probe_handles(int root_fd)
{
	struct file_handle *h = inode_handle(root_fd, "", AT_EMPTY_PATH);
	int mfd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = h && mfd >= 0 ? open_by_handle_at(mfd, h, INODE_OPEN_FLAGS) : -1;

	free(h);
	if (fd < 0) {
		if (mfd >= 0)
			close(mfd);
		return -1;
	}
	close(fd);
	return mfd;
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
	t->fdl.fd_next = t->fdl.fd_prev = &t->fdl;
	t->mount_fd = inode_probe_handles(root_fd);
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
	struct inode *i, *next;

	if (!t)
		return;
	/* Every entry but the root is on the LRU list, stale ones too. */
	for (i = t->lru.lru_next; i != &t->lru; i = next) {
		next = i->lru_next;
		if (i->fd >= 0)
			close(i->fd);
		free(i->fh);
		free(i->name);
		free(i->rpath);
		free(i);
	}
	close(t->root.fd);
	if (t->mount_fd >= 0)
		close(t->mount_fd);
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

/* The attached list; caller holds the lock. */
static void inode_fdl_unlink(struct inode *i)
{
	i->fd_prev->fd_next = i->fd_next;
	i->fd_next->fd_prev = i->fd_prev;
}

static void inode_fdl_front(struct inode_table *t, struct inode *i)
{
	i->fd_prev = &t->fdl;
	i->fd_next = t->fdl.fd_next;
	t->fdl.fd_next->fd_prev = i;
	t->fdl.fd_next = i;
}

/* Closes the fd of the least recently borrowed idle attached entry (its
 * handle saved first). Returns false if none could go. Caller holds the
 * lock (a close of an O_PATH fd and name_to_handle_at are short). */
static bool inode_detach_one(struct inode_table *t)
{
	struct inode *i, *prev;
	int seen = 0;

	for (i = t->fdl.fd_prev; i != &t->fdl && seen < INODE_DETACH_SCAN;
	     i = prev, seen++) {
		prev = i->fd_prev;
		if (i->users > 0 || i->n_open > 0)
			continue;
		if (!i->fh)
			i->fh = inode_handle(i->fd, "", AT_EMPTY_PATH);
		if (!i->fh)
			continue;	/* no handle: it could not be told apart
					 * from a reused number later */
		if (!t->capped) {
			t->capped = true;
			log_warn("the mount holds as many inode fds as its budget "
				 "allows; closing the least recently used ones "
				 "(reopened when used), so that requests never run "
				 "out of descriptors", "fd_budget=%zu", t->fd_cap);
		}
		inode_fdl_unlink(i);
		close(i->fd);
		i->fd = -1;
		t->attached--;
		return true;
	}
	return false;
}

/* Makes room for one more attached fd if the cap allows it; caller
 * holds the lock. */
static bool inode_fd_room(struct inode_table *t)
{
	return !t->fd_cap || t->attached < t->fd_cap || inode_detach_one(t);
}

/* Gives I (detached) the fd FD; caller holds the lock and made room. */
static void inode_attach(struct inode_table *t, struct inode *i, int fd)
{
	i->fd = fd;
	inode_fdl_front(t, i);
	t->attached++;
}

/* A lookup found DETACHED entry I for an inode whose handle is FH (NULL:
 * unknown): is it still the same store inode? Caller holds the lock. */
static bool inode_same(const struct inode *i, const struct stat *st,
		       const struct file_handle *fh)
{
	if (i->type != (st->st_mode & S_IFMT))
		return false;
	return !i->fh || !fh || inode_handle_eq(i->fh, fh);
}

/* Takes I out of the hash; caller holds the lock. */
static void inode_unhash(struct inode_table *t, struct inode *i)
{
	struct inode **pp = &t->buckets[inode_hash(i->dev, i->ino, t->n_buckets)];

	while (*pp && *pp != i)
		pp = &(*pp)->next;
	if (*pp)
		*pp = i->next;
	i->next = NULL;
}

/* I's number belongs to a new inode now: out of the hash, it lives on
 * for the kernel's references. Caller holds the lock. */
static void inode_retire(struct inode_table *t, struct inode *i)
{
	inode_unhash(t, i);
	i->stale = true;
}

/* inode_ref and inode_ref_at: FD (an O_PATH fd, or -1) and FH (a handle
 * or NULL; owned) name the inode ST. */
static struct inode *inode_ref_common(struct inode_table *t, int fd,
				      struct file_handle *fh,
				      const struct stat *st,
				      const struct inode *parent,
				      const char *name, int *err)
{
	struct inode *i, *fresh;
	size_t h;
	bool over;

	if (st->st_dev == t->root.dev && st->st_ino == t->root.ino) {
		pthread_mutex_lock(&t->lock);
		t->root.nlookup++;
		pthread_mutex_unlock(&t->lock);
		if (fd >= 0)
			close(fd);
		free(fh);
		return &t->root;
	}
	/* Allocate outside the lock; most lookups of a new name need it. */
	fresh = calloc(1, sizeof(*fresh));
	pthread_mutex_lock(&t->lock);
	h = inode_hash(st->st_dev, st->st_ino, t->n_buckets);
	for (i = t->buckets[h]; i; i = i->next)
		if (i->ino == st->st_ino && i->dev == st->st_dev)
			break;
	if (i && i->fd < 0) {
		/* Detached: nothing held the number. */
		if (!fh && fd >= 0)
			fh = inode_handle(fd, "", AT_EMPTY_PATH);
		if (!inode_same(i, st, fh)) {
			inode_retire(t, i);
			i = NULL;
		}
	}
	if (i) {
		i->nlookup++;
		inode_note_name(i, parent, name);
		inode_lru_unlink(i);
		inode_lru_front(t, i);
		if (i->fd < 0 && fd >= 0 && inode_fd_room(t)) {
			inode_attach(t, i, fd);
			fd = -1;
		}
		pthread_mutex_unlock(&t->lock);
		free(fresh);
		free(fh);
		if (fd >= 0)
			close(fd);
		return i;
	}
	if (!fresh || (fd < 0 && !fh)) {
		pthread_mutex_unlock(&t->lock);
		if (fd >= 0)
			close(fd);
		free(fh);
		free(fresh);
		*err = fresh ? -EMFILE : -ENOMEM;
		return NULL;
	}
	fresh->fd = -1;
	fresh->fh = fh;
	fresh->dev = st->st_dev;
	fresh->ino = st->st_ino;
	fresh->type = st->st_mode & S_IFMT;
	fresh->nlookup = 1;
	fresh->next = t->buckets[h];
	t->buckets[h] = fresh;
	inode_note_name(fresh, parent, name);
	inode_lru_front(t, fresh);
	if (fd >= 0) {
		/* The newest entry is the likeliest to be used next: it gets
		 * the fd, an older one loses its own. Without a handle it
		 * keeps it anyway (past the cap: see inode_set_fd_cap). */
		if (inode_fd_room(t)) {
			inode_attach(t, fresh, fd);
		} else {
			if (!fresh->fh)
				fresh->fh = inode_handle(fd, "", AT_EMPTY_PATH);
			if (fresh->fh)
				close(fd);
			else
				inode_attach(t, fresh, fd);
		}
	}
	if (++t->count > t->n_buckets)
		inode_grow(t);
	over = t->pressure_limit && t->count > t->pressure_limit;
	pthread_mutex_unlock(&t->lock);
	if (over)
		t->pressure_fn(t->pressure_arg);
	return fresh;
}

struct inode *inode_ref(struct inode_table *t, int fd, const struct stat *st,
			const struct inode *parent, const char *name, int *err)
{
	return inode_ref_common(t, fd, NULL, st, parent, name, err);
}

struct inode *inode_ref_at(struct inode_table *t, int dirfd,
			   const struct stat *st, const struct inode *parent,
			   const char *name, int *err)
{
	struct file_handle *fh = inode_handle(dirfd, name, 0);

	if (!fh) {
		*err = errno == ENOMEM ? -ENOMEM : -EMFILE;
		return NULL;
	}
	return inode_ref_common(t, -1, fh, st, parent, name, err);
}

void inode_unref(struct inode_table *t, struct inode *i, uint64_t n)
{
	pthread_mutex_lock(&t->lock);
	i->nlookup = i->nlookup > n ? i->nlookup - n : 0;
	if (i->nlookup > 0 || i == &t->root) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (!i->stale)
		inode_unhash(t, i);
	inode_lru_unlink(i);
	if (i->fd >= 0) {
		inode_fdl_unlink(i);
		t->attached--;
	}
	t->count--;
	pthread_mutex_unlock(&t->lock);
	/* Out of the table: inode_fd_get still works on it (transiently). */
	if (t->gone_fn)
		t->gone_fn(t->gone_arg, i);
	if (i->fd >= 0)
		close(i->fd);
	free(i->fh);
	free(i->name);
	free(i->rpath);
	free(i);
}

/* Opens I (detached) again by its last name, from the nearest attached
 * ancestor. Returns the fd or -errno. Takes the lock itself. */
static int inode_reopen_by_name(struct inode_table *t, struct inode *i)
{
	const char *names[INODE_WALK_MAX];
	char *buf = NULL;
	struct inode *a = i, *top = NULL;
	size_t len = 0, off = 0;
	int depth = 0, fd = -ENOENT, next;

	pthread_mutex_lock(&t->lock);
	while (a->fd < 0 && depth < INODE_WALK_MAX) {
		struct inode *p;

		if (!a->name || a->stale ||
		    !(p = inode_find(t, a->pdev, a->pino)) || p == a)
			break;
		len += strlen(a->name) + 1;
		depth++;
		a = p;
	}
	if (a->fd >= 0 && a != i && (buf = malloc(len))) {
		/* names[] from the top down; the buffer holds them. */
		struct inode *c = i;

		for (int k = depth - 1; k >= 0; k--) {
			size_t l = strlen(c->name) + 1;

			off += l;
			memcpy(buf + len - off, c->name, l);
			names[k] = buf + len - off;
			c = inode_find(t, c->pdev, c->pino);
		}
		top = a;
		top->users++;
	}
	pthread_mutex_unlock(&t->lock);
	if (!top) {
		free(buf);
		return -ENOENT;
	}
	fd = top->fd;
	for (int k = 0; k < depth; k++) {
		next = openat(fd, names[k], INODE_OPEN_FLAGS);
		if (fd != top->fd)
			close(fd);
		fd = next < 0 ? -errno : next;
		if (fd < 0)
			break;
	}
	inode_fd_put(t, top, top->fd);
	free(buf);
	return fd;
}

/* FD's store inode is I's? Closes FD and returns -ESTALE if not. */
static int inode_check(const struct inode *i, int fd)
{
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && st.st_dev == i->dev && st.st_ino == i->ino &&
	    (st.st_mode & S_IFMT) == i->type)
		return fd;
	close(fd);
	return -ESTALE;
}

int inode_fd_get(struct inode_table *t, struct inode *i)
{
	struct file_handle *fh = NULL;
	bool by_handle;
	int fd, e;

	pthread_mutex_lock(&t->lock);
	if (i->fd >= 0) {
		i->users++;
		if (i != &t->root && i->nlookup > 0) {	/* 0: out of the table */
			inode_fdl_unlink(i);
			inode_fdl_front(t, i);
		}
		fd = i->fd;
		pthread_mutex_unlock(&t->lock);
		return fd;
	}
	if (t->mount_fd >= 0 && i->fh) {
		size_t sz = sizeof(*i->fh) + i->fh->handle_bytes;

		fh = malloc(sz);
		if (fh)
			memcpy(fh, i->fh, sz);
	}
	pthread_mutex_unlock(&t->lock);
	/* By name first: that gives a connected path (fs/record.c reads
	 * it), where a handle may give a disconnected one. */
	fd = inode_check(i, inode_reopen_by_name(t, i));
	by_handle = fd < 0 && fh;
	if (by_handle) {
		fd = open_by_handle_at(t->mount_fd, fh, INODE_OPEN_FLAGS);
		fd = inode_check(i, fd < 0 ? -errno : fd);
	}
	free(fh);
	pthread_mutex_lock(&t->lock);
	if (fd < 0) {
		if (i->fd >= 0) {	/* attached meanwhile by another borrower */
			i->users++;
			fd = i->fd;
		} else if (fd != -EMFILE && fd != -ENFILE && fd != -ENOMEM) {
			fd = by_handle ? -ESTALE : -ENOENT;
		}
		pthread_mutex_unlock(&t->lock);
		return fd;
	}
	if (i->fd >= 0) {
		/* Another borrower attached it meanwhile. */
		e = fd;
		fd = i->fd;
		i->users++;
		pthread_mutex_unlock(&t->lock);
		close(e);
		return fd;
	}
	if (!i->stale && i->nlookup > 0 && inode_fd_room(t)) {
		inode_attach(t, i, fd);
		i->users++;
	}
	pthread_mutex_unlock(&t->lock);
	return fd;	/* not attached: the caller's alone (inode_fd_put) */
}

void inode_fd_put(struct inode_table *t, struct inode *i, int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&t->lock);
	if (fd == i->fd) {
		i->users--;
		fd = -1;
	}
	pthread_mutex_unlock(&t->lock);
	if (fd >= 0)
		close(fd);
}

void inode_set_fd_cap(struct inode_table *t, size_t cap)
{
	pthread_mutex_lock(&t->lock);
	t->fd_cap = cap;
	while (cap && t->attached > cap && inode_detach_one(t))
		;
	pthread_mutex_unlock(&t->lock);
}

size_t inode_attached(struct inode_table *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->attached;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void inode_open_pin(struct inode_table *t, struct inode *i, int file_fd)
{
	char proc[32];
	bool attached;
	int fd;

	pthread_mutex_lock(&t->lock);
	i->n_open++;
	attached = i->fd >= 0;
	pthread_mutex_unlock(&t->lock);
	if (attached || file_fd < 0)
		return;
	/* Detached since the open borrowed it: attach an fd from the open
	 * file (its magic link reaches the inode even once unlinked). */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", file_fd);
	fd = inode_check(i, open(proc, O_PATH | O_CLOEXEC));
	if (fd < 0)
		return;
	pthread_mutex_lock(&t->lock);
	if (i->fd < 0 && !i->stale && inode_fd_room(t)) {
		inode_attach(t, i, fd);
		fd = -1;
	}
	pthread_mutex_unlock(&t->lock);
	if (fd >= 0)
		close(fd);
}

void inode_open_unpin(struct inode_table *t, struct inode *i)
{
	pthread_mutex_lock(&t->lock);
	i->n_open--;
	pthread_mutex_unlock(&t->lock);
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
