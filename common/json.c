/*
 * json — streaming JSON output with escaping (json.h). Writes only through
 * the sink it was given; no allocation. Any thread, one writer per sink.
 */
#include "common/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void json_file_put(void *arg, const char *s, size_t n)
{
	fwrite(s, 1, n, arg);
}

void json_init_sink(struct json *j, json_put_fn *put, void *arg, bool compact)
{
	j->put = put;
	j->arg = arg;
	j->compact = compact;
	j->depth = 0;
	j->count[0] = 0;
	j->after_key = 0;
}

void json_init(struct json *j, FILE *f)
{
	json_init_sink(j, json_file_put, f, false);
}

static void json_puts(struct json *j, const char *s)
{
	j->put(j->arg, s, strlen(s));
}

static void json_indent(struct json *j)
{
	if (j->compact)
		return;
	json_puts(j, "\n");
	for (int i = 0; i < j->depth; i++)
		json_puts(j, "  ");
}

/* Separator and indentation before a value or a key. */
static void json_pre(struct json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0) {
		if (j->count[j->depth]++)
			json_puts(j, ",");
		json_indent(j);
	}
}

static void json_open(struct json *j, const char *c)
{
	json_pre(j);
	json_puts(j, c);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->count[j->depth] = 0;
}

static void json_close(struct json *j, const char *c)
{
	int had = j->count[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		json_indent(j);
	json_puts(j, c);
	if (j->depth == 0)
		json_puts(j, "\n");
}

void json_object_begin(struct json *j) { json_open(j, "{"); }
void json_object_end(struct json *j) { json_close(j, "}"); }
void json_array_begin(struct json *j) { json_open(j, "["); }
void json_array_end(struct json *j) { json_close(j, "]"); }

/* The string literal of S through the sink, escaped: quotes, backslash and
 * control characters (DEL included). Bytes >= 0x80 pass through: paths
 * are UTF-8, or at least the bytes the user typed. */
static void json_quoted(struct json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;
	char esc[8];

	json_puts(j, "\"");
	for (; *p; p++) {
		const char *e = NULL;

		switch (*p) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", *p);
				e = esc;
			}
		}
		if (e) {
			j->put(j->arg, (const char *)run, (size_t)(p - run));
			json_puts(j, e);
			run = p + 1;
		}
	}
	j->put(j->arg, (const char *)run, (size_t)(p - run));
	json_puts(j, "\"");
}

void json_write_escaped(FILE *f, const char *s)
{
	struct json j;

	json_init(&j, f);
	json_quoted(&j, s);
}

void json_key(struct json *j, const char *key)
{
	json_pre(j);
	json_quoted(j, key);
	json_puts(j, j->compact ? ":" : ": ");
	j->after_key = 1;
}

void json_string(struct json *j, const char *s)
{
	json_pre(j);
	if (s)
		json_quoted(j, s);
	else
		json_puts(j, "null");
}

void json_raw(struct json *j, const char *literal)
{
	json_pre(j);
	json_puts(j, literal);
}

void json_double(struct json *j, double v)
{
	char b[40];

	if (!isfinite(v))
		snprintf(b, sizeof(b), "null");
	else if (v == 0)
		snprintf(b, sizeof(b), "0");
	else
		snprintf(b, sizeof(b), "%.17g", v);
	json_raw(j, b);
}

void json_uint(struct json *j, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	json_raw(j, b);
}

void json_int(struct json *j, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRId64, v);
	json_raw(j, b);
}

void json_bool(struct json *j, int v)
{
	json_raw(j, v ? "true" : "false");
}

void json_null(struct json *j)
{
	json_raw(j, "null");
}
