/*
 * json — a minimal streaming JSON writer for the benchmark results: nested
 * objects and arrays, escaped strings, finite numbers (non-finite become
 * null). Commas and indentation are tracked for the caller. One writer per
 * FILE, used by one thread.
 */
#ifndef TWINFS_BENCH_JSON_H
#define TWINFS_BENCH_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	int count[JSON_MAX_DEPTH];	/* items written at each level */
	int after_key;			/* the next value follows "key": */
};

void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
/* %.17g: the exact double, so a reader can recompute bytes/seconds/1e6. */
void json_double(struct json *j, double v);
void json_uint(struct json *j, uint64_t v);
void json_int(struct json *j, int64_t v);
void json_bool(struct json *j, int v);
/* Writes s as a JSON string literal (with quotes) to f. */
void json_write_escaped(FILE *f, const char *s);

#endif
