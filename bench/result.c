/*
 * result — the list of measured outcomes shared by the benchmark commands
 * and the report writers. Main thread only.
 */
#include "bench/result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct result *result_set_add(struct result_set *s, enum result_kind kind,
			      const char *target, const char *name)
{
	struct result *r;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct result *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	r = &s->v[s->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	snprintf(r->target, sizeof(r->target), "%s", target);
	snprintf(r->name, sizeof(r->name), "%s", name);
	return r;
}

void result_set_free(struct result_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].runs);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

double result_mb_per_s(const struct result *r)
{
	return r->seconds > 0 ? (double)r->bytes / r->seconds / 1e6 : 0.0;
}

double result_files_per_s(const struct result *r)
{
	return r->seconds > 0 ? (double)r->files / r->seconds : 0.0;
}
