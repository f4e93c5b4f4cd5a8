/*
 * pathset — chained hash set of relative paths (common/pathset.h), hashed
 * with XXH3. Owns its entries. Called with the owner's lock held (the
 * journal mutex) or single-threaded (offline list_pending); no I/O.
 */
#include "common/pathset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void pathset_init(struct pathset *s)
{
	memset(s, 0, sizeof(*s));
}

void pathset_clear(struct pathset *s)
{
	for (size_t i = 0; i < s->nb; i++) {
		struct pathset_entry *e = s->b[i], *n;

		for (; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(s->b);
	pathset_init(s);
}

static struct pathset_entry *pathset_lookup(const struct pathset *s, const char *path,
					     size_t len, uint64_t h)
{
	if (s->nb == 0)
		return NULL;
	for (struct pathset_entry *e = s->b[h & (s->nb - 1)]; e; e = e->next)
		if (e->hash == h && strncmp(e->path, path, len) == 0 && e->path[len] == '\0')
			return e;
	return NULL;
}

struct pathset_entry *pathset_find(const struct pathset *s, const char *path)
{
	size_t len = strlen(path);

	return pathset_lookup(s, path, len, XXH3_64bits(path, len));
}

static int pathset_grow(struct pathset *s)
{
	size_t nnb = s->nb ? s->nb * 2 : 64;
	struct pathset_entry **nb = calloc(nnb, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i < s->nb; i++) {
		struct pathset_entry *e = s->b[i], *n;

		for (; e; e = n) {
			n = e->next;
			e->next = nb[e->hash & (nnb - 1)];
			nb[e->hash & (nnb - 1)] = e;
		}
	}
	free(s->b);
	s->b = nb;
	s->nb = nnb;
	return 0;
}

int pathset_add(struct pathset *s, const char *path, uint64_t value)
{
	size_t len = strlen(path);
	uint64_t h = XXH3_64bits(path, len);
	struct pathset_entry *e;

	if (pathset_lookup(s, path, len, h))
		return 0;
	if (s->n >= s->nb && pathset_grow(s) < 0)
		return -ENOMEM;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->hash = h;
	e->value = value;
	memcpy(e->path, path, len + 1);
	e->next = s->b[h & (s->nb - 1)];
	s->b[h & (s->nb - 1)] = e;
	s->n++;
	return 1;
}

bool pathset_remove(struct pathset *s, const char *path)
{
	size_t len = strlen(path);
	uint64_t h = XXH3_64bits(path, len);
	struct pathset_entry **pp;

	if (s->nb == 0)
		return false;
	for (pp = &s->b[h & (s->nb - 1)]; *pp; pp = &(*pp)->next) {
		struct pathset_entry *e = *pp;

		if (e->hash == h && strcmp(e->path, path) == 0) {
			*pp = e->next;
			free(e);
			s->n--;
			return true;
		}
	}
	return false;
}

struct pathset_entry *pathset_covering(const struct pathset *s, const char *path,
				       uint64_t min)
{
	size_t len = strlen(path);

	if (s->n == 0)
		return NULL;
	/* The path itself, then each ancestor: "a/b/c", "a/b", "a", "". */
	for (;;) {
		struct pathset_entry *e = pathset_lookup(s, path, len, XXH3_64bits(path, len));

		if (e && e->value >= min)
			return e;
		if (len == 0)
			return NULL;
		while (len > 0 && path[len - 1] != '/')
			len--;
		if (len > 0)
			len--;	/* drop the '/' */
	}
}

bool pathset_covers(const struct pathset *s, const char *path)
{
	return pathset_covering(s, path, 0) != NULL;
}

void pathset_each(const struct pathset *s,
		  void (*fn)(const struct pathset_entry *e, void *arg), void *arg)
{
	for (size_t i = 0; i < s->nb; i++)
		for (struct pathset_entry *e = s->b[i]; e; e = e->next)
			fn(e, arg);
}
