/*
 * ctljson — the control socket's JSON: replies written through the one
 * JSON writer (common/json.c) into an evbuffer, and the flat-object reader
 * the CLI parses them with. Allocation-free; any thread.
 */
#include "netsync/control/ctljson.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ctljson_put(void *arg, const char *s, size_t n)
{
	evbuffer_add(arg, s, n);
}

void ctljson_begin(struct ctljson *j, struct evbuffer *b)
{
	j->b = b;
	json_init_sink(&j->w, ctljson_put, b, true);
	json_object_begin(&j->w);
}

void ctljson_str(struct ctljson *j, const char *key, const char *val)
{
	json_key(&j->w, key);
	json_string(&j->w, val);
}

void ctljson_u64(struct ctljson *j, const char *key, uint64_t val)
{
	json_key(&j->w, key);
	json_uint(&j->w, val);
}

void ctljson_i64(struct ctljson *j, const char *key, int64_t val)
{
	json_key(&j->w, key);
	json_int(&j->w, val);
}

void ctljson_double(struct ctljson *j, const char *key, double val)
{
	json_key(&j->w, key);
	json_double(&j->w, val);
}

void ctljson_bool(struct ctljson *j, const char *key, bool val)
{
	json_key(&j->w, key);
	json_bool(&j->w, val);
}

void ctljson_end(struct ctljson *j)
{
	json_object_end(&j->w);
}

/* Skips a string starting at the opening quote; returns the byte after the
 * closing quote or NULL. */
static const char *ctljson_skip_str(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\') {
			if (!p[1])
				return NULL;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

static const char *ctljson_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* Finds the value of top-level KEY; returns a pointer to it or NULL. */
static const char *ctljson_find(const char *text, const char *key)
{
	const char *p = ctljson_ws(text);
	size_t klen = strlen(key);

	if (*p != '{')
		return NULL;
	p = ctljson_ws(p + 1);
	while (*p == '"') {
		const char *k = p + 1, *end = ctljson_skip_str(p);

		if (!end)
			return NULL;
		p = ctljson_ws(end);
		if (*p != ':')
			return NULL;
		p = ctljson_ws(p + 1);
		if ((size_t)(end - 1 - k) == klen && memcmp(k, key, klen) == 0)
			return p;
		/* skip the value: a string, a nested list or object (the status
		 * lists of rolestatus.c), or a scalar token */
		if (*p == '"') {
			p = ctljson_skip_str(p);
			if (!p)
				return NULL;
		} else if (*p == '[' || *p == '{') {
			int depth = 0;

			for (; *p; p++) {
				if (*p == '"') {
					p = ctljson_skip_str(p);
					if (!p)
						return NULL;
					p--;
				} else if (*p == '[' || *p == '{') {
					depth++;
				} else if ((*p == ']' || *p == '}') && --depth == 0) {
					p++;
					break;
				}
			}
		} else {
			while (*p && *p != ',' && *p != '}')
				p++;
		}
		p = ctljson_ws(p);
		if (*p != ',')
			return NULL;
		p = ctljson_ws(p + 1);
	}
	return NULL;
}

int ctljson_get_str(const char *text, const char *key, char *buf, size_t len)
{
	const char *p = ctljson_find(text, key);
	size_t n = 0;

	if (!p)
		return -ENOENT;
	if (len == 0)
		return -EINVAL;
	if (strncmp(p, "null", 4) == 0) {
		buf[0] = '\0';
		return 0;
	}
	if (*p != '"')
		return -EINVAL;
	for (p++; *p && *p != '"'; p++) {
		char c = *p;

		if (c == '\\') {
			p++;
			switch (*p) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (strlen(p) < 5)
					return -EINVAL;
				c = (char)strtol((char[3]){ p[3], p[4], 0 }, NULL, 16);
				p += 4;
				break;
			case '\0': return -EINVAL;
			default: c = *p; break;
			}
		}
		if (n + 1 < len)
			buf[n++] = c;
	}
	if (*p != '"')
		return -EINVAL;
	buf[n] = '\0';
	return 0;
}

int ctljson_get_u64(const char *text, const char *key, uint64_t *val)
{
	const char *p = ctljson_find(text, key);
	char *end;

	if (!p)
		return -ENOENT;
	if (strncmp(p, "null", 4) == 0) {
		*val = 0;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*val = strtoull(p, &end, 10);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

int ctljson_get_double(const char *text, const char *key, double *val)
{
	const char *p = ctljson_find(text, key);
	char *end;

	if (!p)
		return -ENOENT;
	if (strncmp(p, "null", 4) == 0)
		return -ENOENT;
	errno = 0;
	*val = strtod(p, &end);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

int ctljson_get_bool(const char *text, const char *key, bool *val)
{
	const char *p = ctljson_find(text, key);

	if (!p)
		return -ENOENT;
	if (strncmp(p, "true", 4) == 0)
		*val = true;
	else if (strncmp(p, "false", 5) == 0 || strncmp(p, "null", 4) == 0)
		*val = false;
	else
		return -EINVAL;
	return 0;
}
