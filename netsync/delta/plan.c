/*
 * plan — compares two sorted inventories in one merge pass and lists what
 * converging the peer takes (plan.h). The rules:
 *   - same type: a file whose size or mtime differs (or, with --checksum,
 *     whose digest does) is changed content; attributes and xattrs alone
 *     make a META item;
 *   - another type at a path: the source's entry is created over it (the
 *     receiver removes what is in the way, subtree and all);
 *   - hard links: a name whose group differs becomes a LINK to its first
 *     name, or a standalone copy (REPLACE) when the source has it alone;
 *   - renames (with --delete only, since the old name must go): a new file
 *     with one link takes the place of a peer-only file of the same size
 *     and mtime (and digest, when both have one), then a block delta
 *     proves or fixes the content;
 *   - deletes: a peer-only entry goes with its folder's PRUNE; an excluded
 *     one is kept.
 * Runs on the caller's thread; pure.
 */
#include "netsync/delta/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/array.h"
#include "common/pathset.h"
#include "netsync/delta/exclude.h"

struct plan_ctx {
	struct plan *pl;
	const struct plan_opts *o;
	const struct inventory *src, *peer;
	struct pathset touched;		/* folders whose names change */
	struct pathset prune;		/* folders with a DELETE */
	struct pathset keep;		/* "dir\0name" of excluded peer entries */
	const char *replaced;		/* a peer folder replaced by a non-folder */
	const char *protect;		/* an excluded peer folder */
	const char *deleted;		/* a peer-only folder */
	/* peer-only files that a new file may have been renamed from */
	const struct proto_entry **cand;
	size_t n_cand, cap_cand;
};

static bool plan_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return dir && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The folder holding PATH, into BUF ("" for the root's entries). */
static const char *plan_parent(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(buf, len, "%.*s", slash ? (int)(slash - path) : 0, path);
	return buf;
}

static int plan_touch_parent(struct plan_ctx *c, const char *path)
{
	char dir[PROTO_PATH_MAX + 1];

	plan_parent(path, dir, sizeof(dir));
	return pathset_add(&c->touched, dir, 0) < 0 ? -ENOMEM : 0;
}

static int plan_add(struct plan_ctx *c, enum plan_act act, const struct proto_entry *s,
		    const struct proto_entry *p, uint32_t why)
{
	struct plan *pl = c->pl;
	int rc = ARRAY_GROW(pl->it, pl->cap, pl->n + 1, 256);

	if (rc < 0)
		return rc;
	pl->it[pl->n++] = (struct plan_item){ .act = act, .s = s, .p = p, .why = why };
	switch (act) {
	case PLAN_FILE:
	case PLAN_REPLACE:
		pl->files_whole++;
		pl->bytes_whole += s->size;
		break;
	case PLAN_DELTA:
	case PLAN_RENAME:
		pl->files_delta++;
		pl->bytes_delta += s->size;
		break;
	case PLAN_DELETE:
		pl->deletes++;
		break;
	default:
		break;
	}
	if (act != PLAN_META && act != PLAN_DELTA)
		return plan_touch_parent(c, s ? s->path : p->path);
	return 0;
}

/* Attribute differences of S and P of one type. */
static uint32_t plan_attr_diff(const struct proto_entry *s, const struct proto_entry *p)
{
	uint32_t w = 0;

	if (!S_ISLNK(s->mode) && (s->mode & 07777) != (p->mode & 07777))
		w |= PLAN_W_PERMS;
	if (s->uid != p->uid)
		w |= PLAN_W_OWNER;
	if (s->gid != p->gid)
		w |= PLAN_W_GROUP;
	if (s->mtime_ns != p->mtime_ns)
		w |= PLAN_W_TIME;
	if (s->n_xattrs != p->n_xattrs || memcmp(s->xattrs, p->xattrs, 16) != 0)
		w |= PLAN_W_XATTR;
	return w;
}

static bool plan_strdiff(const char *a, const char *b)
{
	return (a || b) && (!a || !b || strcmp(a, b) != 0);
}

/* The way a source entry S is created on the peer (NEW or over another
 * type, WHY says which). */
static int plan_create(struct plan_ctx *c, const struct proto_entry *s,
		       const struct proto_entry *p, uint32_t why)
{
	if (S_ISDIR(s->mode))
		return plan_add(c, PLAN_MKDIR, s, p, why);
	if (S_ISREG(s->mode))
		return s->link ? plan_add(c, PLAN_LINK, s, p, why | PLAN_W_LINK) :
				 plan_add(c, PLAN_FILE, s, p, why);
	if (S_ISLNK(s->mode))
		return plan_add(c, PLAN_SYMLINK, s, p, why);
	return plan_add(c, PLAN_SPECIAL, s, p, why);
}

static int plan_both(struct plan_ctx *c, const struct proto_entry *s,
		     const struct proto_entry *p)
{
	uint32_t w;
	bool content;

	if ((s->mode & S_IFMT) != (p->mode & S_IFMT)) {
		if (S_ISDIR(p->mode))
			c->replaced = p->path;	/* its subtree goes with it */
		return plan_create(c, s, p, PLAN_W_TYPE);
	}
	w = plan_attr_diff(s, p);
	if (S_ISDIR(s->mode))
		return w ? plan_add(c, PLAN_META, s, p, w) : (c->pl->unchanged++, 0);
	if (S_ISLNK(s->mode)) {
		if (plan_strdiff(s->target, p->target))
			return plan_add(c, PLAN_SYMLINK, s, p, w | PLAN_W_TARGET);
		return w ? plan_add(c, PLAN_META, s, p, w) : (c->pl->unchanged++, 0);
	}
	if (!S_ISREG(s->mode)) {
		if (s->rdev != p->rdev)
			return plan_add(c, PLAN_SPECIAL, s, p, w | PLAN_W_TARGET);
		return w ? plan_add(c, PLAN_META, s, p, w) : (c->pl->unchanged++, 0);
	}
	if (plan_strdiff(s->link, p->link)) {
		if (s->link)
			return plan_add(c, PLAN_LINK, s, p, PLAN_W_LINK);
		return plan_add(c, PLAN_REPLACE, s, p, w | PLAN_W_LINK);
	}
	if (s->link)	/* a further name of the same group: its first carries all */
		return c->pl->unchanged++, 0;
	if (s->size != p->size)
		w |= PLAN_W_SIZE;
	content = (w & (PLAN_W_SIZE | PLAN_W_TIME)) != 0;
	if (c->o->checksum && (s->flags & p->flags & PROTO_ENTRY_F_HASHED) &&
	    memcmp(s->hash, p->hash, 16) != 0) {
		w |= PLAN_W_CONTENT;
		content = true;
	}
	if (!content)
		return w ? plan_add(c, PLAN_META, s, p, w) : (c->pl->unchanged++, 0);
	/* in place keeps a hard-link group; a big file is worth a delta */
	if (s->nlink > 1 || (s->size >= c->o->delta_min && p->size >= c->o->delta_min))
		return plan_add(c, PLAN_DELTA, s, p, w);
	return plan_add(c, PLAN_REPLACE, s, p, w);
}

/* A peer entry the source lacks. */
static int plan_peer_only(struct plan_ctx *c, const struct proto_entry *p)
{
	char dir[PROTO_PATH_MAX + 1];
	int rc;

	if (c->replaced && plan_under(p->path, c->replaced))
		return 0;	/* removed with the folder it was in */
	if (c->protect && plan_under(p->path, c->protect))
		return 0;
	if (c->o->exclude && exclude_match(c->o->exclude, p->path, S_ISDIR(p->mode))) {
		char key[2 * PROTO_PATH_MAX + 2];
		const char *slash = strrchr(p->path, '/');

		if (S_ISDIR(p->mode))
			c->protect = p->path;
		plan_parent(p->path, dir, sizeof(dir));
		snprintf(key, sizeof(key), "%s/%s", dir, slash ? slash + 1 : p->path);
		return pathset_add(&c->keep, key, 0) < 0 ? -ENOMEM : 0;
	}
	if (!c->o->delete)
		return 0;
	if (S_ISREG(p->mode) && p->nlink == 1 && p->size > 0 && !p->err) {
		rc = ARRAY_GROW(c->cand, c->cap_cand, c->n_cand + 1, 64);
		if (rc < 0)
			return rc;
		c->cand[c->n_cand++] = p;
	}
	if (c->deleted && plan_under(p->path, c->deleted))
		return 0;	/* goes with the folder above */
	if (S_ISDIR(p->mode))
		c->deleted = p->path;
	plan_parent(p->path, dir, sizeof(dir));
	if (pathset_add(&c->prune, dir, 0) < 0)
		return -ENOMEM;
	return plan_add(c, PLAN_DELETE, NULL, p, 0);
}

static int plan_cand_cmp(const void *a, const void *b)
{
	const struct proto_entry *x = *(const struct proto_entry *const *)a;
	const struct proto_entry *y = *(const struct proto_entry *const *)b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return inventory_path_cmp(x->path, y->path);
}

/* New files that match a peer-only file become RENAMEs (see the top);
 * the DELETE items of the files moved are dropped. */
static int plan_renames(struct plan_ctx *c)
{
	struct plan *pl = c->pl;
	bool *taken;
	size_t k = 0;

	if (!c->n_cand)
		return 0;
	taken = calloc(c->n_cand, sizeof(*taken));
	if (!taken)
		return -ENOMEM;
	qsort(c->cand, c->n_cand, sizeof(*c->cand), plan_cand_cmp);
	for (size_t i = 0; i < pl->n; i++) {
		struct plan_item *it = &pl->it[i];
		size_t lo = 0, hi = c->n_cand;

		if (it->act != PLAN_FILE || it->p || it->s->nlink != 1 || !it->s->size)
			continue;
		while (lo < hi) {	/* the first candidate not below (size, mtime) */
			size_t mid = (lo + hi) / 2;
			const struct proto_entry *m = c->cand[mid];

			if (m->size < it->s->size || (m->size == it->s->size &&
						      m->mtime_ns < it->s->mtime_ns))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < c->n_cand && c->cand[lo]->size == it->s->size &&
		       c->cand[lo]->mtime_ns == it->s->mtime_ns; lo++) {
			const struct proto_entry *q = c->cand[lo];

			if (taken[lo] || (c->o->checksum &&
					  (q->flags & it->s->flags & PROTO_ENTRY_F_HASHED) &&
					  memcmp(q->hash, it->s->hash, 16) != 0))
				continue;
			taken[lo] = true;
			it->act = PLAN_RENAME;
			it->from = q->path;
			pl->files_whole--;
			pl->bytes_whole -= it->s->size;
			pl->files_delta++;
			pl->bytes_delta += it->s->size;
			if (plan_touch_parent(c, q->path) < 0) {
				free(taken);
				return -ENOMEM;
			}
			break;
		}
	}
	/* the moved files are not deleted */
	for (size_t i = 0; i < pl->n; i++) {
		const struct plan_item *it = &pl->it[i];
		bool moved = false;

		if (it->act == PLAN_DELETE && S_ISREG(it->p->mode)) {
			for (size_t j = 0; j < c->n_cand && !moved; j++)
				moved = taken[j] && c->cand[j] == it->p;
		}
		if (moved)
			pl->deletes--;
		else
			pl->it[k++] = *it;
	}
	pl->n = k;
	free(taken);
	return 0;
}

/* The PRUNE of folder DIR: the names the source has in it, and the
 * excluded ones the peer has. */
static int plan_prune_list(struct plan_ctx *c, const char *dir)
{
	struct plan *pl = c->pl;
	struct plan_prune *pr;
	size_t dl = strlen(dir);
	long start = *dir ? inventory_find(c->src, dir) + 1 : 0;
	int rc = ARRAY_GROW(pl->pr, pl->cap_pr, pl->n_pr + 1, 16);

	if (rc < 0)
		return rc;
	pr = &pl->pr[pl->n_pr++];
	memset(pr, 0, sizeof(*pr));
	pr->dir = dir;
	if (*dir && start == 0)
		return 0;	/* not a source folder: nothing to keep */
	for (size_t i = (size_t)start; i < c->src->n; i++) {
		const char *p = c->src->e[i].path, *name;
		size_t n;

		if (*dir && !plan_under(p, dir))
			break;
		name = *dir ? p + dl + 1 : p;
		if (strchr(name, '/'))
			continue;	/* deeper */
		n = strlen(name) + 1;
		if (ARRAY_GROW(pr->names, pr->cap, pr->len + n, 4096) < 0)
			return -ENOMEM;
		memcpy(pr->names + pr->len, name, n);
		pr->len += n;
	}
	return 0;
}

struct plan_keep_arg {
	struct plan *pl;
	int rc;
};

/* Adds an excluded peer name ("dir/name") to its folder's PRUNE list. */
static void plan_keep_one(const struct pathset_entry *e, void *arg)
{
	struct plan_keep_arg *a = arg;
	const char *slash = strrchr(e->path, '/');
	size_t dl = (size_t)(slash - e->path), n = strlen(slash + 1) + 1;

	for (size_t i = 0; i < a->pl->n_pr; i++) {
		struct plan_prune *pr = &a->pl->pr[i];

		if (strlen(pr->dir) != dl || strncmp(pr->dir, e->path, dl) != 0)
			continue;
		if (ARRAY_GROW(pr->names, pr->cap, pr->len + n, 4096) < 0) {
			a->rc = -ENOMEM;
			return;
		}
		memcpy(pr->names + pr->len, slash + 1, n);
		pr->len += n;
	}
}

/* Every source folder whose names or attributes change gets its ATTR
 * last (what the items create or remove in it moves its mtime); the
 * root's goes after all of them. */
static int plan_dirs(struct plan_ctx *c)
{
	struct plan *pl = c->pl;
	int rc;

	for (size_t i = 0; i < pl->n; i++) {
		const struct plan_item *it = &pl->it[i];

		if (it->s && S_ISDIR(it->s->mode) && pathset_add(&c->touched, it->s->path, 0) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < c->src->n; i++) {
		const struct proto_entry *e = &c->src->e[i];

		if (!S_ISDIR(e->mode) || !pathset_find(&c->touched, e->path))
			continue;
		if (ARRAY_GROW(pl->dirs, pl->cap_dirs, pl->n_dirs + 1, 64) < 0)
			return -ENOMEM;
		pl->dirs[pl->n_dirs++] = e;
	}
	if (!c->src->has_root || !pathset_find(&c->touched, ""))
		return 0;
	rc = ARRAY_GROW(pl->dirs, pl->cap_dirs, pl->n_dirs + 1, 64);
	if (rc == 0)
		pl->dirs[pl->n_dirs++] = &c->src->root;
	return rc;
}

struct plan_prune_arg {
	struct plan_ctx *c;
	int rc;
};

static void plan_prune_one(const struct pathset_entry *e, void *arg)
{
	struct plan_prune_arg *a = arg;

	if (a->rc == 0)
		a->rc = plan_prune_list(a->c, e->path);
}

int plan_build(const struct inventory *src, const struct inventory *peer,
	       const struct plan_opts *o, struct plan *out)
{
	struct plan_ctx c = { .pl = out, .o = o, .src = src, .peer = peer };
	size_t i = 0, j = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	pathset_init(&c.touched);
	pathset_init(&c.prune);
	pathset_init(&c.keep);
	while (rc == 0 && (i < src->n || j < peer->n)) {
		int d = i == src->n ? 1 : j == peer->n ? -1 :
			inventory_path_cmp(src->e[i].path, peer->e[j].path);

		if (d == 0) {
			rc = plan_both(&c, &src->e[i++], &peer->e[j++]);
		} else if (d < 0) {
			rc = plan_create(&c, &src->e[i], NULL, PLAN_W_NEW);
			i++;
		} else {
			rc = plan_peer_only(&c, &peer->e[j++]);
		}
	}
	/* the roots' own attributes (both walked whole): one item when they
	 * differ, itemized "./" */
	if (rc == 0 && src->has_root && peer->has_root) {
		uint32_t w = plan_attr_diff(&src->root, &peer->root);

		if (w)
			rc = plan_add(&c, PLAN_META, &src->root, &peer->root, w);
	}
	if (rc == 0)
		rc = plan_renames(&c);
	if (rc == 0) {
		struct plan_prune_arg a = { .c = &c };

		pathset_each(&c.prune, plan_prune_one, &a);
		rc = a.rc;
	}
	if (rc == 0) {
		struct plan_keep_arg a = { .pl = out };

		pathset_each(&c.keep, plan_keep_one, &a);
		rc = a.rc;
	}
	if (rc == 0)
		rc = plan_dirs(&c);
	/* prune paths must outlive the sets: point them into the inventories */
	for (size_t k = 0; rc == 0 && k < out->n_pr; k++) {
		long at = *out->pr[k].dir ? inventory_find(src, out->pr[k].dir) : -2;

		/* NULL: not a source folder (cannot happen: its entries would
		 * go with it); skipped */
		out->pr[k].dir = at >= 0 ? src->e[at].path : at == -2 ? "" : NULL;
	}
	pathset_clear(&c.touched);
	pathset_clear(&c.prune);
	pathset_clear(&c.keep);
	free(c.cand);
	if (rc < 0)
		plan_free(out);
	return rc;
}

void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n_pr; i++)
		free(p->pr[i].names);
	free(p->pr);
	free(p->it);
	free(p->dirs);
	memset(p, 0, sizeof(*p));
}

static char plan_type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'L';
	case S_IFCHR:
	case S_IFBLK: return 'D';
	default: return 'S';
	}
}

void plan_itemize(const struct plan_item *it, char *buf, size_t len)
{
	static const struct { uint32_t bit; char c; } attrs[] = {
		{ PLAN_W_CONTENT, 'c' }, { PLAN_W_SIZE, 's' }, { PLAN_W_TIME, 't' },
		{ PLAN_W_PERMS, 'p' }, { PLAN_W_OWNER, 'o' }, { PLAN_W_GROUP, 'g' },
		{ PLAN_W_LINK, 'h' }, { PLAN_W_TARGET, 'l' }, { PLAN_W_XATTR, 'x' },
	};
	const struct proto_entry *e = it->s ? it->s : it->p;
	char flags[sizeof(attrs) / sizeof(attrs[0]) + 1];
	char y;

	if (it->act == PLAN_DELETE) {
		snprintf(buf, len, "*deleting   %s%s", e->path, S_ISDIR(e->mode) ? "/" : "");
		return;
	}
	switch (it->act) {
	case PLAN_FILE:
	case PLAN_REPLACE:
	case PLAN_DELTA: y = '>'; break;
	case PLAN_RENAME: y = 'R'; break;
	case PLAN_LINK: y = 'h'; break;
	case PLAN_META: y = '.'; break;
	default: y = 'c'; break;
	}
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		flags[i] = (it->why & (PLAN_W_NEW | PLAN_W_TYPE)) ? '+' :
			   (it->why & attrs[i].bit) ? attrs[i].c : '.';
	flags[sizeof(flags) - 1] = '\0';
	if (it->act == PLAN_RENAME)
		snprintf(buf, len, "%c%c%s %s (from %s)", y, plan_type_char(e->mode), flags,
			 e->path, it->from);
	else if (it->act == PLAN_LINK)
		snprintf(buf, len, "%c%c%s %s => %s", y, plan_type_char(e->mode), flags, e->path,
			 e->link);
	else
		snprintf(buf, len, "%c%c%s %s%s", y, plan_type_char(e->mode), flags,
			 *e->path ? e->path : ".", S_ISDIR(e->mode) ? "/" : "");
}
