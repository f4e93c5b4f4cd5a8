/*
 * inventory — builds the inventory of a tree (inventory.h) by a walk with
 * *at calls below one directory fd, and compares two of them. Contents
 * are read with O_NOFOLLOW|O_NONBLOCK and hashed once per read; xattrs of
 * entries that must not be opened (symlinks, FIFOs, sockets, devices) are
 * listed with listxattrat(2) on the parent's fd (Linux 6.13; before it,
 * through /proc/self/fd/N/NAME) and read as /proc/self/fd/N/NAME with the
 * l* calls,
 * which do not follow the last component. Blocking IO on the caller's
 * thread.
 */
#include "netsync/delta/inventory.h"
#include "netsync/wire/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/array.h"
#include "common/xattrname.h"

#define INV_READ_CHUNK (1u << 20)
#define INV_XATTR_LIST (64u << 10)
/* The first listing asks for this much: the kernel allocates the size the
 * caller passes for every call, and 64 KiB per file was a large part of a
 * walk's CPU (docs/benchmarks.md, "bench/mirror.sh"); a longer list is
 * asked for again at full size. */
#define INV_XATTR_FIRST 1024u

#ifndef __NR_listxattrat
#define __NR_listxattrat 465	/* Linux 6.13, the same number on every arch */
#endif

int inventory_path_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char ca = (unsigned char)*a, cb = (unsigned char)*b;

		if (ca == cb) {
			if (!ca)
				return 0;
			continue;
		}
		/* '/' sorts below every byte but the end */
		if (ca == '/')
			ca = 1;
		if (cb == '/')
			cb = 1;
		return ca < cb ? -1 : 1;
	}
}

static char *inv_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

int inventory_add(struct inventory *inv, const struct proto_entry *e)
{
	struct proto_entry c = *e;
	int rc;

	rc = ARRAY_GROW(inv->e, inv->cap, inv->n + 1, 256);
	if (rc < 0)
		return rc;
	c.path = inv_strdup(e->path);
	c.target = inv_strdup(e->target);
	c.link = inv_strdup(e->link);
	if (!c.path || (e->target && !c.target) || (e->link && !c.link)) {
		free((char *)c.path);
		free((char *)c.target);
		free((char *)c.link);
		return -ENOMEM;
	}
	inv->e[inv->n++] = c;
	return 0;
}

void inventory_free(struct inventory *inv)
{
	for (size_t i = 0; i < inv->n; i++) {
		free((char *)inv->e[i].path);
		free((char *)inv->e[i].target);
		free((char *)inv->e[i].link);
	}
	free(inv->e);
	memset(inv, 0, sizeof(*inv));
}

/* ---- the walk ---- */

struct inv_walk {
	struct inventory *inv;
	const struct inventory_opts *o;
	const char *skip;
	char *buf;		/* INV_READ_CHUNK */
	/* (dev, ino) of every multiply-linked non-directory, to name the
	 * link groups after the sort */
	struct inv_ino { uint64_t dev, ino; size_t idx; } *inos;
	size_t n_inos, cap_inos;
};

static void inv_hash_out(XXH128_hash_t h, uint8_t out[16])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, h);
	memcpy(out, c.digest, 16);
}

/* XXH3-128 of the file NAME in DIRFD; 0 or -errno. */
static int inv_hash_file(struct inv_walk *w, int dirfd, const char *name,
			 struct proto_entry *e)
{
	XXH3_state_t *st = XXH3_createState();
	int fd, rc = 0;
	ssize_t n;

	if (!st)
		return -ENOMEM;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	XXH3_128bits_reset(st);
	while ((n = read(fd, w->buf, INV_READ_CHUNK)) > 0) {
		XXH3_128bits_update(st, w->buf, (size_t)n);
		w->inv->bytes_read += (uint64_t)n;
	}
	if (n < 0)
		rc = -errno;
	close(fd);
	if (rc == 0)
		inv_hash_out(XXH3_128bits_digest(st), e->hash);
out:
	XXH3_freeState(st);
	return rc;
}

static int inv_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* listxattrat(2) is missing or filtered: /proc paths from then on. */
static int inv_no_listxattrat;

/* llistxattr of NAME in DIRFD into LIST (SIZE bytes); XPATH is the same
 * entry as a /proc/self/fd path, built here when needed. A kernel before
 * 6.13 answers ENOSYS; a seccomp filter older than the call may answer
 * EPERM, which the /proc path then tells apart from a real refusal. */
static ssize_t inv_listxattr(int dirfd, const char *name, char *xpath, size_t xcap,
			     char *list, size_t size)
{
	bool filtered = false;
	ssize_t n;

	if (!__atomic_load_n(&inv_no_listxattrat, __ATOMIC_RELAXED)) {
		n = (ssize_t)syscall(__NR_listxattrat, dirfd, name, AT_SYMLINK_NOFOLLOW, list,
				     size);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		filtered = true;
	}
	if (!*xpath)
		snprintf(xpath, xcap, "/proc/self/fd/%d/%s", dirfd, name);
	n = llistxattr(xpath, list, size);
	if (filtered && (n >= 0 || errno != EPERM))
		__atomic_store_n(&inv_no_listxattrat, 1, __ATOMIC_RELAXED);
	return n;
}

/* Digest of every xattr of NAME in DIRFD (not followed if a symlink): the
 * sorted names, each followed by its value. */
static int inv_hash_xattrs(int dirfd, const char *name, bool replicated_only,
			   struct proto_entry *e)
{
	char list[INV_XATTR_LIST], *names[1024], *val = NULL;
	char path[64 + PROTO_NAME_MAX] = "";
	XXH3_state_t *st;
	ssize_t len, vlen;
	size_t n = 0;
	int rc = 0;

	len = inv_listxattr(dirfd, name, path, sizeof(path), list, INV_XATTR_FIRST);
	if (len < 0 && errno == ERANGE)
		len = inv_listxattr(dirfd, name, path, sizeof(path), list, sizeof(list));
	if (len < 0)
		return errno == ENOTSUP ? 0 : -errno;
	for (char *p = list; p < list + len && n < 1024; p += strlen(p) + 1)
		if (!replicated_only || xattrname_replicated(p))
			names[n++] = p;
	e->n_xattrs = (uint32_t)n;
	if (!n)
		return 0;
	qsort(names, n, sizeof(names[0]), inv_name_cmp);
	st = XXH3_createState();
	val = malloc(65536);
	if (!st || !val) {
		rc = -ENOMEM;
		goto out;
	}
	XXH3_128bits_reset(st);
	if (!*path)
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, name);
	for (size_t i = 0; i < n; i++) {
		vlen = lgetxattr(path, names[i], val, 65536);
		if (vlen < 0) {
			rc = -errno;
			goto out;
		}
		XXH3_128bits_update(st, names[i], strlen(names[i]) + 1);
		XXH3_128bits_update(st, &vlen, sizeof(vlen));
		XXH3_128bits_update(st, val, (size_t)vlen);
	}
	inv_hash_out(XXH3_128bits_digest(st), e->xattrs);
out:
	XXH3_freeState(st);
	free(val);
	return rc;
}

/* Records one entry NAME of DIRFD (whose tree path is PATH). */
static int inv_entry(struct inv_walk *w, int dirfd, const char *name, const char *path,
		     const struct stat *st)
{
	struct proto_entry e = { .path = path, .mode = st->st_mode, .uid = st->st_uid,
				 .gid = st->st_gid, .mtime_ns = (int64_t)st->st_mtim.tv_sec *
				 1000000000 + st->st_mtim.tv_nsec,
				 .nlink = S_ISDIR(st->st_mode) ? 1 : (uint32_t)st->st_nlink };
	char target[PROTO_PATH_MAX + 1];
	int rc = 0;

	if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))
		e.size = (uint64_t)st->st_size;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		e.rdev = st->st_rdev;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		if (n < 0)
			rc = -errno;
		target[n < 0 ? 0 : n] = '\0';
		e.target = target;
	}
	if (!rc && S_ISREG(st->st_mode) && w->o->hash_content) {
		/* read every time: verify and --checksum never trust a cache */
		rc = inv_hash_file(w, dirfd, name, &e);
		if (rc == 0)
			e.flags |= PROTO_ENTRY_F_HASHED;
	}
	if (!rc)
		rc = inv_hash_xattrs(dirfd, name, w->o->replicated_xattrs, &e);
	e.err = rc < 0 ? (uint32_t)-rc : 0;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		int g = ARRAY_GROW(w->inos, w->cap_inos, w->n_inos + 1, 64);

		if (g < 0)
			return g;
		w->inos[w->n_inos++] = (struct inv_ino){ st->st_dev, st->st_ino, w->inv->n };
	}
	return inventory_add(w->inv, &e);
}

/* The root's own entry (path ""): its mode, owner, mtime and xattrs,
 * which a replica's root must match as any folder's. */
static int inv_root(struct inv_walk *w, int rootfd)
{
	struct proto_entry *e = &w->inv->root;
	struct stat st;
	int rc;

	if (fstat(rootfd, &st) < 0)
		return -errno;
	*e = (struct proto_entry){ .path = "", .mode = st.st_mode, .uid = st.st_uid,
				   .gid = st.st_gid, .nlink = 1,
				   .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
					       st.st_mtim.tv_nsec };
	rc = inv_hash_xattrs(rootfd, ".", w->o->replicated_xattrs, e);
	e->err = rc < 0 ? (uint32_t)-rc : 0;
	w->inv->has_root = true;
	return 0;
}

int inventory_encode_root(const struct inventory *inv, struct evbuffer *out)
{
	struct proto_entry r;

	if (!inv->has_root)
		return 0;
	r = inv->root;
	r.path = ".";
	r.target = r.link = NULL;
	r.flags |= PROTO_ENTRY_F_ROOT;
	return proto_encode_entry(out, &r);
}

bool inventory_take_root(struct inventory *inv, const struct proto_entry *e, bool *bad)
{
	if (!(e->flags & PROTO_ENTRY_F_ROOT))
		return false;
	*bad = inv->has_root || strcmp(e->path, ".") != 0 || !S_ISDIR(e->mode) || e->target ||
	       e->link;
	inv->root = *e;
	inv->root.path = "";
	inv->root.target = inv->root.link = NULL;
	inv->root.flags &= ~PROTO_ENTRY_F_ROOT;
	inv->has_root = true;
	return true;
}

int inventory_add_path(struct inventory *inv, int rootfd, const char *path, bool hash)
{
	/* what replication carries: content and the replicated xattrs */
	static const struct inventory_opts with = { .hash_content = true,
						    .replicated_xattrs = true };
	static const struct inventory_opts without = { .replicated_xattrs = true };
	struct inv_walk w = { .inv = inv, .o = hash ? &with : &without };
	struct path_ref ref;
	struct stat st;
	int rc;

	rc = path_resolve(rootfd, path, false, &ref);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc < 0)
		return rc;
	if (fstatat(ref.dirfd, ref.name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		goto out;
	}
	w.buf = malloc(INV_READ_CHUNK);
	if (!w.buf) {
		rc = -ENOMEM;
		goto out;
	}
	rc = inv_entry(&w, ref.dirfd, ref.name, path, &st);
	free(w.buf);
	free(w.inos);
	if (rc == 0)
		rc = 1;
out:
	path_put(&ref);
	return rc;
}

static int inv_str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int inventory_entry_same(const struct proto_entry *a, const struct proto_entry *b)
{
	/* a regular file is the same only when both contents were hashed */
	if (S_ISREG(a->mode) && !(a->flags & b->flags & PROTO_ENTRY_F_HASHED))
		return 0;
	return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
	       a->size == b->size && a->mtime_ns == b->mtime_ns && a->rdev == b->rdev &&
	       a->nlink == b->nlink &&
	       a->n_xattrs == b->n_xattrs && !memcmp(a->xattrs, b->xattrs, 16) &&
	       !memcmp(a->hash, b->hash, 16) && !a->err && !b->err &&
	       inv_str_eq(a->target, b->target) && inv_str_eq(a->path, b->path);
}

static int inv_dir(struct inv_walk *w, int dirfd, const char *prefix)
{
	char path[PROTO_PATH_MAX + 1];
	size_t plen = strlen(prefix);
	struct dirent *d;
	struct stat st;
	int rc = 0, fd;
	DIR *dir;

	if (plen + (plen ? 1 : 0) > PROTO_PATH_MAX)
		return 0;	/* no name fits below it */
	memcpy(path, prefix, plen);
	if (plen)
		path[plen++] = '/';

	fd = dup(dirfd);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((d = readdir(dir)) != NULL && rc == 0) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		size_t nlen = strlen(d->d_name);

		if (plen + nlen >= sizeof(path))
			continue;	/* no such path can be in a replica either */
		memcpy(path + plen, d->d_name, nlen + 1);
		if (w->skip && strcmp(path, w->skip) == 0)
			continue;
		if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* gone while we walked */
			rc = -errno;
			break;
		}
		if (w->o->exclude && w->o->exclude(path, S_ISDIR(st.st_mode), w->o->exclude_arg))
			continue;
		rc = inv_entry(w, dirfd, d->d_name, path, &st);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub < 0) {
				w->inv->e[w->inv->n - 1].err = (uint32_t)errno;
				continue;
			}
			rc = inv_dir(w, sub, path);
			close(sub);
		}
	}
	closedir(dir);
	return rc;
}

static int inv_ino_cmp(const void *a, const void *b)
{
	const struct inv_ino *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static int inv_entry_cmp(const void *a, const void *b)
{
	return inventory_path_cmp(((const struct proto_entry *)a)->path,
				  ((const struct proto_entry *)b)->path);
}

void inventory_sort(struct inventory *inv)
{
	if (inv->n > 1)	/* an empty inventory has no array: qsort(NULL) is UB */
		qsort(inv->e, inv->n, sizeof(*inv->e), inv_entry_cmp);
}

/* Every name of a link group but the first (in tree order) names the
 * first: the groups compare by names, not by inode numbers. */
static int inv_link_groups(struct inv_walk *w)
{
	struct inventory *inv = w->inv;

	/* inos[].idx index the unsorted array: resolve to paths first */
	for (size_t i = 0; i < w->n_inos; i++)
		w->inos[i].idx = (size_t)(uintptr_t)inv->e[w->inos[i].idx].path;
	inventory_sort(inv);
	if (w->n_inos > 1)	/* no hard links: no array */
		qsort(w->inos, w->n_inos, sizeof(*w->inos), inv_ino_cmp);
	for (size_t i = 0; i < w->n_inos;) {
		size_t j = i;
		const char *first = (const char *)(uintptr_t)w->inos[i].idx;

		while (j < w->n_inos && inv_ino_cmp(&w->inos[i], &w->inos[j]) == 0) {
			const char *p = (const char *)(uintptr_t)w->inos[j].idx;

			if (inventory_path_cmp(p, first) < 0)
				first = p;
			j++;
		}
		for (size_t k = i; k < j; k++) {
			const char *p = (const char *)(uintptr_t)w->inos[k].idx;
			struct proto_entry key = { .path = p }, *e;

			if (p == first)
				continue;
			e = bsearch(&key, inv->e, inv->n, sizeof(*inv->e), inv_entry_cmp);
			if (e && !(e->link = strdup(first)))
				return -ENOMEM;
		}
		i = j;
	}
	return 0;
}

/* Opens SUB beneath ROOTFD without following a symlink anywhere on it. */
static int inv_open_sub(int rootfd, const char *sub)
{
	char buf[PROTO_PATH_MAX + 1], *save = NULL, *c;
	int fd = dup(rootfd), next;

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", sub);
	for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			close(fd);
			return -EINVAL;
		}
		next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
	}
	return fd;
}

int inventory_walk(const char *root, const struct inventory_opts *o, struct inventory *inv)
{
	struct inv_walk w = { .inv = inv, .o = o, .skip = o->skip };
	const char *sub = o->sub ? o->sub : "";
	int rootfd, fd, rc;

	memset(inv, 0, sizeof(*inv));
	w.buf = malloc(INV_READ_CHUNK);
	if (!w.buf)
		return -ENOMEM;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		rc = -errno;
		goto out;
	}
	if (*sub) {
		const char *slash = strrchr(sub, '/');
		struct stat st;
		int pfd;
		char parent[PROTO_PATH_MAX + 1];

		snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - sub) : 0, sub);
		pfd = inv_open_sub(rootfd, parent);
		if (pfd < 0) {
			rc = pfd;
			goto out_root;
		}
		rc = fstatat(pfd, slash ? slash + 1 : sub, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
		if (rc == 0 && o->with_sub)
			rc = inv_entry(&w, pfd, slash ? slash + 1 : sub, sub, &st);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			fd = openat(pfd, slash ? slash + 1 : sub, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
			rc = fd < 0 ? -errno : inv_dir(&w, fd, sub);
			if (fd >= 0)
				close(fd);
		}
		close(pfd);
	} else {
		rc = inv_root(&w, rootfd);
		if (rc == 0)
			rc = inv_dir(&w, rootfd, "");
	}
	if (rc == 0)
		rc = inv_link_groups(&w);
out_root:
	close(rootfd);
out:
	free(w.buf);
	free(w.inos);
	if (rc < 0)
		inventory_free(inv);
	return rc;
}

int inventory_build(const char *root, const char *skip, struct inventory *inv)
{
	struct inventory_opts o = { .hash_content = true, .skip = skip };

	return inventory_walk(root, &o, inv);
}

long inventory_find(const struct inventory *inv, const char *path)
{
	size_t lo = 0, hi = inv->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = inventory_path_cmp(inv->e[mid].path, path);

		if (d == 0)
			return (long)mid;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* ---- comparison ---- */

static const char *inv_kind(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "char device";
	case S_IFBLK: return "block device";
	default: return "unknown";
	}
}

struct inv_cmp {
	const char *ln, *rn;
	void (*fn)(const char *path, const char *what, void *arg);
	void *arg;
	size_t n;
};

static void inv_diff(struct inv_cmp *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void inv_diff(struct inv_cmp *c, const char *path, const char *fmt, ...)
{
	char what[PROTO_PATH_MAX * 2 + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	c->n++;
	c->fn(path, what, c->arg);
}

static void inv_cmp_entry(struct inv_cmp *c, const struct proto_entry *l,
			  const struct proto_entry *r)
{
	const char *p = l->path;

	if (l->err || r->err) {
		inv_diff(c, p, "unreadable: %s %s, %s %s", l->err ? strerror((int)l->err) : "ok",
			 c->ln, r->err ? strerror((int)r->err) : "ok", c->rn);
		return;
	}
	if ((l->mode & S_IFMT) != (r->mode & S_IFMT)) {
		inv_diff(c, p, "type: %s %s, %s %s", inv_kind(l->mode), c->ln,
			 inv_kind(r->mode), c->rn);
		return;
	}
	if ((l->mode & 07777) != (r->mode & 07777))
		inv_diff(c, p, "mode: %04o %s, %04o %s", l->mode & 07777, c->ln,
			 r->mode & 07777, c->rn);
	if (l->uid != r->uid || l->gid != r->gid)
		inv_diff(c, p, "owner: %u:%u %s, %u:%u %s", l->uid, l->gid, c->ln,
			 r->uid, r->gid, c->rn);
	if (l->size != r->size)
		inv_diff(c, p, "size: %" PRIu64 " %s, %" PRIu64 " %s", l->size, c->ln,
			 r->size, c->rn);
	else if (memcmp(l->hash, r->hash, 16) != 0)
		inv_diff(c, p, "content differs (same size)");
	if (l->mtime_ns != r->mtime_ns)
		inv_diff(c, p, "mtime: %" PRId64 ".%09" PRId64 " %s, %" PRId64 ".%09" PRId64 " %s",
			 l->mtime_ns / 1000000000, l->mtime_ns % 1000000000, c->ln,
			 r->mtime_ns / 1000000000, r->mtime_ns % 1000000000, c->rn);
	if (l->rdev != r->rdev)
		inv_diff(c, p, "device: %u:%u %s, %u:%u %s", major(l->rdev), minor(l->rdev),
			 c->ln, major(r->rdev), minor(r->rdev), c->rn);
	if ((l->target || r->target) &&
	    (!l->target || !r->target || strcmp(l->target, r->target) != 0))
		inv_diff(c, p, "link target: '%s' %s, '%s' %s", l->target ? l->target : "",
			 c->ln, r->target ? r->target : "", c->rn);
	if ((l->link || r->link) && (!l->link || !r->link || strcmp(l->link, r->link) != 0))
		inv_diff(c, p, "hard link: %s%s %s, %s%s %s", l->link ? "a name of " : "separate",
			 l->link ? l->link : "", c->ln, r->link ? "a name of " : "separate",
			 r->link ? r->link : "", c->rn);
	if (l->n_xattrs != r->n_xattrs || memcmp(l->xattrs, r->xattrs, 16) != 0)
		inv_diff(c, p, "xattrs: %u %s, %u %s (names or values differ)", l->n_xattrs,
			 c->ln, r->n_xattrs, c->rn);
}

size_t inventory_compare(const struct inventory *l, const struct inventory *r,
			 const char *lname, const char *rname,
			 void (*fn)(const char *path, const char *what, void *arg), void *arg)
{
	struct inv_cmp c = { .ln = lname, .rn = rname, .fn = fn, .arg = arg };
	size_t i = 0, j = 0;

	if (l->has_root && r->has_root) {
		struct proto_entry lr = l->root, rr = r->root;

		lr.path = rr.path = ".";
		inv_cmp_entry(&c, &lr, &rr);
	}

	while (i < l->n || j < r->n) {
		int d = i == l->n ? 1 : j == r->n ? -1 :
			inventory_path_cmp(l->e[i].path, r->e[j].path);

		if (d < 0) {
			inv_diff(&c, l->e[i].path, "only %s (%s)", lname, inv_kind(l->e[i].mode));
			i++;
		} else if (d > 0) {
			inv_diff(&c, r->e[j].path, "only %s (%s)", rname, inv_kind(r->e[j].mode));
			j++;
		} else {
			inv_cmp_entry(&c, &l->e[i], &r->e[j]);
			i++;
			j++;
		}
	}
	return c.n;
}
