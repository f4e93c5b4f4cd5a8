/*
 * hold — the held paths of a split brain's stream and the rule that
 * holds a frame back (hold.h). Loop thread of serve.
 */
#include "netsync/secondary/hold.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void hold_init(struct hold *h)
{
	pathset_init(&h->held);
	pathset_init(&h->anc);
	pathset_init(&h->mtimes);
	h->inos = NULL;
	h->n_inos = h->cap_inos = 0;
}

void hold_clear(struct hold *h)
{
	pathset_clear(&h->held);
	pathset_clear(&h->anc);
	pathset_clear(&h->mtimes);
	free(h->inos);
	h->inos = NULL;
	h->n_inos = h->cap_inos = 0;
}

/* PATH's inode when it is a non-folder with more than one name. */
static bool hold_linked(int store_fd, const char *path, struct hold_inode *out)
{
	struct stat st;

	if (!path || !path[0] || fstatat(store_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return false;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	return true;
}

/* IN is one of H's held inodes from index FROM on. */
static bool hold_has_inode(const struct hold *h, size_t from, const struct hold_inode *in)
{
	for (size_t i = from; i < h->n_inos; i++)
		if (h->inos[i].dev == in->dev && h->inos[i].ino == in->ino)
			return true;
	return false;
}

int hold_add_inode(struct hold *h, int store_fd, const char *path)
{
	struct hold_inode in;

	if (!hold_linked(store_fd, path, &in) || hold_has_inode(h, 0, &in))
		return 0;
	if (h->n_inos == h->cap_inos) {
		size_t cap = h->cap_inos ? 2 * h->cap_inos : 16;
		struct hold_inode *p = realloc(h->inos, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->inos = p;
		h->cap_inos = cap;
	}
	h->inos[h->n_inos++] = in;
	return 0;
}

bool hold_alias(const struct hold *h, int store_fd, const char *path)
{
	struct hold_inode in;

	return h->n_inos && hold_linked(store_fd, path, &in) && hold_has_inode(h, 0, &in);
}

struct hold_walk {
	struct hold *h;
	int store_fd;
	size_t from;
	hold_alias_fn fn;
	void *arg;
	int rc;
	/* every non-folder found: 0 or -errno (ends the walk) */
	int (*visit)(struct hold_walk *w, const struct stat *st);
	char path[PATH_MAX];
};

/* The folder DFD (closed here) at W->path[0..LEN): its entries, folders
 * recursively (one fd per level). */
static void hold_walk_dir(struct hold_walk *w, int dfd, size_t len)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while (w->rc == 0 && (de = readdir(d))) {
		size_t n = strlen(de->d_name), at = len ? len + 1 : 0;
		struct stat st;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    at + n + 1 > sizeof(w->path) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (len)
			w->path[len] = '/';
		memcpy(w->path + at, de->d_name, n + 1);
		if (S_ISDIR(st.st_mode)) {
			fd = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				hold_walk_dir(w, fd, at + n);
			continue;
		}
		w->rc = w->visit(w, &st);
	}
	closedir(d);
}

/* Another name of a held file, not held itself (nor below a subtree). */
static int hold_visit_alias(struct hold_walk *w, const struct stat *st)
{
	struct hold_inode in = { .dev = st->st_dev, .ino = st->st_ino };

	if (st->st_nlink > 1 && hold_has_inode(w->h, w->from, &in) && !hold_covers(w->h, w->path))
		return w->fn(w->path, w->arg);
	return 0;
}

/* A linked file below a folder held whole: held as an inode too. */
static int hold_visit_linked(struct hold_walk *w, const struct stat *st)
{
	return st->st_nlink > 1 ? hold_add_inode(w->h, w->store_fd, w->path) : 0;
}

/* Walks DIR ("" the store) under STORE_FD with W's visitor; W->path
 * starts as DIR. */
static int hold_walk(struct hold_walk *w, int store_fd, const char *dir)
{
	size_t len = strlen(dir);
	int fd;

	if (len >= sizeof(w->path))
		return -ENAMETOOLONG;
	fd = openat(store_fd, len ? dir : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	memcpy(w->path, dir, len + 1);
	w->store_fd = store_fd;
	hold_walk_dir(w, fd, len);
	return w->rc;
}

int hold_each_alias(struct hold *h, int store_fd, size_t from, hold_alias_fn fn, void *arg)
{
	struct hold_walk *w;
	int rc;

	if (from >= h->n_inos)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct hold_walk){ .h = h, .from = from, .fn = fn, .arg = arg,
				 .visit = hold_visit_alias };
	rc = hold_walk(w, store_fd, "");
	free(w);
	return rc;
}

int hold_add_tree_inodes(struct hold *h, int store_fd, const char *dir)
{
	struct hold_walk *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	*w = (struct hold_walk){ .h = h, .visit = hold_visit_linked };
	rc = hold_walk(w, store_fd, dir);
	free(w);
	return rc;
}

int hold_add(struct hold *h, const char *path, bool subtree)
{
	char *p = strdup(path);
	char *slash;
	int rc;

	if (!p)
		return -ENOMEM;
	rc = pathset_add(&h->held, p, subtree ? 1 : 0);
	while (rc >= 0 && (slash = strrchr(p, '/'))) {
		*slash = '\0';
		rc = pathset_add(&h->anc, p, 0);
	}
	if (rc >= 0)
		rc = pathset_add(&h->anc, "", 0);
	free(p);
	return rc < 0 ? rc : 0;
}

struct hold_note {
	struct hold *h;
	int store_fd;
	int rc;
};

static void hold_note_one(const struct pathset_entry *e, void *arg)
{
	struct hold_note *n = arg;
	struct stat st;
	int rc;

	if (n->rc < 0 || !e->path[0] || pathset_find(&n->h->mtimes, e->path) ||
	    fstatat(n->store_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return;
	rc = pathset_add(&n->h->mtimes, e->path,
			 (uint64_t)(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec));
	if (rc < 0)
		n->rc = rc;
}

int hold_note_mtimes(struct hold *h, int store_fd)
{
	struct hold_note n = { .h = h, .store_fd = store_fd };

	pathset_each(&h->held, hold_note_one, &n);
	pathset_each(&h->anc, hold_note_one, &n);
	return n.rc;
}

int hold_mtime(const struct hold *h, const char *dir, int64_t *ns)
{
	const struct pathset_entry *e = h->mtimes.n ? pathset_find(&h->mtimes, dir) : NULL;

	if (!e)
		return 0;
	*ns = (int64_t)e->value;
	return 1;
}

void hold_forget_mtime(struct hold *h, const char *dir)
{
	if (h->mtimes.n && !hold_covers(h, dir))
		pathset_remove(&h->mtimes, dir);
}

bool hold_subtree(const struct hold *h, const char *path)
{
	return path && h->held.n && pathset_covering(&h->held, path, 1) != NULL;
}

bool hold_covers(const struct hold *h, const char *path)
{
	return path && h->held.n &&
	       (pathset_find(&h->held, path) != NULL || hold_subtree(h, path));
}

bool hold_above(const struct hold *h, const char *path)
{
	return path && h->anc.n && pathset_find(&h->anc, path) != NULL;
}

bool hold_op(const struct hold *h, const struct journal_op *op, const char **why)
{
	bool attr = op->type == JOP_SETXATTR || op->type == JOP_REMOVEXATTR ||
		    (op->type == JOP_SETATTR && !(op->attr_mask & JATTR_SIZE));
	/* a symlink's path2 is its target, not a path of the store */
	const char *p2 = op->type == JOP_SYMLINK ? NULL : op->path2;

	*why = op->path;
	if (hold_covers(h, op->path) || (!attr && hold_above(h, op->path)))
		return true;
	*why = p2;
	return hold_covers(h, p2) || hold_above(h, p2);
}

struct hold_keep {
	const char *dir;
	size_t dlen;
	struct pathset names;
};

/* The entry of K->dir that leads to held path E, if E is below it. */
static void hold_keep_one(const struct pathset_entry *e, void *arg)
{
	struct hold_keep *k = arg;
	const char *rest = e->path;
	char name[256];
	size_t n;

	if (k->dlen) {
		if (strncmp(rest, k->dir, k->dlen) != 0 || rest[k->dlen] != '/')
			return;
		rest += k->dlen + 1;
	}
	n = strcspn(rest, "/");
	if (n == 0 || n >= sizeof(name))
		return;
	memcpy(name, rest, n);
	name[n] = '\0';
	(void)pathset_add(&k->names, name, 0);
}

static void hold_keep_size(const struct pathset_entry *e, void *arg)
{
	*(size_t *)arg += strlen(e->path) + 1;
}

static void hold_keep_copy(const struct pathset_entry *e, void *arg)
{
	char **at = arg;
	size_t n = strlen(e->path) + 1;

	memcpy(*at, e->path, n);
	*at += n;
}

int hold_prune_keep(const struct hold *h, struct proto_prune *m, char **buf)
{
	struct hold_keep k = { .dir = m->path, .dlen = strlen(m->path) };
	size_t add = 0;
	char *at;

	*buf = NULL;
	if (!hold_above(h, m->path))
		return 0;
	pathset_init(&k.names);
	pathset_each(&h->held, hold_keep_one, &k);
	pathset_each(&k.names, hold_keep_size, &add);
	*buf = malloc(m->names_len + add + 1);
	if (!*buf) {
		pathset_clear(&k.names);
		return -ENOMEM;
	}
	if (m->names_len)
		memcpy(*buf, m->names, m->names_len);
	at = *buf + m->names_len;
	pathset_each(&k.names, hold_keep_copy, &at);
	pathset_clear(&k.names);
	m->names = *buf;
	m->names_len += add;
	return 0;
}
