/*
 * ctljson — JSON for the control socket: the replies are written with the
 * one JSON writer (common/json.h) in compact form into an evbuffer, as one
 * flat object; and a reader that looks up a top-level key of a flat object
 * (strings, numbers, true/false/null), which the CLI runs on replies.
 * ctljson_json() gives the writer itself for a reply that needs nesting.
 * Any thread.
 */
#ifndef TWINFS_CTLJSON_H
#define TWINFS_CTLJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "common/json.h"

struct ctljson {
	struct evbuffer *b;
	struct json w;
};

/* Starts "{" in b. */
void ctljson_begin(struct ctljson *j, struct evbuffer *b);
void ctljson_str(struct ctljson *j, const char *key, const char *val);	/* NULL -> null */
void ctljson_u64(struct ctljson *j, const char *key, uint64_t val);
void ctljson_i64(struct ctljson *j, const char *key, int64_t val);
void ctljson_double(struct ctljson *j, const char *key, double val);
void ctljson_bool(struct ctljson *j, const char *key, bool val);
/* Ends with "}\n". */
void ctljson_end(struct ctljson *j);
/* The writer under J, e.g. for json_key(w, "list") + json_array_begin(w). */
static inline struct json *ctljson_json(struct ctljson *j) { return &j->w; }

/* Looks up KEY in the flat object TEXT. Return 0, -ENOENT (no such key),
 * or -EINVAL (wrong type / malformed). ctljson_get_str copies the unescaped
 * string into buf (truncated to len-1). A null value reads as "" / 0 / false. */
int ctljson_get_str(const char *text, const char *key, char *buf, size_t len);
int ctljson_get_u64(const char *text, const char *key, uint64_t *val);
int ctljson_get_bool(const char *text, const char *key, bool *val);
/* A number (integer or not); null reads as -ENOENT (no value to report). */
int ctljson_get_double(const char *text, const char *key, double *val);

#endif
