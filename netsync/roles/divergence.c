/*
 * divergence — the split-brain exchange and list (divergence.h). A
 * version is read with the verify engine's reader (inventory_add_path:
 * fresh stat, XXH3-128 of the content) so that "equal" means what
 * `twinfs verify` means. Loop thread of the daemon that owns it.
 */
#include "netsync/roles/divergence.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/array.h"
#include "common/json.h"
#include "common/log.h"
#include "netsync/delta/inventory.h"
#include "netsync/roles/tail.h"
#include "netsync/wire/proto_gen.h"

static struct div_entry *divergence_find(struct divergence *d, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->e[i].path, path) == 0)
			return &d->e[i];
	return NULL;
}

static struct div_entry *divergence_get(struct divergence *d, const char *path)
{
	struct div_entry *e = divergence_find(d, path);

	if (e)
		return e;
	if (ARRAY_GROW(d->e, d->cap, d->n + 1, 64) < 0)
		return NULL;
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	e->path = strdup(path);
	if (!e->path)
		return NULL;
	d->n++;
	return e;
}

/* Content hashed per exchange at most (it runs on a daemon's loop); a
 * file past it is listed with its size and mtime and no hash, and counts
 * as differing. */
#define DIVERGENCE_HASH_BUDGET (256ull << 20)

/* Our version of PATH. 0 or -errno. */
static int divergence_read(struct divergence *d, int store_fd, const char *path,
			   struct div_side *s)
{
	struct inventory inv = { 0 };
	int rc = inventory_add_path(&inv, store_fd, path, false);

	if (rc == -ELOOP)
		rc = 0;	/* through a symlink here: no such path in this store */
	if (rc == 1 && S_ISREG(inv.e[0].mode) && inv.e[0].size <= d->hash_budget) {
		d->hash_budget -= inv.e[0].size;
		inventory_free(&inv);
		rc = inventory_add_path(&inv, store_fd, path, true);
	}
	memset(s, 0, sizeof(*s));
	if (rc == 1) {
		s->mode = inv.e[0].mode;
		s->size = inv.e[0].size;
		s->mtime_ns = inv.e[0].mtime_ns;
		s->uid = inv.e[0].uid;
		s->gid = inv.e[0].gid;
		s->nlink = inv.e[0].nlink;
		memcpy(s->hash, inv.e[0].hash, 16);
		memcpy(s->xattrs, inv.e[0].xattrs, 16);
		if (S_ISLNK(s->mode) && inv.e[0].target) {
			/* a symlink's "content" is its target */
			size_t n = strlen(inv.e[0].target);

			memset(s->hash, 0, 16);
			memcpy(s->hash, inv.e[0].target, n < 16 ? n : 16);
		}
	}
	inventory_free(&inv);
	return rc < 0 ? rc : 0;
}

/* Sends the versions of the entries in [from, to) with FLAGS on the
 * last frame; side: ours. */
static int divergence_send(struct divergence *d, size_t *idx, size_t nidx, uint32_t flags,
			   struct evbuffer *out)
{
	struct proto_version *v = calloc(nidx ? nidx : 1, sizeof(*v));
	size_t start = 0, bytes = 0;
	int rc = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nidx; i++) {
		const struct div_entry *e = &d->e[idx[i]];

		v[i].path = e->path;
		/* a file is whole anyway: only a folder says so */
		v[i].mode = e->here.mode |
			    (e->whole && S_ISDIR(e->here.mode) ? PROTO_DIV_MODE_WHOLE : 0);
		v[i].size = e->here.size;
		v[i].mtime_ns = e->here.mtime_ns;
		v[i].uid = e->here.uid;
		v[i].gid = e->here.gid;
		v[i].nlink = e->here.nlink;
		memcpy(v[i].hash, e->here.hash, 16);
		memcpy(v[i].xattrs, e->here.xattrs, 16);
		if (bytes + proto_version_size(&v[i]) > PROTO_DIV_CHUNK) {
			rc = proto_encode_diverged(out, flags & (PROTO_DIV_F_ANSWER |
								 PROTO_DIV_F_REFRESH),
						   v + start, i - start);
			if (rc < 0)
				goto out;
			start = i;
			bytes = 0;
		}
		bytes += proto_version_size(&v[i]);
	}
	rc = proto_encode_diverged(out, flags, v + start, nidx - start);
out:
	free(v);
	return rc;
}

int divergence_begin(struct divergence *d, int store_fd, const char *paths, size_t len,
		     struct evbuffer *out)
{
	size_t *idx;
	int rc = 0;

	divergence_free(d);
	d->hash_budget = DIVERGENCE_HASH_BUDGET;
	for (size_t off = 0; off < len; off += strlen(paths + off) + 1) {
		bool moved = tail_moved(paths + off);
		struct div_entry *e = divergence_get(d, paths + off + (moved ? 1 : 0));

		if (!e)
			return -ENOMEM;
		e->changed_here = true;
		e->whole |= moved;
	}
	idx = calloc(d->n ? d->n : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		idx[i] = i;
		rc = divergence_read(d, store_fd, d->e[i].path, &d->e[i].here);
		/* only a folder is whole, and only what the peer is told of
		 * (divergence_send): both lists must keep the same paths */
		d->e[i].whole &= S_ISDIR(d->e[i].here.mode);
	}
	if (rc == 0)
		rc = divergence_send(d, idx, d->n, PROTO_DIV_F_LAST, out);
	free(idx);
	return rc;
}

/* A regular file's version read without its content (past the budget)
 * has an all-zero hash: XXH3-128 of any content, even none, is not. */
static bool divergence_hashed(const struct div_side *s)
{
	static const uint8_t none[16];

	return !S_ISREG(s->mode) || memcmp(s->hash, none, 16) != 0;
}

/* Equal versions: every field replicas agree on, and one name each. A
 * rename over one name of a hard-linked file can leave a file equal in
 * all else while the groups differ, and no other list names the other
 * names; one path cannot tell the groups apart (a search of the store
 * per file could), so a file with more names on either node differs. */
static bool divergence_same(const struct div_entry *e)
{
	const struct div_side *a = &e->here, *b = &e->peer;

	if (!a->mode && !b->mode)
		return true;
	return a->mode == b->mode && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->uid == b->uid && a->gid == b->gid && a->nlink == 1 && b->nlink == 1 &&
	       memcmp(a->xattrs, b->xattrs, 16) == 0 &&
	       divergence_hashed(a) && divergence_hashed(b) &&
	       memcmp(a->hash, b->hash, 16) == 0;
}

static int divergence_entry_cmp(const void *x, const void *y)
{
	return inventory_path_cmp(((const struct div_entry *)x)->path,
				  ((const struct div_entry *)y)->path);
}

/* Both answers are in: keep what differs, in tree order. */
static void divergence_finish(struct divergence *d)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n; i++) {
		/* a moved folder's attributes may be the other's: what it
		 * holds is not (whole) */
		if (!d->e[i].whole && divergence_same(&d->e[i])) {
			free(d->e[i].path);
			continue;
		}
		d->e[k++] = d->e[i];
	}
	d->n = k;
	qsort(d->e, d->n, sizeof(d->e[0]), divergence_entry_cmp);
	d->complete = true;
}

/* The peer's list is complete: our versions of the paths only it listed. */
static int divergence_answer(struct divergence *d, int store_fd, struct evbuffer *out)
{
	size_t *idx = calloc(d->n ? d->n : 1, sizeof(*idx)), n = 0;
	int rc = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		if (d->e[i].changed_here)
			continue;
		rc = divergence_read(d, store_fd, d->e[i].path, &d->e[i].here);
		idx[n++] = i;
	}
	if (rc == 0)
		rc = divergence_send(d, idx, n, PROTO_DIV_F_ANSWER | PROTO_DIV_F_LAST, out);
	free(idx);
	return rc;
}

/* The peer's version as a DIVERGED frame carries it (and whether the
 * peer holds the entry whole). */
static void divergence_take(struct div_entry *e, const struct proto_version *v)
{
	struct div_side *s = &e->peer;

	e->whole |= (v->mode & PROTO_DIV_MODE_WHOLE) != 0;
	s->mode = v->mode & ~PROTO_DIV_MODE_WHOLE;
	s->size = v->size;
	s->mtime_ns = v->mtime_ns;
	s->uid = v->uid;
	s->gid = v->gid;
	s->nlink = v->nlink;
	memcpy(s->hash, v->hash, 16);
	memcpy(s->xattrs, v->xattrs, 16);
}

/* HELD (after the exchange): the primary adds the secondary's paths with
 * both versions and answers with its own; the secondary takes the answer. */
static int divergence_on_held(struct divergence *d, int store_fd, struct proto_diverged *m,
			      struct evbuffer *out)
{
	struct proto_version v;
	size_t *idx, n = 0;
	int rc;

	idx = calloc(m->count ? m->count : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	while ((rc = proto_diverged_next(m, &v)) == 1 && n < m->count) {
		struct div_entry *e = divergence_get(d, v.path);

		if (!e) {
			rc = -ENOMEM;
			break;
		}
		e->changed_here = e->changed_peer = e->have_peer = true;
		divergence_take(e, &v);
		if (!(m->flags & PROTO_DIV_F_ANSWER))
			rc = divergence_read(d, store_fd, e->path, &e->here);
		idx[n++] = (size_t)(e - d->e);
		if (rc < 0)
			break;
	}
	if (rc == 0 && !(m->flags & PROTO_DIV_F_ANSWER)) {
		d->held++;
		rc = divergence_send(d, idx, n, PROTO_DIV_F_HELD | PROTO_DIV_F_ANSWER |
				     PROTO_DIV_F_LAST, out);
	}
	free(idx);
	qsort(d->e, d->n, sizeof(d->e[0]), divergence_entry_cmp);
	return rc < 0 ? rc : 2;
}

int divergence_send_refresh(struct divergence *d, struct evbuffer *out)
{
	size_t *idx = calloc(d->n ? d->n : 1, sizeof(*idx));
	int rc;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		idx[i] = i;
	rc = divergence_send(d, idx, d->n, PROTO_DIV_F_REFRESH | PROTO_DIV_F_LAST, out);
	free(idx);
	return rc;
}

/* REFRESH (secondary): the primary's versions now; nothing else changes. */
static int divergence_on_refresh(struct divergence *d, struct proto_diverged *m)
{
	struct proto_version v;
	int rc;

	while ((rc = proto_diverged_next(m, &v)) == 1) {
		struct div_entry *e = divergence_find(d, v.path);

		if (e)
			divergence_take(e, &v);
	}
	return rc < 0 ? rc : 0;
}

int divergence_on_frame(struct divergence *d, int store_fd, const struct proto_frame *f,
			struct evbuffer *out)
{
	struct proto_diverged m;
	struct proto_version v;
	int rc;

	rc = proto_decode_diverged(f, &m);
	if (rc < 0)
		return rc;
	if (m.flags & PROTO_DIV_F_REFRESH)
		return d->complete ? divergence_on_refresh(d, &m) : -EPROTO;
	if (m.flags & PROTO_DIV_F_HELD)
		return d->complete ? divergence_on_held(d, store_fd, &m, out) : -EPROTO;
	if (d->complete)
		return -EPROTO;
	while ((rc = proto_diverged_next(&m, &v)) == 1) {
		struct div_entry *e = divergence_get(d, v.path);

		if (!e)
			return -ENOMEM;
		if (!(m.flags & PROTO_DIV_F_ANSWER))
			e->changed_peer = true;
		e->have_peer = true;
		divergence_take(e, &v);
	}
	if (rc < 0)
		return rc;
	if (!(m.flags & PROTO_DIV_F_LAST))
		return 0;
	if (!(m.flags & PROTO_DIV_F_ANSWER)) {
		d->peer_listed = true;
		rc = divergence_answer(d, store_fd, out);
		return rc < 0 ? rc : 0;
	}
	divergence_finish(d);
	return 1;
}

size_t divergence_keep_secondary(struct divergence *d, bool secondary)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n; i++) {
		if (!(secondary ? d->e[i].changed_here : d->e[i].changed_peer)) {
			free(d->e[i].path);
			continue;
		}
		d->e[k++] = d->e[i];
	}
	d->n = k;
	return k;
}

const struct div_entry *divergence_lookup(const struct divergence *d, const char *path)
{
	return divergence_find((struct divergence *)d, path);
}

int divergence_hold(struct divergence *d, int store_fd, const char *path, bool whole,
		    struct evbuffer *out)
{
	struct div_entry *e = divergence_find(d, path);
	size_t idx;
	int rc = 0;

	if (e && e->changed_peer && (!whole || e->whole))
		return 0;
	if (!e) {
		e = divergence_get(d, path);
		if (!e)
			return -ENOMEM;
		e->changed_here = true;	/* it holds what its own change left */
		rc = divergence_read(d, store_fd, path, &e->here);
	} else if (whole) {
		rc = divergence_read(d, store_fd, path, &e->here);	/* as it is now */
	}
	e->changed_peer = true;
	/* as divergence_send tells the primary: both must agree */
	e->whole |= whole && S_ISDIR(e->here.mode);
	idx = (size_t)(e - d->e);
	d->held++;
	if (rc == 0)
		rc = divergence_send(d, &idx, 1, PROTO_DIV_F_HELD | PROTO_DIV_F_LAST, out);
	qsort(d->e, d->n, sizeof(d->e[0]), divergence_entry_cmp);
	return rc < 0 ? rc : 1;
}

int divergence_refresh(struct divergence *d, int store_fd)
{
	int rc = 0;

	d->hash_budget = DIVERGENCE_HASH_BUDGET;
	for (size_t i = 0; i < d->n && rc == 0; i++)
		rc = divergence_read(d, store_fd, d->e[i].path, &d->e[i].here);
	return rc;
}

void divergence_free(struct divergence *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].path);
	free(d->e);
	d->e = NULL;
	d->n = d->cap = 0;
	d->held = 0;
	d->peer_listed = d->complete = false;
}

const char *divergence_changed(const struct div_entry *e)
{
	return e->changed_here && e->changed_peer ? "both" : e->changed_here ? "here" : "peer";
}

static const char *divergence_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case 0:
		return "absent";
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	default:
		return "special";
	}
}

/* "SIDE_WHAT": the 16 bytes of D in hex. */
static void divergence_hex_json(struct json *w, const char *side, const char *what,
				const uint8_t d[16])
{
	char key[32], hex[33];

	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	snprintf(key, sizeof(key), "%s_%s", side, what);
	json_key(w, key);
	json_string(w, hex);
}

static void divergence_side_json(struct json *w, const char *side, const struct div_side *s)
{
	char key[32], t[48];
	struct tm tm;
	time_t sec = (time_t)(s->mtime_ns / 1000000000);

	snprintf(key, sizeof(key), "%s_type", side);
	json_key(w, key);
	json_string(w, divergence_type(s->mode));
	if (!s->mode)
		return;
	snprintf(key, sizeof(key), "%s_size", side);
	json_key(w, key);
	json_uint(w, s->size);
	gmtime_r(&sec, &tm);
	snprintf(t + strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm), 16, ".%09lldZ",
		 (long long)(s->mtime_ns % 1000000000));
	snprintf(key, sizeof(key), "%s_mtime", side);
	json_key(w, key);
	json_string(w, t);
	divergence_hex_json(w, side, "hash", s->hash);
	snprintf(t, sizeof(t), "%u:%u", s->uid, s->gid);
	snprintf(key, sizeof(key), "%s_owner", side);
	json_key(w, key);
	json_string(w, t);
	divergence_hex_json(w, side, "xattrs", s->xattrs);
	snprintf(key, sizeof(key), "%s_nlink", side);
	json_key(w, key);
	json_uint(w, s->nlink);
}

void divergence_json(const struct divergence *d, struct json *w)
{
	json_key(w, "diverged_paths");
	json_uint(w, d->complete ? d->n : 0);
	json_key(w, "diverged");
	json_array_begin(w);
	for (size_t i = 0; d->complete && i < d->n; i++) {
		json_object_begin(w);
		json_key(w, "path");
		json_string(w, d->e[i].path);
		json_key(w, "changed");
		json_string(w, divergence_changed(&d->e[i]));
		json_key(w, "whole");
		json_bool(w, d->e[i].whole);
		divergence_side_json(w, "local", &d->e[i].here);
		divergence_side_json(w, "peer", &d->e[i].peer);
		json_object_end(w);
	}
	json_array_end(w);
}
