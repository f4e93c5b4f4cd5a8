/*
 * rolestatus — conflict copies and split-brain paths in a status reply,
 * and their text form (rolestatus.h). The producer reads only the state
 * directory; the renderer only the reply. Any one thread per call.
 */
#include "netsync/control/rolestatus.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/size.h"
#include "netsync/control/ctljson.h"
#include "netsync/roles/conflicts.h"

struct conflicts_json {
	struct json *w;
	uint64_t n;
};

static void rolestatus_one(const char *id, const char *path, const struct stat *st, void *arg)
{
	struct conflicts_json *c = arg;

	if (c->n++ >= ROLESTATUS_LIST_MAX)
		return;
	json_object_begin(c->w);
	json_key(c->w, "folder");
	json_string(c->w, id);
	json_key(c->w, "path");
	json_string(c->w, path);
	json_key(c->w, "size");
	json_uint(c->w, (uint64_t)st->st_size);
	json_key(c->w, "mtime_ns");
	json_int(c->w, (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec);
	json_object_end(c->w);
}

void rolestatus_conflicts_json(struct ctljson *j, const char *state)
{
	struct conflicts_json c = { .w = ctljson_json(j) };

	json_key(c.w, "conflicts");
	json_array_begin(c.w);
	conflicts_list(state, rolestatus_one, &c);
	json_array_end(c.w);
	ctljson_u64(j, "conflict_copies", c.n);
}

size_t rolestatus_each(const char *json, const char *key,
		       void (*fn)(const char *obj, void *arg), void *arg)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "\"%s\":[", key);
	p = strstr(json, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	while (*p == '{') {
		const char *s = p;
		bool in_str = false;
		int depth = 0;
		char *obj;

		for (; *p; p++) {
			if (in_str) {
				if (*p == '\\' && p[1])
					p++;
				else if (*p == '"')
					in_str = false;
			} else if (*p == '"') {
				in_str = true;
			} else if (*p == '{') {
				depth++;
			} else if (*p == '}' && --depth == 0) {
				p++;
				break;
			}
		}
		obj = strndup(s, (size_t)(p - s));
		if (!obj)
			break;
		fn(obj, arg);
		free(obj);
		n++;
		if (*p == ',')
			p++;
	}
	return n;
}

static void rolestatus_print_copy(const char *obj, void *arg)
{
	char folder[128], path[4200], sz[32];
	uint64_t size = 0;

	(void)arg;
	ctljson_get_str(obj, "folder", folder, sizeof(folder));
	ctljson_get_str(obj, "path", path, sizeof(path));
	ctljson_get_u64(obj, "size", &size);
	printf("  conflicts/%s/%s (%s)\n", folder, path, size_format_iec(size, sz, sizeof(sz)));
}

/* One side of a diverged path: "file 12 B 2026-...Z xxh3:abcd" or "absent". */
static void rolestatus_side(const char *obj, const char *side, char *buf, size_t len)
{
	char key[32], type[16] = "", hash[40] = "", mtime[40] = "", sz[32], owner[24] = "";
	char xattrs[40] = "";
	uint64_t size = 0;

	snprintf(key, sizeof(key), "%s_type", side);
	ctljson_get_str(obj, key, type, sizeof(type));
	if (!type[0] || strcmp(type, "absent") == 0) {
		snprintf(buf, len, "absent");
		return;
	}
	snprintf(key, sizeof(key), "%s_size", side);
	ctljson_get_u64(obj, key, &size);
	snprintf(key, sizeof(key), "%s_mtime", side);
	ctljson_get_str(obj, key, mtime, sizeof(mtime));
	snprintf(key, sizeof(key), "%s_hash", side);
	ctljson_get_str(obj, key, hash, sizeof(hash));
	snprintf(key, sizeof(key), "%s_owner", side);
	ctljson_get_str(obj, key, owner, sizeof(owner));
	snprintf(key, sizeof(key), "%s_xattrs", side);
	ctljson_get_str(obj, key, xattrs, sizeof(xattrs));
	snprintf(buf, len, "%s %s %s %.16s owner %s xattrs %.8s", type,
		 size_format_iec(size, sz, sizeof(sz)), mtime, hash, owner, xattrs);
}

static void rolestatus_print_diverged(const char *obj, void *arg)
{
	char path[4200], changed[16], l[160], p[160];
	bool whole = false;

	(void)arg;
	ctljson_get_str(obj, "path", path, sizeof(path));
	ctljson_get_str(obj, "changed", changed, sizeof(changed));
	ctljson_get_bool(obj, "whole", &whole);
	rolestatus_side(obj, "local", l, sizeof(l));
	rolestatus_side(obj, "peer", p, sizeof(p));
	printf("  /%s (changed %s%s)\n      here: %s\n      peer: %s\n", path,
	       strcmp(changed, "both") == 0 ? "on both nodes" :
	       strcmp(changed, "here") == 0 ? "here" : "on the peer",
	       whole ? "; its move was held back: everything in it differs" : "", l, p);
}

void rolestatus_print(const char *json)
{
	char a[1200], b[64];
	uint64_t gen = 0, n = 0;
	bool split = false;

	ctljson_get_u64(json, "generation", &gen);
	if (ctljson_get_str(json, "generation_id", b, sizeof(b)) < 0 || !b[0])
		snprintf(b, sizeof(b), "-");
	printf("generation:  %" PRIu64 " (%s)\n", gen, b);
	if (ctljson_get_str(json, "verdict", a, sizeof(a)) == 0 && a[0]) {
		printf("peer match:  %s", a);
		if (ctljson_get_str(json, "verdict_why", a, sizeof(a)) == 0 && a[0])
			printf(": %s", a);
		printf("\n");
	}
	ctljson_get_bool(json, "split_brain", &split);
	ctljson_get_u64(json, "diverged_paths", &n);
	printf("split brain: %s\n", split ? "YES: only what does not conflict is "
	       "replicated; `twinfs resolve` decides the rest" : "no");
	if (split) {
		printf("diverged:    %" PRIu64 " path(s)%s\n", n, n ? ":" : " (the list comes "
		       "once both nodes have exchanged theirs)");
		rolestatus_each(json, "diverged", rolestatus_print_diverged, NULL);
	}
	n = 0;
	ctljson_get_u64(json, "tail_paths", &n);
	if (n)
		printf("kept aside:  %" PRIu64 " path(s) this node changed as a primary wait for "
		       "the new primary's state\n", n);
	n = 0;
	ctljson_get_u64(json, "conflict_copies", &n);
	if (n) {
		printf("conflict copies: %" PRIu64 " (restore a folder with twinfs resolve "
		       "--restore FOLDER on the primary)\n", n);
		rolestatus_each(json, "conflicts", rolestatus_print_copy, NULL);
	}
}
