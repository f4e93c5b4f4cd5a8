/*
 * resolution — the per-path plan of `twinfs resolve` (resolution.h). Both
 * nodes compute it from the same divergence list and the same keep, each
 * from its own side, so they agree on who sends and who keeps what aside
 * without a second exchange. Pure; any thread.
 */
#include "netsync/roles/resolution.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void resolution_stamp(char *buf, size_t len)
{
	struct tm tm;
	time_t t = time(NULL);

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
}

int resolution_keep(const char *word, bool primary, enum proto_keep *keep)
{
	if (strcmp(word, "both") == 0)
		*keep = PROTO_KEEP_BOTH;
	else if (strcmp(word, "local") == 0)
		*keep = primary ? PROTO_KEEP_PRIMARY : PROTO_KEEP_SECONDARY;
	else if (strcmp(word, "peer") == 0)
		*keep = primary ? PROTO_KEEP_SECONDARY : PROTO_KEEP_PRIMARY;
	else
		return -EINVAL;
	return 0;
}

/* NAME.conflict-<node>-<stamp> beside PATH. */
static char *resolution_conflict_name(const char *path, const char *node, const char *stamp)
{
	size_t n = strlen(path) + strlen(node) + strlen(stamp) + 16;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s.conflict-%s-%s", path, node, stamp);
	return s;
}

int resolution_plan(const struct divergence *d, bool primary, enum proto_keep keep,
		    const char *s_name, const char *stamp, struct resolution *r)
{
	memset(r, 0, sizeof(*r));
	r->keep = keep;
	snprintf(r->folder, sizeof(r->folder), "%s-resolve", stamp);
	r->it = calloc(d->n ? d->n : 1, sizeof(*r->it));
	if (!r->it)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const struct div_entry *e = &d->e[i];
		const struct div_side *ps = primary ? &e->here : &e->peer;
		const struct div_side *ss = primary ? &e->peer : &e->here;
		bool p_changed = primary ? e->changed_here : e->changed_peer;
		bool s_changed = primary ? e->changed_peer : e->changed_here;
		struct resolution_item *it = &r->it[r->n++];

		it->e = e;
		switch (keep) {
		case PROTO_KEEP_PRIMARY:
			it->s_saves = ss->mode != 0;
			break;
		case PROTO_KEEP_SECONDARY:
			it->s_sends = true;
			it->p_saves = ps->mode != 0;
			it->dest = strdup(e->path);
			break;
		case PROTO_KEEP_BOTH:
			if (p_changed && s_changed) {
				/* the primary's stays; the secondary's beside it
				 * (a folder with what it holds, unless both are
				 * folders: the entries in it are listed alone;
				 * a folder that moved is another folder: whole) */
				if (ss->mode && (!S_ISDIR(ss->mode) || !S_ISDIR(ps->mode) ||
						 e->whole)) {
					it->s_sends = true;
					it->dest = resolution_conflict_name(e->path, s_name, stamp);
				}
			} else if (s_changed) {
				/* the primary's version is kept too: it may have
				 * changed since the lists were exchanged */
				it->s_sends = true;
				it->p_saves = ps->mode != 0;
				it->dest = strdup(e->path);
			}
			break;
		}
		if ((it->s_sends && !it->dest))
			return -ENOMEM;
	}
	return 0;
}

void resolution_free(struct resolution *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->it[i].dest);
	free(r->it);
	memset(r, 0, sizeof(*r));
}

void resolution_describe(const struct resolution *r, bool primary, size_t i, char *buf,
			 size_t len)
{
	const struct resolution_item *it = &r->it[i];
	const char *me = primary ? "primary" : "secondary";
	const char *path = it->e->path;

	if (it->dest && strcmp(it->dest, path) != 0)
		snprintf(buf, len, "/%s: the primary's version stays; the secondary's is kept "
			 "beside it as /%s (on both nodes)", path, it->dest);
	else if (it->dest)
		snprintf(buf, len, "/%s: the secondary's version wins%s", path,
			 it->p_saves ? (primary ? "; this node's goes to conflicts/" :
					"; the primary's goes to its conflicts/") : "");
	else
		snprintf(buf, len, "/%s: the primary's version wins%s", path,
			 it->s_saves ? (primary ? "; the secondary's goes to its conflicts/" :
					"; this node's goes to conflicts/") : "");
	if (it->p_saves || it->s_saves) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "%s", r->folder);
	}
	(void)me;
}
