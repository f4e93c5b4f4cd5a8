/*
 * repairs — the table of paths the peer failed to apply (repairs.h).
 * Linear: it holds the few paths that failed, never the tree. Loop thread
 * of the sender only.
 */
#include "netsync/primary/repairs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netsync/wire/proto.h"

#define REPAIRS_BACKOFF_MAX_MS 30000u

int repairs_parse(const char *text, char *what, size_t what_len, char *path,
		  size_t path_len)
{
	const char *q1 = strstr(text, " '"), *q2;

	if (!q1)
		return -EINVAL;
	/* the last "' on " or "': ": a path may hold quotes itself */
	q2 = NULL;
	for (const char *p = q1 + 2; (p = strchr(p, '\'')) != NULL; p++)
		if (strncmp(p, "' on ", 5) == 0 || strncmp(p, "': ", 3) == 0)
			q2 = p;
	if (!q2 || (size_t)(q1 - text) >= what_len || (size_t)(q2 - q1 - 2) >= path_len)
		return -EINVAL;
	snprintf(what, what_len, "%.*s", (int)(q1 - text), text);
	snprintf(path, path_len, "%.*s", (int)(q2 - q1 - 2), q1 + 2);
	return 0;
}

int repairs_hint(const char *text, const char *path, char *dir, size_t dir_len)
{
	const char *mark = NULL, *start, *end;
	size_t n;

	for (const char *p = text; (p = strstr(p, PROTO_NO_FOLDER "'")) != NULL; p++)
		mark = p;
	if (!mark)
		return -ENOENT;
	start = mark + strlen(PROTO_NO_FOLDER "'");
	n = strlen(start);
	if (n < 2 || strcmp(start + n - 2, "']") != 0)
		return -ENOENT;
	end = start + n - 2;
	n = (size_t)(end - start);
	if (n == 0 || n >= dir_len)
		return -ENOENT;
	memcpy(dir, start, n);
	dir[n] = '\0';
	if (strcmp(dir, path) == 0 || !repairs_under(path, dir))
		return -ENOENT;
	return 0;
}

bool repairs_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

struct repair *repairs_note(struct repairs *rs, const char *path, const char *what,
			    const char *reason, uint64_t until, bool failed)
{
	struct repair *r = NULL;

	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->r[i].path, path) == 0)
			r = &rs->r[i];
	if (!r) {
		if (rs->n == rs->cap) {
			size_t cap = rs->cap ? rs->cap * 2 : 8;
			struct repair *nr = realloc(rs->r, cap * sizeof(*nr));

			if (!nr)
				return NULL;
			rs->r = nr;
			rs->cap = cap;
		}
		r = &rs->r[rs->n];
		memset(r, 0, sizeof(*r));
		r->path = strdup(path);
		if (!r->path)
			return NULL;
		rs->n++;
	}
	if (failed) {
		r->failures++;
		r->sent_end = 0;	/* what carried it did not work */
	}
	if (what)
		snprintf(r->what, sizeof(r->what), "%s", what);
	if (reason)
		snprintf(r->reason, sizeof(r->reason), "%s", reason);
	if (until > r->until)
		r->until = until;
	return r;
}

/* How many levels of folders SCOPE has: fewer is higher in the tree. */
static size_t repairs_depth(const char *scope)
{
	size_t n = *scope ? 1 : 0;

	for (; *scope; scope++)
		n += *scope == '/';
	return n;
}

/*
 * Several entries can cover one path (a folder failed, then a path below
 * it failed too, or the other way round). The one whose scope reaches
 * highest wins: its replacement sends the whole current state of that
 * scope, which carries every other entry below it (repairs_carry). Were
 * the first match taken, an entry that keeps failing would never widen
 * the replacement, and the path would stay stuck.
 */
struct repair *repairs_covering(struct repairs *rs, const char *path, uint64_t seq)
{
	struct repair *best = NULL;
	size_t best_depth = 0;
	char scope[4096];

	if (!path)
		return NULL;
	for (size_t i = 0; i < rs->n; i++) {
		size_t d;

		if (seq > rs->r[i].until || !repairs_under(path, rs->r[i].path))
			continue;
		repairs_scope(&rs->r[i], rs->r[i].path, scope, sizeof(scope));
		d = repairs_depth(scope);
		if (!best || d < best_depth) {
			best = &rs->r[i];
			best_depth = d;
		}
	}
	return best;
}

struct repair *repairs_inside(struct repairs *rs, const char *path, uint64_t seq)
{
	if (!path)
		return NULL;
	for (size_t i = 0; i < rs->n; i++)
		if (seq <= rs->r[i].until && strcmp(rs->r[i].path, path) != 0 &&
		    repairs_under(rs->r[i].path, path))
			return &rs->r[i];
	return NULL;
}

void repairs_carry(struct repairs *rs, const char *scope, uint64_t end)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct repair *r = &rs->r[i];

		if (repairs_under(r->path, scope) && r->sent_end < end)
			r->sent_end = end;
	}
}

size_t repairs_acked(struct repairs *rs, uint64_t seq,
		     void (*done)(const struct repair *r, void *arg), void *arg)
{
	size_t k = 0, gone = 0;

	for (size_t i = 0; i < rs->n; i++) {
		struct repair *r = &rs->r[i];

		if (r->sent_end && r->sent_end <= seq) {
			if (done)
				done(r, arg);
			free(r->path);
			gone++;
			continue;
		}
		rs->r[k++] = *r;
	}
	rs->n = k;
	return gone;
}

size_t repairs_stuck(const struct repairs *rs, const struct repair **first)
{
	size_t n = 0;

	if (first)
		*first = NULL;
	for (size_t i = 0; i < rs->n; i++) {
		if (rs->r[i].failures < REPAIRS_STUCK_AFTER)
			continue;
		if (first && !*first)
			*first = &rs->r[i];
		n++;
	}
	return n;
}

uint32_t repairs_backoff_ms(const struct repairs *rs)
{
	unsigned worst = 0;
	uint32_t ms;

	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].failures > worst)
			worst = rs->r[i].failures;
	if (worst < REPAIRS_STUCK_AFTER)
		return 0;
	ms = 1000;
	for (unsigned k = REPAIRS_STUCK_AFTER; k < worst && ms < REPAIRS_BACKOFF_MAX_MS; k++)
		ms *= 2;
	return ms < REPAIRS_BACKOFF_MAX_MS ? ms : REPAIRS_BACKOFF_MAX_MS;
}

void repairs_scope(const struct repair *r, const char *path, char *out, size_t len)
{
	unsigned up = 0;

	snprintf(out, len, "%s", path);
	/* ENOENT, ENOTDIR, ELOOP (the peer resolves paths without following
	 * symlinks): something above the path is missing or of another type
	 * on the peer */
	if (r->failures >= 2 && (strstr(r->reason, "No such file or directory") ||
				 strstr(r->reason, "Not a directory") ||
				 strstr(r->reason, "Too many levels of symbolic links")))
		up = r->failures - 1;
	for (; up > 0 && *out; up--) {
		char *slash = strrchr(out, '/');

		if (slash)
			*slash = '\0';
		else
			out[0] = '\0';
	}
}

void repairs_free(struct repairs *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->r[i].path);
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}
