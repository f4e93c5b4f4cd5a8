/*
 * json — streaming JSON output with escaping. Writes only to the FILE it
 * was given; no allocation. Any thread, one writer per FILE.
 */
#include "bench/json.h"

#include <inttypes.h>
#include <math.h>

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->count[0] = 0;
	j->after_key = 0;
}

static void json_indent(struct json *j)
{
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
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
			fputc(',', j->f);
		json_indent(j);
	}
}

static void json_open(struct json *j, char c)
{
	json_pre(j);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->count[j->depth] = 0;
}

static void json_close(struct json *j, char c)
{
	int had = j->count[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		json_indent(j);
	fputc(c, j->f);
	if (j->depth == 0)
		fputc('\n', j->f);
}

void json_object_begin(struct json *j) { json_open(j, '{'); }
void json_object_end(struct json *j) { json_close(j, '}'); }
void json_array_begin(struct json *j) { json_open(j, '['); }
void json_array_end(struct json *j) { json_close(j, ']'); }

void json_write_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			/* Bytes >= 0x80 pass through: paths are UTF-8 (or
			 * at least bytes the user typed). */
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	json_pre(j);
	json_write_escaped(j->f, key);
	fputs(": ", j->f);
	j->after_key = 1;
}

void json_string(struct json *j, const char *s)
{
	json_pre(j);
	json_write_escaped(j->f, s);
}

void json_double(struct json *j, double v)
{
	json_pre(j);
	if (!isfinite(v))
		fputs("null", j->f);
	else if (v == 0)
		fputs("0", j->f);
	else
		fprintf(j->f, "%.17g", v);
}

void json_uint(struct json *j, uint64_t v)
{
	json_pre(j);
	fprintf(j->f, "%" PRIu64, v);
}

void json_int(struct json *j, int64_t v)
{
	json_pre(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_bool(struct json *j, int v)
{
	json_pre(j);
	fputs(v ? "true" : "false", j->f);
}
