/*
 * hold — the held paths of a split brain's stream and the rule that
 * holds a frame back (hold.h). Loop thread of serve.
 */
#include "netsync/secondary/hold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void hold_init(struct hold *h)
{
	pathset_init(&h->held);
	pathset_init(&h->anc);
}

void hold_clear(struct hold *h)
{
	pathset_clear(&h->held);
	pathset_clear(&h->anc);
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
