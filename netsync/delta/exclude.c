/*
 * exclude — matching of --exclude patterns (exclude.h) with fnmatch(3).
 * Pure functions on caller data.
 */
#include "netsync/delta/exclude.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

int exclude_add(struct exclude *x, const char *pattern)
{
	struct exclude_pat p = { 0 };
	size_t len = strlen(pattern);
	const char *s = pattern;

	if (*s == '/') {
		p.anchored = true;
		s++;
		len--;
	}
	if (len && s[len - 1] == '/') {
		p.dir_only = true;
		len--;
	}
	if (!len)
		return -EINVAL;
	p.pat = strndup(s, len);
	if (!p.pat)
		return -ENOMEM;
	if (strchr(p.pat, '/'))
		p.anchored = true;
	if (ARRAY_GROW(x->p, x->cap, x->n + 1, 8) < 0) {
		free(p.pat);
		return -ENOMEM;
	}
	x->p[x->n++] = p;
	return 0;
}

/* fnmatch where '**' crosses '/' and '*' does not. */
static bool exclude_fnmatch(const char *pat, const char *s)
{
	return fnmatch(pat, s, strstr(pat, "**") ? 0 : FNM_PATHNAME) == 0;
}

bool exclude_match(const struct exclude *x, const char *path, bool is_dir)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < x->n; i++) {
		const struct exclude_pat *p = &x->p[i];

		if (p->dir_only && !is_dir)
			continue;
		if (exclude_fnmatch(p->pat, p->anchored ? path : base))
			return true;
	}
	return false;
}

bool exclude_cb(const char *path, bool is_dir, void *arg)
{
	return exclude_match(arg, path, is_dir);
}

void exclude_free(struct exclude *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->p[i].pat);
	free(x->p);
	memset(x, 0, sizeof(*x));
}
