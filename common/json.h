/*
 * json — the one JSON writer: nested objects and arrays, escaped strings,
 * finite numbers (non-finite become null), commas tracked for the caller.
 * Pretty (indented, for result files) or compact (one line, for the
 * control socket's replies) into any sink: a FILE, or a caller's function
 * (netsync/control/ctljson.c writes into an evbuffer). One writer per
 * sink, used by one thread; no allocation.
 */
#ifndef TWINFS_JSON_H
#define TWINFS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

typedef void json_put_fn(void *arg, const char *s, size_t n);

struct json {
	json_put_fn *put;
	void *arg;
	bool compact;
	int depth;
	int count[JSON_MAX_DEPTH];	/* items written at each level */
	int after_key;			/* the next value follows "key": */
};

/* Pretty output to F. */
void json_init(struct json *j, FILE *f);
/* Output through PUT(ARG, ...); COMPACT: no indentation, no spaces. */
void json_init_sink(struct json *j, json_put_fn *put, void *arg, bool compact);
void json_object_begin(struct json *j);
/* Closes the object; at the outermost level a newline follows. */
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);	/* NULL -> null */
/* %.17g: the exact double, so a reader can recompute bytes/seconds/1e6. */
void json_double(struct json *j, double v);
void json_uint(struct json *j, uint64_t v);
void json_int(struct json *j, int64_t v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);
/* A value already formatted as a JSON literal (e.g. a number in a chosen
 * precision). */
void json_raw(struct json *j, const char *literal);
/* Writes s as a JSON string literal (with quotes) to f. */
void json_write_escaped(FILE *f, const char *s);

#endif
